"""The pyzmq script that makes one connection's conversation again with libzmq.

From a section's events: each side's socket type (READY's Socket-Type, a 2.0 greeting's), identity,
mechanism (PLAIN's username and password from HELLO; CURVE gets fresh keys), subscriptions, and the
messages each side's application sent, in order (the wire's envelope frames taken back off: REQ's
delimiter, REP's envelope, the identity a ROUTER routes by). The script binds the server side,
connects the client side, then sends each message from its side and receives it on the other, so
the order on the wire is the original's. Wire bytes a script cannot choose (CURVE keys and boxes,
libzmq's generated identities, heartbeats, timing) differ; the elements' kinds, commands and frame
sizes are the same.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..engine.constants import VALID_PEERS
from .document import Section

SIDES = {"c2s": "client", "s2c": "server"}


@dataclass
class Side:
    """What the events say of one side's socket."""

    socket_type: str | None = None
    identity: bytes = b""
    mechanism: str = "NULL"
    as_server: bool = False
    username: bytes | None = None
    password: bytes | None = None
    subscriptions: list[bytes] = field(default_factory=list)
    version: str = ""


@dataclass
class Conversation:
    """Both sides and the application messages, in wire order: (sending side, frames)."""

    client: Side
    server: Side
    messages: list[tuple[str, list[bytes]]]
    notes: list[str]
    # Subscriptions changed after the first message: (messages sent before it, side, topic, subscribe).
    later: list[tuple[int, str, bytes, bool]] = field(default_factory=list)


def conversation(section: Section) -> Conversation:
    """The sides and messages of one connection's events."""
    sides = {"client": Side(), "server": Side()}
    wire: list[tuple[str, list[bytes]]] = []
    later: list[tuple[int, str, bytes, bool]] = []
    notes: list[str] = []
    encrypted = False
    hello_from = None
    for e in section.events:
        side = sides.get(SIDES.get(e.get("dir", ""), ""))
        if side is None:
            continue
        kind = e.get("kind")
        if kind == "greeting":
            side.version = str(e.get("version", ""))
            side.mechanism = str(e.get("mechanism") or "NULL")
            side.as_server = bool(e.get("as_server"))
            if e.get("socket_type"):
                side.socket_type = str(e["socket_type"]).upper()
            if e.get("identity"):
                side.identity = bytes.fromhex(e["identity"])
        elif kind == "command":
            name = str(e.get("name", "")).upper()
            props = e.get("properties") or {}
            if name in ("READY", "INITIATE") and not e.get("encrypted"):
                for key, value in props.items():
                    if key.lower() == "socket-type":
                        side.socket_type = str(value).upper()
                    elif key.lower() == "identity" and value:
                        side.identity = _utf8(value)
            elif name == "HELLO":
                hello_from = side
                if "username" in e:
                    side.username = _utf8(e.get("username", ""))
                    side.password = _utf8(e.get("password", ""))
            elif name in ("SUBSCRIBE", "CANCEL") and "topic" in e:
                topic = bytes.fromhex(e["topic"])
                if wire:
                    later.append((len(wire), SIDES[e["dir"]], topic, name == "SUBSCRIBE"))
                elif name == "SUBSCRIBE":
                    side.subscriptions.append(topic)
            elif name == "MESSAGE":
                encrypted = True
        elif kind == "message" and (not encrypted or e.get("decrypted")):
            frames = [bytes.fromhex(f) for f in e.get("frames", [])]
            wire.append((SIDES[e["dir"]], frames))
    client, server = sides["client"], sides["server"]
    if hello_from is not None:
        # The mechanism's client sends HELLO; as-server itself is 0 on both sides in libzmq's PLAIN greetings.
        hello_from.as_server = False
        (server if hello_from is client else client).as_server = True
    _settle_types(client, server, notes)
    messages: list[tuple[str, list[bytes]]] = []
    for who, frames in wire:
        sender = sides[who]
        if sender.socket_type == "SUB" and len(frames) == 1 and frames[0][:1] in (b"\x01", b"\x00"):
            # A 3.0 peer's subscription, sent as a message.
            topic, subscribe = frames[0][1:], frames[0][:1] == b"\x01"
            if messages or not subscribe:
                later.append((len(messages), who, topic, subscribe))
            else:
                sender.subscriptions.append(topic)
            continue
        messages.append((who, _application_frames(sender.socket_type or "PAIR", frames)))
    if encrypted and not any(e.get("decrypted") for e in section.events):
        notes.append("The messages were encrypted (CURVE) and no key log opened them: the script sends none.")
    if any(e.get("kind") == "command" and str(e.get("name", "")).upper() == "PING" for e in section.events):
        notes.append("The original had heartbeats (PING/PONG); the script leaves them out.")
    for s in (client, server):
        if s.version in ("1.0", "2.0"):
            notes.append(f"The original spoke ZMTP {s.version}; libzmq speaks 3.x to a peer that does, as here.")
            break
    return Conversation(client, server, messages, notes, sorted(later, key=lambda item: item[0]))


