"""Live capture through pyshark: packets from an interface, filtered by TCP port, to ZMTP events.

pyshark drives tshark with an asyncio loop of its own, so the capture runs in a worker
thread with its own loop, and is always closed (tshark killed) when it stops. pyshark is
only the packet source here; the link, IP and TCP layers are read by our own decoder,
the same one as for capture files.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import socket
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from .children import die_with_this_process
from .dissect import CaptureDissector
from .pcapfile import LINKTYPE_ETHERNET, decode_tcp
from .tcpstream import StreamOpened, TcpReassembler

log = logging.getLogger(__name__)
EventSink = Callable[[dict[str, Any]], None]
ConnectionSink = Callable[[str, tuple[str, int], tuple[str, int]], None]

LINKTYPE_NULL = 0
LINKTYPE_RAW = 101
LINKTYPE_SLL = 113
LINKTYPE_SLL2 = 276


def list_interfaces() -> list[str]:
    """The names of the network interfaces this machine has (plus `any`)."""
    return ["any", *sorted(name for _, name in socket.if_nameindex())]


def check_interface(name: str) -> str:
    """Returns `name` when it is an existing interface; raises ValueError otherwise."""
    if name not in list_interfaces():
        raise ValueError(f"no such interface: {name!r}")
    return name


def check_port(port: int) -> int:
    """Returns `port` when it is a valid TCP port; raises ValueError otherwise."""
    if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
        raise ValueError(f"not a TCP port: {port!r}")
    return port


def linktype_of(first_layer: str, raw: bytes) -> int:
    """The pcap link type of a frame, from tshark's name for its first layer."""
    if first_layer == "eth":
        return LINKTYPE_ETHERNET
    if first_layer == "sll":
        # SLL2 starts with the protocol type; SLL has it at octets 14-15.
        return LINKTYPE_SLL2 if raw[:2] in (b"\x08\x00", b"\x86\xdd") and len(raw) >= 20 else LINKTYPE_SLL
    if first_layer == "null":
        return LINKTYPE_NULL
    return LINKTYPE_RAW


