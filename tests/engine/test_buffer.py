"""The decoder's public buffer (engine/buffer.py) and the engine's encapsulation.

`StreamBuffer` keeps stream offsets exact through `consume`, `commit` and `skip`; the decoder's
`idle` says when an owner may read frames itself (as `FastPath` does) and `buffer.skip()` them;
and no engine module (nor the capture dissector) reads or sets another object's private attributes.
"""

from __future__ import annotations

import ast
from pathlib import Path

from zmtplab.engine import Connection, StreamDecoder
from zmtplab.engine.buffer import StreamBuffer
from zmtplab.engine.commands import ping_body, ready_body
from zmtplab.engine.fastpath import FastPath
from zmtplab.engine.framing import encode_frame, encode_message
from zmtplab.engine.greeting import encode_greeting

BACKEND = Path(__file__).resolve().parents[2] / "backend" / "zmtplab"


def test_consume_commit_skip_keep_stream_offsets():
    buffer = StreamBuffer()
    buffer.feed(b"abcdef")
    assert (buffer.offset, buffer.end, buffer.available) == (0, 6, 6)
    assert buffer.consume(2) == b"ab" and type(buffer.consume(0)) is bytes
    assert (buffer.offset, buffer.available) == (2, 4)
    buffer.commit()
    assert bytes(buffer.data) == b"cdef" and (buffer.base, buffer.pos, buffer.offset) == (2, 0, 2)
    assert buffer.consume(10) == b"cdef" and buffer.offset == buffer.end == 6
    buffer.feed(b"gh")
    buffer.skip(100)  # what was fed is dropped, consumed or not, and 100 more bytes go by
    assert (buffer.base, buffer.offset, buffer.end, buffer.available) == (108, 108, 108, 0)
    buffer.feed(b"ij")
    assert buffer.consume(1) == b"i" and buffer.offset == 109


def test_idle_only_between_frames_with_nothing_held():
    decoder = StreamDecoder()
    assert not decoder.idle  # in the greeting
    decoder.receive_data(encode_greeting() + encode_frame(ready_body({"Socket-Type": b"PUSH"}), command=True))
    assert decoder.idle
    decoder.receive_data(encode_message([b"a", b"b"])[:4])  # MORE frame "a" and half of the next header
    assert not decoder.idle and decoder.in_message
    decoder.receive_data(encode_message([b"a", b"b"])[4:])
    assert decoder.idle
    decoder.receive_data(b"\x00")  # half a header
    assert not decoder.idle


def test_fast_path_moves_the_decoders_offset_past_what_it_read():
    client, server = Connection("PUSH"), Connection("PULL")
    out_c, out_s = client.start(), server.start()
    while out_c or out_s:
        server.receive_data(out_c)
        client.receive_data(out_s)
        out_c, out_s = client.data_to_send(), server.data_to_send()
    server.events()
    start = server.decoder.offset
    fast = FastPath(server)
    stream = encode_message([b"one"]) + encode_message([b"two", b"three"])
    assert fast.receive(stream + encode_message([b"four"])[:3]) == [(b"one",), (b"two", b"three")]
    assert server.decoder.offset == start + len(stream)  # the held 3 octets are not the decoder's yet
    ping = encode_frame(ping_body(1, b"c"), command=True)
    assert fast.receive(encode_message([b"four"])[3:] + ping) == [(b"four",)] and fast.fell_back
    assert [e.kind for e in server.events()] == ["ping"]  # the decoder read the PING from the right offset
    assert server.decoder.offset == start + len(stream) + len(encode_message([b"four"])) + len(ping)


def _private_attribute_uses(path: Path) -> list[str]:
    """`x._name` where `x` is not `self` or `cls` (dunder names aside)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))):
            found.append(f"{path.relative_to(BACKEND)}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_engine_and_capture_dissector_touch_no_other_objects_private_state():
    paths = [*sorted((BACKEND / "engine").glob("*.py")), BACKEND / "capture" / "dissect.py"]
    assert [use for path in paths for use in _private_attribute_uses(path)] == []