def _utf8(value: Any) -> bytes:
    """A property or credential the event gives as text (the contract writes non-UTF-8 values as hex: such an
    identity comes back as its hex digits, which libzmq takes as well)."""
    return str(value).encode("utf-8")


def _settle_types(client: Side, server: Side, notes: list[str]) -> None:
    """Fills a side whose socket type the events do not show (ZMTP 1.0) with a valid partner's."""
    if client.socket_type and server.socket_type:
        return
    known = client.socket_type or server.socket_type
    if known is None:
        client.socket_type = server.socket_type = "PAIR"
        notes.append("The events do not say the socket types (ZMTP 1.0): the script uses PAIR on both sides.")
        return
    partner = sorted(VALID_PEERS.get(known, frozenset({"PAIR"})))[0]
    for s in (client, server):
        if s.socket_type is None:
            s.socket_type = partner
    notes.append(f"One side's socket type is not on the wire: the script uses {partner}.")


def _application_frames(socket_type: str, frames: list[bytes]) -> list[bytes]:
    """What the sending application passed to send, given what went on the wire."""
    if socket_type == "REQ" and frames and frames[0] == b"":
        return frames[1:]
    if socket_type == "REP" and b"" in frames:
        return frames[frames.index(b"") + 1:]
    return list(frames)


