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
import socket
import threading
from collections.abc import Callable
from typing import Any

from .dissect import CaptureDissector
from .pcapfile import LINKTYPE_ETHERNET, decode_tcp
from .tcpstream import TcpReassembler

log = logging.getLogger(__name__)
EventSink = Callable[[dict[str, Any]], None]

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
    """Captures `tcp port PORT` on an interface in a worker thread and reports ZMTP events to `sink`."""

    def __init__(self, interface: str, port: int, sink: EventSink, *, with_fields: bool = True) -> None:
        self.interface = check_interface(interface)
        self.port = check_port(port)
        self.sink = sink
        self.with_fields = with_fields
        self.error: str | None = None
        self.packets = 0
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

    def stop(self, timeout: float = 10.0) -> None:
        """Stops capturing, closes tshark, and flushes the events of open connections."""
        self._stopping = True
        loop, capture = self._loop, self._capture
        if loop is not None and capture is not None:
            # Ending tshark lets pyshark's reader see end-of-file and return cleanly; cancelling
            # its task instead leaves tshark's pipe transport behind.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_kill_tshark, capture)
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        import pyshark

        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        self._loop = loop
        reassembler = TcpReassembler()
        dissector = CaptureDissector(with_fields=self.with_fields)
        capture = None

        def on_packet(pkt: Any) -> None:
            self.packets += 1
            raw = pkt.get_raw_packet()
            first = pkt.frame_info.protocols.split(":", 1)[0]
            tcp = decode_tcp(int(pkt.number), float(pkt.sniff_timestamp), linktype_of(first, raw), raw)
            if tcp is None:
                return
            for stream_event in reassembler.feed(tcp):
                for event in dissector.feed(stream_event):
                    self.sink(event)

        try:
            capture = pyshark.LiveCapture(interface=self.interface, bpf_filter=f"tcp port {self.port}",
                                          use_json=True, include_raw=True, eventloop=loop)
            self._capture = capture
            self._task = loop.create_task(capture.packets_from_tshark(on_packet))
            self._started.set()
            if not self._stopping:
                loop.run_until_complete(self._task)
        except asyncio.CancelledError:
            pass
        except Exception as exc:  # tshark missing, no permission, interface gone: report, never crash
            self.error = f"live capture on {self.interface} failed: {exc}"
            log.warning("%s", self.error)
        finally:
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


def _kill_tshark(capture: Any) -> None:
    """Ends the tshark processes of a pyshark capture (runs in the capture's loop)."""
    for process in list(getattr(capture, "_running_processes", ())):
        with contextlib.suppress(ProcessLookupError):
            process.terminate()
