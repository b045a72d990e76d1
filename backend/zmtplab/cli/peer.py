"""`zmtplab peer`: a real ZeroMQ peer through the engine, interoperable with libzmq, that shows every byte.

It prints the protocol elements of both directions of every connection (a `ConnectionDissector`, or a
`ZwsDissector` for a ws:// endpoint, reads exactly the bytes that crossed the socket), peer events
(connected, handshake, PING, closed, ...) and each message the application received. In JSON lines
(`--jsonl`) every line is the event contract of docs/architecture.md; peer events have `"kind": "peer"`. The `message`
events of the incoming direction are the received messages (`frames` as hex, as ZMTP delivered
them); with CURVE, where the wire only shows encrypted MESSAGE boxes, a `message` event with
`"decrypted": true` carries the opened frames. A `peer` event with `"what": "recv"` shows each
message as the application's recv() returned it (with a ROUTER's identity frame, without a
REQ's delimiter).

It exits 0 once it has received `--recv N` messages and every `--send` is on the wire (with
nothing to do, it runs until `--timeout`); 1 when `--timeout` comes first (it bounds the whole
run) or when `--linger` runs out with messages still queued (a connect() queues them until its
connection is up, as libzmq does; they are dropped, and said so); 2 on bad arguments. It never
waits for the other side to hang up. REQ sends before it receives and alternates; REP and
ROUTER receive before they send; PUB/XPUB wait for a subscriber whose subscriptions match each
message (libzmq would drop it: the slow joiner).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import time
from collections import deque
from pathlib import Path
from typing import Any

from ..engine import ConnectionDissector, ZwsDissector
from ..engine.constants import SOCKET_TYPES
from ..engine.events import Command, Frame, Message, WireEvent, cut_bodies
from .output import body_text, write_jsonl, write_line

SENDERS_FIRST = {"REQ"}
RECEIVERS_FIRST = {"REP", "ROUTER"}


def register(sub: argparse._SubParsersAction) -> None:
    """Adds the `peer` subcommand."""
    p = sub.add_parser("peer", help="run a real ZeroMQ peer (TCP or WebSocket) and show its protocol events",
                       description="Run a ZeroMQ socket over TCP (tcp://, ZMTP) or WebSocket (ws://, 45/ZWS) through "
                                   "the ZMTP Lab engine; it talks to libzmq and prints every protocol element of both "
                                   "directions.")
    p.add_argument("type", metavar="TYPE", type=str.upper, choices=SOCKET_TYPES,
                   help="socket type: " + ", ".join(SOCKET_TYPES))
    p.add_argument("endpoint", metavar="ENDPOINT",
                   help="tcp://HOST:PORT or ws://HOST:PORT/PATH (bind: tcp://*:PORT, port 0 or * for any)")
    side = p.add_mutually_exclusive_group(required=True)
    side.add_argument("--bind", action="store_true", help="listen on ENDPOINT")
    side.add_argument("--connect", action="store_true", help="connect to ENDPOINT (reconnecting as libzmq does)")
    p.add_argument("--send", action="append", default=[], metavar="F1,F2,...",
                   help="send one message; frames comma-separated, an empty field is an empty frame (repeatable)")
    p.add_argument("--hex", action="store_true", help="--send frames are hex, not text")
    p.add_argument("--recv", type=int, default=0, metavar="N", help="receive N messages")
    p.add_argument("--identity", default="", metavar="ID", help="the socket's identity (routing id)")
    p.add_argument("--subscribe", action="append", default=[], metavar="TOPIC",
                   help="SUB/XSUB: subscribe to TOPIC (repeatable; '' for everything)")
    p.add_argument("--unsubscribe", action="append", default=[], metavar="TOPIC",
                   help="SUB/XSUB: cancel TOPIC once everything else is done")
    p.add_argument("--mechanism", default="null", type=str.lower, choices=["null", "plain", "curve"])
    p.add_argument("--plain-username", metavar="USER")
    p.add_argument("--plain-password", metavar="PASS")
    p.add_argument("--plain-server", action="store_true",
                   help="be the PLAIN server (with --plain-username/--plain-password: accept only those)")
    p.add_argument("--curve-server", action="store_true", help="be the CURVE server (needs its keys)")
    p.add_argument("--curve-serverkey", metavar="Z85", help="CURVE client: the server's public key")
    p.add_argument("--curve-publickey", metavar="Z85", help="CURVE: our public key")
    p.add_argument("--curve-secretkey", metavar="Z85", help="CURVE: our secret key")
    p.add_argument("--zmtp-version", default="3.1", choices=["3.1", "3.0", "2.0", "1.0"],
                   help="the ZMTP version to announce (default 3.1)")
    p.add_argument("--zws-protocol", action="append", default=None, metavar="P",
                   help="ws:// only: a subprotocol a client offers or a server accepts, in order (repeatable; "
                        "default libzmq's: ZWS2.0/NULL then ZWS2.0 for NULL, ZWS2.0/PLAIN for PLAIN)")
    p.add_argument("--heartbeat-ivl", type=float, default=0, metavar="MS", help="send PING every MS milliseconds")
    p.add_argument("--heartbeat-ttl", type=float, default=0, metavar="MS", help="TTL announced in our PINGs")
    p.add_argument("--heartbeat-timeout", type=float, default=None, metavar="MS",
                   help="close when nothing arrives within MS of a PING (default: the interval)")
    p.add_argument("--handshake-ivl", type=float, default=30000, metavar="MS", help="handshake timeout (30000)")
    p.add_argument("--reconnect-ivl", type=float, default=100, metavar="MS", help="reconnect interval (100)")
    p.add_argument("--reconnect-ivl-max", type=float, default=0, metavar="MS", help="backoff ceiling (0: none)")
    p.add_argument("--sndhwm", type=int, default=1000)
    p.add_argument("--rcvhwm", type=int, default=1000)
    p.add_argument("--max-frame-size", type=int, default=64 * 1024 * 1024, metavar="OCTETS")
    p.add_argument("--jsonl", action="store_true", help="print JSON lines (the event contract)")
    p.add_argument("--no-fields", action="store_true", help="leave out the fields of each event")
    p.add_argument("--max-body", type=int, default=None, metavar="N", help="cut bodies to N octets")
    p.add_argument("--timeout", type=float, default=None, metavar="S",
                   help="give up after S seconds (exit 1 when the work is not done)")
    p.add_argument("--linger", type=float, default=2.0, metavar="S",
                   help="once the work is done, wait up to S seconds for queued messages to go out (as "
                        "ZMQ_LINGER; -1: as long as it takes, within --timeout); what is left is dropped, exit 1 "
                        "(default 2)")
    p.add_argument("--keylog", type=Path, metavar="FILE",
                   help="CURVE: append each connection's session key to FILE (one CURVE_SESSION_KEY line a "
                        "connection, as TLS's SSLKEYLOGFILE), so `zmtplab dissect --curve-keylog FILE` reads a "
                        "capture of it; anyone who holds FILE reads those connections")
    p.add_argument("-v", "--verbose", action="store_true", help="log connection closures and reasons to stderr")
    p.set_defaults(func=run)


def _frames(text: str, as_hex: bool) -> list[bytes]:
    parts = text.split(",")
    return [bytes.fromhex(p) if as_hex else p.encode("utf-8") for p in parts]


class Printer:
    """Turns wire bytes and peer events into printed events (see the module docstring)."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.out = sys.stdout
        self.curve = args.mechanism == "curve"
        self.dissectors: dict[str, ConnectionDissector | ZwsDissector] = {}
        self.zws = args.endpoint.startswith("ws://")
        self.incoming: dict[str, str] = {}
        self.boxes: dict[str, deque[tuple[int, int]]] = {}  # CURVE: spans of incoming MESSAGE elements
        self.ready: set[str] = set()
        self.t0 = time.monotonic()

    def _t(self) -> float:
        return round(time.monotonic() - self.t0, 6)

    def emit(self, event: dict[str, Any]) -> None:
        args = self.args
        if args.jsonl:
            write_jsonl(self.out, event)
        elif event.get("kind") == "peer":
            self.out.write(_peer_line(event) + "\n")
        else:
            write_line(self.out, event)
            if not args.no_fields:
                for f in event.get("fields", []):
                    self.out.write(f"{'':>14}{f['offset']:>6} +{f['length']:<4} {f['name']}: {f['value']}\n")
        self.out.flush()

    def on_wire(self, conn_id: str, direction: str, data: bytes) -> None:
        dissector = self.dissectors.get(conn_id)
        if dissector is None:
            dissector = self.dissectors[conn_id] = ZwsDissector() if self.zws else ConnectionDissector()
            self.boxes[conn_id] = deque()
        for d, event in dissector.receive_data(direction, data):
            self._wire_event(conn_id, d, event)

    def _wire_event(self, conn_id: str, direction: str, event: WireEvent) -> None:
        args = self.args
        as_dict = event.to_dict(with_fields=not args.no_fields, max_body=args.max_body)
        if self.curve and direction == self.incoming.get(conn_id):
            # After the handshake commands, every data frame of a CURVE stream is a MESSAGE box.
            if isinstance(event, Message):
                return  # an encrypted MESSAGE box seen as a data frame: the decrypted message follows
            if isinstance(event, Frame) or (isinstance(event, Command) and event.name == "MESSAGE"):
                self.boxes[conn_id].append((event.offset, event.length))
        self.emit({"conn": conn_id, "dir": direction, **as_dict, "t": self._t()})

    def close_conn(self, conn_id: str) -> None:
        dissector = self.dissectors.pop(conn_id, None)
        if dissector is not None:
            for d, event in dissector.close():
                self._wire_event(conn_id, d, event)

    def on_event(self, event: dict[str, Any]) -> None:
        what = event.get("what")
        conn_id = event.get("conn")
        event.pop("peer", None)
        if what in ("connected", "accepted") and conn_id is not None:
            self.incoming[conn_id] = "s2c" if what == "connected" else "c2s"
        elif what == "handshake" and conn_id is not None:
            self.ready.add(conn_id)
        elif what == "received":
            if self.curve and conn_id is not None:
                self._curve_message(conn_id, event)
            return
        elif what in ("ping", "pong", "subscription") and self.curve and conn_id is not None:
            boxes = self.boxes.get(conn_id)
            if boxes:
                boxes.popleft()
        self.emit(event)
        if what == "closed" and conn_id is not None:
            self.close_conn(conn_id)

    def _curve_message(self, conn_id: str, event: dict[str, Any]) -> None:
        frames = event["frames"]
        boxes = self.boxes.get(conn_id, deque())
        spans = [boxes.popleft() for _ in range(min(len(frames), len(boxes)))]
        offset = spans[0][0] if spans else 0
        length = (spans[-1][0] + spans[-1][1] - offset) if spans else 0
        out = {"conn": conn_id, "dir": self.incoming.get(conn_id, "s2c"), "offset": offset, "length": length,
               "kind": "message", "frames": frames, "decrypted": True}
        if self.args.max_body is not None:
            cut_bodies(out, self.args.max_body)
        if not self.args.no_fields:
            out["fields"] = []
        out["t"] = self._t()
        self.emit(out)

    def app_message(self, frames: list[bytes]) -> None:
        self.emit({"kind": "peer", "what": "recv", "frames": [f.hex() for f in frames], "t": self._t()})