def reproduce_script(section: Section, *, title: str = "") -> str:
    """The script's text (Python 3, pyzmq)."""
    conv = conversation(section)
    c, s = conv.client, conv.server
    lines = [
        "#!/usr/bin/env python3",
        f'"""Reproduces {_safe(title or "a ZMTP conversation")}, connection {_safe(section.conn)}, '
        "with libzmq (pyzmq).",
        "",
        "Made by ZMTP Lab (zmtplab illustrate). Capture its traffic (tshark -i lo, or `zmtplab tap`) to see the bytes.",
        *(f"Note: {_safe(n)}" for n in conv.notes),
        '"""',
        "",
        "import argparse",
        "import time",
        "",
        "import zmq",
        "",
        "parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])",
        'parser.add_argument("--bind", default="tcp://127.0.0.1:5555", help="where the server side binds")',
        'parser.add_argument("--connect", default=None, help="where the client side connects (default: --bind)")',
        'parser.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for each message")',
        "args = parser.parse_args()",
        "",
        "ctx = zmq.Context()",
    ]
    mechanism_server = next((side for side in (s, c) if side.as_server and side.mechanism in ("PLAIN", "CURVE")), None)
    if mechanism_server is not None:
        # libzmq's PLAIN and CURVE servers ask a ZAP handler: pyzmq's authenticator, accepting this client.
        lines += ["from zmq.auth.thread import ThreadAuthenticator  # noqa: E402", "",
                  "auth = ThreadAuthenticator(ctx)", "auth.start()"]
        if mechanism_server.mechanism == "PLAIN":
            client_side = c if mechanism_server is s else s
            user = (client_side.username or b"user").decode("utf-8", "replace")
            password = (client_side.password or b"").decode("utf-8", "replace")
            lines.append(f'auth.configure_plain(domain="*", passwords={{{user!r}: {password!r}}})')
        else:
            lines.append('auth.configure_curve(domain="*", location=zmq.auth.CURVE_ALLOW_ANY)')
    need_peer_identity = False
    if s.socket_type == "ROUTER" and not c.identity and conv.messages and conv.messages[0][0] == "server":
        c.identity = b"peer"  # a ROUTER that speaks first must know its peer's identity
        need_peer_identity = True
    for name, side, peer in (("server", s, c), ("client", c, s)):
        lines.append(f"{name} = ctx.socket(zmq.{side.socket_type})")
        lines.append(f"{name}.setsockopt(zmq.LINGER, 1000)")
        if side.identity:
            lines.append(f"{name}.setsockopt(zmq.ROUTING_ID, {side.identity!r})")
        if side.mechanism == "PLAIN":
            if side.as_server:
                lines.append(f"{name}.setsockopt(zmq.PLAIN_SERVER, 1)")
            else:
                lines.append(f"{name}.setsockopt(zmq.PLAIN_USERNAME, {side.username or b'user'!r})")
                lines.append(f"{name}.setsockopt(zmq.PLAIN_PASSWORD, {side.password or b''!r})")
        elif side.mechanism == "CURVE":
            lines.append(f"{name}_public, {name}_secret = zmq.curve_keypair()  # fresh keys: CURVE's bytes differ")
            lines.append(f"{name}.setsockopt(zmq.CURVE_PUBLICKEY, {name}_public)")
            lines.append(f"{name}.setsockopt(zmq.CURVE_SECRETKEY, {name}_secret)")
            if side.as_server:
                lines.append(f"{name}.setsockopt(zmq.CURVE_SERVER, 1)")
        for topic in side.subscriptions:
            lines.append(f"{name}.setsockopt(zmq.SUBSCRIBE, {topic!r})")
        if side.socket_type == "SUB" and not side.subscriptions and peer.socket_type in ("PUB", "XPUB"):
            lines.append(f'{name}.setsockopt(zmq.SUBSCRIBE, b"")')
    if c.mechanism == "CURVE" and not c.as_server:
        lines.append("client.setsockopt(zmq.CURVE_SERVERKEY, server_public)")
    if need_peer_identity:
        lines.append("# The original ROUTER spoke first to a peer it knew by its identity: the client is given one.")
    lines += [
        "server.bind(args.bind)",
        "client.connect(args.connect or args.bind)",
        "time.sleep(0.3)  # let the connection and its handshake finish (and subscriptions arrive)",
        "",
        "",
        "def receive(socket, name):",
        '    """The next message on `socket`, or exit when none comes in time."""',
        "    if not socket.poll(int(args.timeout * 1000)):",
        '        raise SystemExit(f"{name}: no message within {args.timeout} s")',
        "    frames = socket.recv_multipart()",
        '    print(f"{name} received {frames!r}")',
        "    return frames",
        "",
        "",
    ]
    # The identity each ROUTER sends to: the peer's own (its READY said it), else learnt from a message.
    if s.socket_type == "ROUTER":
        lines.append(f"peer = {c.identity!r}" if c.identity else
                     "peer = None  # the identity the server's ROUTER knows the client by, from its first message")
    if c.socket_type == "ROUTER":
        lines.append(f"server_peer = {s.identity!r}" if s.identity else
                     "server_peer = None  # the identity the client's ROUTER knows the server by")
    later = list(conv.later)
    for sent, message in enumerate([*conv.messages, None]):  # (None: the changes after the last one)
        while later and later[0][0] == sent:
            _, side_name, topic, subscribe = later.pop(0)
            option = "SUBSCRIBE" if subscribe else "UNSUBSCRIBE"
            lines += [f"{side_name}.setsockopt(zmq.{option}, {topic!r})", "time.sleep(0.1)"]
        if message is None:
            break
        who, frames = message
        other = "client" if who == "server" else "server"
        sock_type = (s if who == "server" else c).socket_type
        recv_type = (c if who == "server" else s).socket_type
        send = repr(frames)
        if sock_type == "ROUTER":
            send = f"[{'peer' if who == 'server' else 'server_peer'}] + {send}"
        lines += [f"{who}.send_multipart({send})", f"got = receive({other}, {other!r})"]
        if recv_type == "ROUTER" and not (c.identity if other == "server" else s.identity):
            lines.append("peer = got[0]" if other == "server" else "server_peer = got[0]")
    lines += ["", "client.close()", "server.close()"]
    if mechanism_server is not None:
        lines.append("auth.stop()")
    lines += ["ctx.term()", ""]
    return "\n".join(lines)


def _safe(text: str) -> str:
    """Text for the script's docstring: one line, no quotes that end it, no backslashes."""
    return " ".join(str(text).split()).replace('"""', "'''").replace("\\", "/")


# ---------------------------------------------------------------- a whole topology

# What a socket type's application gives `send_multipart` for the frames a message has on the wire: REQ's empty
# delimiter is the socket's (it puts it in front), a REP's reply carries the envelope REP put back, a ROUTER sends
# the peer's identity first (the wire has it not).
ENVELOPE_TYPES = frozenset({"REQ", "REP"})


@dataclass
class Step:
    """One thing an application did: `send` frames, or `recv` the next message."""

    node: str
    what: str  # "send" or "recv"
    frames: list[bytes] = field(default_factory=list)
    to: str | None = None  # a ROUTER's send: the node it routes to