class LiveCapture:
    """Captures `tcp port PORT` on an interface in a worker thread and reports ZMTP events to `sink`.

    `sink` (and `on_connection`, told each new TCP connection's client and server) are called
    from the worker thread. `ready` is set once dumpcap reports that it is capturing; `error`
    holds what went wrong when the capture ended by itself.
    """

    def __init__(self, interface: str, port: int, sink: EventSink, *, with_fields: bool = True,
                 on_connection: ConnectionSink | None = None, max_held: int | None = None) -> None:
        self.interface = check_interface(interface)
        self.port = check_port(port)
        self.sink = sink
        self.on_connection = on_connection
        self.with_fields = with_fields
        self.max_held = max_held  # each connection's dissector budget (engine.StreamDecoder)
        self.error: str | None = None
        self.packets = 0
        self.ready = threading.Event()
        self.stderr: deque[str] = deque(maxlen=50)  # the last lines dumpcap and tshark wrote
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task | None = None
        self._capture: Any = None
        self._started = threading.Event()
        self._stopping = False

    def start(self) -> None:
        """Starts capturing in a worker thread."""
        self._thread = threading.Thread(target=self._run, name=f"live-capture-{self.interface}", daemon=True)
        self._thread.start()
        self._started.wait(10)

    @property
    def running(self) -> bool:
        """Whether the worker thread is still alive."""
        return self._thread is not None and self._thread.is_alive()

    def stop(self, timeout: float = 10.0) -> None:
        """Stops capturing, closes tshark, and flushes the events of open connections."""
        self._stopping = True
        deadline = time.monotonic() + timeout
        while self._thread is not None and self._thread.is_alive():
            loop, capture = self._loop, self._capture
            if loop is not None and capture is not None:
                # Ending tshark lets pyshark's reader see end-of-file and return cleanly; cancelling
                # its task instead leaves tshark's pipe transport behind. Repeated until the thread
                # ends: dumpcap and tshark start one after the other.
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(_kill_tshark, capture)
            left = deadline - time.monotonic()
            if left <= 0:
                log.warning("live capture on %s did not stop within %ss", self.interface, timeout)
                break
            self._thread.join(min(0.2, left))

    def _run(self) -> None:
        import pyshark

        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        self._loop = loop
        reassembler = TcpReassembler()
        dissector = CaptureDissector(with_fields=self.with_fields, max_held=self.max_held)
        capture = None

        def on_packet(pkt: Any) -> None:
            self.packets += 1
            raw = pkt.get_raw_packet()
            first = pkt.frame_info.protocols.split(":", 1)[0]
            tcp = decode_tcp(int(pkt.number), float(pkt.sniff_timestamp), linktype_of(first, raw), raw)
            if tcp is None:
                return
            for stream_event in reassembler.feed(tcp):
                if self.on_connection is not None and isinstance(stream_event, StreamOpened):
                    self.on_connection(stream_event.conn, stream_event.client, stream_event.server)
                for event in dissector.feed(stream_event):
                    self.sink(event)

        owner = self

        class _Capture(pyshark.LiveCapture):
            async def _get_tshark_process(self, packet_count: Any = None, stdin: Any = None) -> Any:
                # pyshark's own version keeps both ends of the dumpcap -> tshark pipe open in this
                # process: two descriptors leak per capture, and when dumpcap dies (no permission,
                # interface gone) tshark never sees end-of-file, so the capture hangs instead of
                # ending with dumpcap's complaint. Same processes, with the pipe closed here.
                from pyshark.capture.capture import Capture
                from pyshark.tshark.tshark import get_process_path

                read, write = os.pipe()
                try:
                    params = [get_process_path(process_name="dumpcap", tshark_path=self.tshark_path),
                              *self._get_dumpcap_parameters()]
                    # dumpcap dies with this thread however the process ends (tshark, reading it,
                    # then sees end-of-file and ends too): a killed `zmtplab live` or server leaves
                    # nothing capturing behind.
                    dumpcap = await asyncio.create_subprocess_exec(*params, stdout=write, stderr=subprocess.PIPE,
                                                                   preexec_fn=die_with_this_process())
                    self._create_stderr_handling_task(dumpcap.stderr)
                    self._created_new_process(params, dumpcap, process_name="Dumpcap")
                except BaseException:
                    os.close(read)
                    raise
                finally:
                    os.close(write)
                try:
                    return await Capture._get_tshark_process(self, packet_count=packet_count, stdin=read)
                finally:
                    os.close(read)

            async def close_async(self) -> None:
                # pyshark's own raises on the first process that exited with an error and leaves
                # the others registered (its __del__ then tries again on a closed loop). A failed
                # capture is reported from what dumpcap and tshark said (`LiveCapture.error`).
                for process in list(self._running_processes):
                    with contextlib.suppress(Exception):
                        await self._cleanup_subprocess(process)
                self._running_processes.clear()
                await asyncio.gather(*self._stderr_handling_tasks, return_exceptions=True)

            async def _handle_process_stderr_forever(self, stderr: Any) -> None:
                # pyshark's own handler keeps only the last line; we also want to know when dumpcap
                # really captures. It says "Capturing on 'Loopback: lo'" before it opens the device
                # (and fails there without permission), then "File: -" once packets flow.
                while line := await stderr.readline():
                    text = line.decode(errors="replace").strip()
                    self._last_error_line = text
                    if text:
                        owner.stderr.append(text)
                    if text.startswith("File:"):
                        owner.ready.set()

        try:
            capture = _Capture(interface=self.interface, bpf_filter=f"tcp port {self.port}",
                               use_json=True, include_raw=True, eventloop=loop)
            self._capture = capture
            self._task = loop.create_task(capture.packets_from_tshark(on_packet))
            self._started.set()
            if not self._stopping:
                loop.run_until_complete(self._task)
        except asyncio.CancelledError:
            pass
        except Exception as exc:  # tshark missing, no permission, interface gone: report, never crash
            self.error = f"live capture on {self.interface} failed: {self._reason(exc)}"
            log.warning("%s", self.error)
        finally:
            if self.error is None and not self._stopping:
                self.error = f"live capture on {self.interface} ended: {self._reason(None)}"
            self._started.set()
            if capture is not None:
                with contextlib.suppress(Exception):
                    capture.close()
                capture = self._capture = None
                self._task = None
            for stream_event in reassembler.finish():
                for event in dissector.feed(stream_event):
                    self.sink(event)
            with contextlib.suppress(Exception):
                loop.run_until_complete(loop.shutdown_asyncgens())
            # tshark's subprocess transport must be collected while its loop is still open.
            gc.collect()
            loop.close()

    def _reason(self, exc: BaseException | None) -> str:
        """Why the capture failed: dumpcap's own complaint when it made one, else the exception."""
        lines = list(self.stderr)
        said = [line for line in lines if line.startswith(("dumpcap:", "("))]
        if not said:
            said = [line for line in lines if line.startswith("tshark:") and line[len("tshark:"):].strip()]
        if said:
            return " ".join(said)
        return str(exc) if exc is not None else "tshark stopped"


def _kill_tshark(capture: Any) -> None:
    """Ends the tshark processes of a pyshark capture (runs in the capture's loop)."""
    for process in list(getattr(capture, "_running_processes", ())):
        with contextlib.suppress(ProcessLookupError):
            process.terminate()