def _peer_line(event: dict[str, Any]) -> str:
    conn = event.get("conn")
    where = f"{conn:>3} " if conn is not None else "    "
    what = event.get("what", "")
    rest = {k: v for k, v in event.items() if k not in ("kind", "what", "conn", "t", "peer")}
    if what == "recv":
        return f"{where}PEER recv [{len(rest['frames'])} frame(s)] " + ", ".join(body_text(f, 40)
                                                                            for f in rest["frames"])
    detail = " ".join(f"{k}={v}" for k, v in rest.items())
    return f"{where}PEER {what} {detail}".rstrip()


async def _main(args: argparse.Namespace) -> int:
    from ..peers.tcp import TcpPeer

    printer = Printer(args)
    options: dict[str, Any] = {
        "identity": args.identity.encode("utf-8"),
        "version": args.zmtp_version,
        "mechanism": args.mechanism.upper(),
        "heartbeat_ivl": args.heartbeat_ivl / 1000,
        "heartbeat_ttl": args.heartbeat_ttl / 1000,
        "heartbeat_timeout": None if args.heartbeat_timeout is None else args.heartbeat_timeout / 1000,
        "handshake_ivl": args.handshake_ivl / 1000,
        "reconnect_ivl": args.reconnect_ivl / 1000,
        "reconnect_ivl_max": args.reconnect_ivl_max / 1000,
        "sndhwm": args.sndhwm,
        "rcvhwm": args.rcvhwm,
        "max_frame_size": args.max_frame_size,
        "zws_protocols": args.zws_protocol,
    }
    if args.mechanism == "plain":
        options.update(username=args.plain_username, password=args.plain_password, plain_server=args.plain_server)
    elif args.mechanism == "curve":
        options.update(curve_server=args.curve_server, curve_serverkey=args.curve_serverkey,
                       curve_publickey=args.curve_publickey, curve_secretkey=args.curve_secretkey)
    try:
        peer = TcpPeer(args.type, on_event=printer.on_event, on_wire=printer.on_wire, report_messages=True,
                       **options)
    except ValueError as exc:
        print(f"zmtplab peer: {exc}", file=sys.stderr)
        return 2
    messages = [_frames(text, args.hex) for text in args.send]
    state = {"sent": 0, "received": 0}
    loop = asyncio.get_running_loop()
    try:
        if args.bind:
            await peer.bind(args.endpoint)
        else:
            peer.connect(args.endpoint)
    except (OSError, ValueError) as exc:
        print(f"zmtplab peer: cannot {'bind' if args.bind else 'connect'} {args.endpoint}: {exc}", file=sys.stderr)
        await peer.close(linger=0)
        return 2
    for topic in args.subscribe:
        peer.subscribe(topic.encode("utf-8"))

    async def receive_one() -> None:
        frames = await peer.recv()
        state["received"] += 1
        printer.app_message(frames)

    async def send_one(frames: list[bytes]) -> None:
        if args.type in ("PUB", "XPUB"):
            socket = peer.core.socket
            await peer.wait_for(lambda: any(p.up and socket.matches(p, frames[0]) for p in socket.pipes.values()))
        await peer.send(frames)
        state["sent"] += 1

    async def work() -> None:
        if args.type in SENDERS_FIRST:
            for i, frames in enumerate(messages):
                await send_one(frames)
                if i < args.recv:
                    await receive_one()
            while state["received"] < args.recv:
                await receive_one()
        elif args.type in RECEIVERS_FIRST:
            for i in range(max(args.recv, len(messages))):
                if i < args.recv:
                    await receive_one()
                if i < len(messages):
                    await send_one(messages[i])
        else:
            async def sends() -> None:
                for frames in messages:
                    await send_one(frames)

            async def receives() -> None:
                while state["received"] < args.recv:
                    await receive_one()

            await asyncio.gather(sends(), receives())
        for topic in args.unsubscribe:
            peer.unsubscribe(topic.encode("utf-8"))

    deadline = None if args.timeout is None else loop.time() + args.timeout

    def timeout_left() -> float | None:
        return None if deadline is None else max(deadline - loop.time(), 0.0)

    def sent_out() -> int:
        return max(state["sent"] - peer.unsent()[0], 0)  # accepted by the socket and not still queued

    nothing_to_do = not messages and not args.recv
    status = 0
    try:
        if nothing_to_do:
            if args.timeout is not None:
                await asyncio.sleep(args.timeout)
            else:
                await loop.create_future()  # until interrupted
        else:
            await asyncio.wait_for(work(), args.timeout)
            # Sends are done when the socket took them; linger (within --timeout) puts them on the wire.
            linger = None if args.linger < 0 else args.linger
            left = timeout_left()
            timeout_first = left is not None and (linger is None or left <= linger)
            if not await peer.drain(left if timeout_first else linger):
                if timeout_first:
                    raise TimeoutError
                queued, octets = peer.unsent()
                dropped = f"{queued} message(s)" + (f" and {octets} buffered octets" if octets else "")
                print(f"zmtplab peer: {dropped if queued else f'{octets} octets'} dropped: not on the wire after "
                      f"--linger {args.linger:g} s", file=sys.stderr)
                status = 1
    except TimeoutError:
        print(f"zmtplab peer: timed out after {args.timeout:g} s: sent {sent_out()}/{len(messages)}, "
              f"received {state['received']}/{args.recv}", file=sys.stderr)
        status = 1
    finally:
        await peer.close(linger=0)  # what had to go out went out above (or was given up)
        for conn_id in list(printer.dissectors):
            printer.close_conn(conn_id)
        if args.keylog is not None and peer.core.session_keys:
            from ..engine.curve import keylog_text

            try:
                with args.keylog.open("a", encoding="ascii") as log:
                    log.write(keylog_text(peer.core.session_keys))
            except OSError as exc:
                print(f"zmtplab peer: --keylog: {exc}", file=sys.stderr)
                status = status or 2
    return status


def run(args: argparse.Namespace) -> int:
    """Runs the peer until its work is done (or the timeout)."""
    if args.mechanism == "plain" and not args.plain_server and (args.plain_username is None
                                                                or args.plain_password is None):
        print("zmtplab peer: a PLAIN client needs --plain-username and --plain-password", file=sys.stderr)
        return 2
    if args.mechanism == "curve":
        if args.curve_server and not (args.curve_publickey and args.curve_secretkey):
            print("zmtplab peer: --curve-server needs --curve-publickey and --curve-secretkey", file=sys.stderr)
            return 2
        if not args.curve_server and not args.curve_serverkey:
            print("zmtplab peer: a CURVE client needs --curve-serverkey", file=sys.stderr)
            return 2
    if args.recv < 0:
        print("zmtplab peer: --recv must not be negative", file=sys.stderr)
        return 2
    if args.linger < 0 and args.linger != -1:
        print("zmtplab peer: --linger is S >= 0, or -1 to wait as long as it takes", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO if args.verbose else logging.ERROR, stream=sys.stderr,
                        format="zmtplab peer: %(message)s")
    try:
        return asyncio.run(_main(args))
    except KeyboardInterrupt:
        return 130


__all__ = ["register", "run"]