def topology_steps(topology: dict[str, Any], events: list[dict[str, Any]]) -> list[Step]:
    """What each node's application sent and read, in the order it happened, from a topology session's (or a
    topology lesson's) events: each message id's first appearance from its sending node (a proxy's relays keep
    the id, an echoing node's replies are its thread's) and the applications' reads (`peer recv`)."""
    nodes = {n["name"]: n for n in topology.get("nodes", [])}
    proxied = {name for p in topology.get("proxies", []) for name in (p.get("frontend"), p.get("backend"))}
    conns = {str(c["conn"]): (c["client"], c["server"]) for c in topology.get("conns", [])}
    wire = {e["msg"]: e for e in events if e.get("kind") == "message" and isinstance(e.get("msg"), int)}
    seen: set[int] = set()
    steps: list[Step] = []
    for e in events:
        kind = e.get("kind")
        if kind == "peer" and e.get("what") == "recv":
            node = e.get("peer")
            if node in nodes and not nodes[node].get("echo") and node not in proxied:
                steps.append(Step(node, "recv"))
            continue
        msg = e.get("msg")
        if not isinstance(msg, int) or msg in seen:
            continue
        if kind == "socket" and e.get("what") in ("route", "queue", "drop", "filter"):
            sender, peer = e.get("node"), e.get("peer")
        elif kind == "message" and str(e.get("conn")) in conns:
            client, server = conns[str(e["conn"])]
            sender, peer = (client, server) if e.get("dir") == "c2s" else (server, client)
        else:
            continue
        seen.add(msg)
        if sender not in nodes or sender in proxied or nodes[sender].get("echo"):
            continue
        carried = wire.get(msg)
        if carried is None:
            continue  # (dropped before any wire: what it held is not known whole)
        frames = [bytes.fromhex(f) for f in carried.get("frames", [])]
        kind_of = str(nodes[sender].get("type", "")).upper()
        if kind_of in ENVELOPE_TYPES and b"" in frames:
            frames = frames[frames.index(b"") + 1:]
        steps.append(Step(sender, "send", frames, to=peer if kind_of == "ROUTER" else None))
    return steps


def topology_script(topology: dict[str, Any], events: list[dict[str, Any]], *, title: str = "") -> str:
    """A pyzmq script that builds the whole topology with libzmq (every node a socket with its options, each
    binding node on a port of its own, the links in order, a thread running `zmq.proxy` for each proxy step and
    one for each echoing node) and then has each application send and read what it did, in order."""
    nodes = list(topology.get("nodes", []))
    names = {n["name"] for n in nodes}
    links = [lk for lk in topology.get("links", []) if lk.get("connect") in names and lk.get("bind") in names]
    proxies = [p for p in topology.get("proxies", []) if p.get("frontend") in names and p.get("backend") in names]
    routers = {n["name"] for n in nodes if str(n.get("type", "")).upper() == "ROUTER"}
    binds = list(dict.fromkeys(lk["bind"] for lk in links))
    steps = topology_steps(topology, events)
    lines = [
        "#!/usr/bin/env python3",
        f'"""Builds {_safe(title or "a ZMTP topology")} with libzmq (pyzmq): {len(nodes)} sockets, {len(links)} '
        f"links{', ' + str(len(proxies)) + ' proxy step(s)' if proxies else ''}, and what each application sent "
        "and read, in order.",
        "",
        "Made by ZMTP Lab. Capture its traffic (tshark -i lo) to see the bytes; which worker a round robin picks",
        "depends on the order the connections come up, which libzmq does not promise.",
        '"""',
        "",
        "import argparse",
        "import threading",
        "import time",
        "",
        "import zmq",
        "",
        "parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])",
        'parser.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for each message")',
        "args = parser.parse_args()",
        "",
        "ctx = zmq.Context()",
        "sockets = {}",
        "",
    ]
    for node in nodes:
        name, kind = node["name"], str(node.get("type", "PAIR")).upper()
        lines.append(f"sockets[{name!r}] = s = ctx.socket(zmq.{kind})")
        lines.append("s.setsockopt(zmq.LINGER, 1000)")
        identity = node.get("identity") or ""
        talks_to_router = any((lk["connect"] == name and lk["bind"] in routers) or
                              (lk["bind"] == name and lk["connect"] in routers) for lk in links)
        if not identity and talks_to_router and kind != "ROUTER":
            identity = name  # (libzmq would make one up: the script names it, so a ROUTER can route to it)
        if identity:
            lines.append(f"s.setsockopt(zmq.ROUTING_ID, {identity.encode('utf-8')!r})")
        for key, option in (("sndhwm", "SNDHWM"), ("rcvhwm", "RCVHWM")):
            if node.get(key, 1000) != 1000:
                lines.append(f"s.setsockopt(zmq.{option}, {int(node[key])})")
        for topic in node.get("subscribe", []) if kind in ("SUB", "XSUB") else []:
            lines.append(f"s.setsockopt(zmq.SUBSCRIBE, {str(topic).encode('utf-8')!r})")
    lines += ["", "# Each binding node listens on a port of its own; the links connect in the topology's order.",
              "endpoints = {}"]
    for name in binds:
        lines.append(f'endpoints[{name!r}] = f"tcp://127.0.0.1:{{sockets[{name!r}].bind_to_random_port('
                     "'tcp://127.0.0.1')}\"")
    for lk in links:
        lines.append(f"sockets[{lk['connect']!r}].connect(endpoints[{lk['bind']!r}])")
    lines += ["", "threads = []", "done = threading.Event()"]
    if proxies:
        lines += ["", "", "def proxy(frontend, backend, n):",
                  '    """The broker: zmq.proxy moves every message between its two sockets, as it is, until told to',
                  '    stop (its sockets are its thread\'s from now on)."""',
                  "    control = ctx.socket(zmq.PAIR)",
                  '    control.connect(f"inproc://proxy-{n}")',
                  "    zmq.proxy_steerable(sockets[frontend], sockets[backend], None, control)",
                  "    for s in (control, sockets[frontend], sockets[backend]):",
                  "        s.close(linger=0)", "", "", "controls = []"]
        for i, p in enumerate(proxies):
            ends = f"{p['frontend']!r}, {p['backend']!r}, {i}"
            lines += ["controls.append(ctx.socket(zmq.PAIR))", f'controls[-1].bind("inproc://proxy-{i}")',
                      f"threads.append(threading.Thread(target=proxy, args=({ends}), daemon=True))"]
    echoes = [n["name"] for n in nodes if n.get("echo")]
    if echoes:
        lines += ["", "", "def echo(name):", '    """An echoing application: each message it reads goes back."""',
                  "    s = sockets[name]", "    while not done.is_set():", "        if s.poll(100):",
                  "            s.send_multipart(s.recv_multipart())", "    s.close(linger=0)", ""]
        for name in echoes:
            lines.append(f"threads.append(threading.Thread(target=echo, args=({name!r},), daemon=True))")
    lines.append("for thread in threads:")
    lines.append("    thread.start()")
    lines += [
        "time.sleep(0.5)  # the connections, their handshakes and the subscriptions",
        "",
        "",
        "def receive(name):",
        '    """The next message of node `name`\'s socket, or exit when none comes in time."""',
        "    if not sockets[name].poll(int(args.timeout * 1000)):",
        '        raise SystemExit(f"{name}: no message within {args.timeout} s")',
        "    frames = sockets[name].recv_multipart()",
        '    print(f"{name} received {frames!r}")',
        "    return frames",
        "",
        "",
    ]
    for step in steps:
        if step.what == "recv":
            lines.append(f"receive({step.node!r})")
        elif step.to is not None:
            peer = next((n for n in nodes if n["name"] == step.to), {})
            identity = (peer.get("identity") or step.to).encode("utf-8")
            lines.append(f"sockets[{step.node!r}].send_multipart([{identity!r}] + {step.frames!r})")
        else:
            lines.append(f"sockets[{step.node!r}].send_multipart({step.frames!r})")
    if not steps:
        lines.append("# (no application sent or read anything)")
    threaded = [name for p in proxies for name in (p["frontend"], p["backend"])] + echoes
    lines += ["", "time.sleep(0.2)", "done.set()"]
    if proxies:
        lines += ["for control in controls:", '    control.send(b"TERMINATE")']
    lines += ["for thread in threads:", "    thread.join(5)"]
    if proxies:
        lines += ["for control in controls:  # (closed once the proxies have read their TERMINATE)",
                  "    control.close(linger=0)"]
    lines += [f"for name, s in sockets.items():  # (the threads closed theirs: {', '.join(threaded) or 'none'})",
              f"    if name not in {sorted(threaded)!r}:", "        s.close(linger=0)", "ctx.term()", ""]
    return "\n".join(lines)
