"""The event contract as JSON lines text, written straight from the octets for runs of ordinary frames.

`zmtplab dissect --jsonl --no-fields` on a bulk capture spends its time per element. Its decoders
get `json_runs(max_body)` as their run scanner (`engine.batch`): it finds the run with the engine's
own scan (`engine.batch.scan_run`: where the run ends and where each frame starts) and then writes
each frame's and each message's JSON object exactly as
`orjson.dumps(event.to_dict(with_fields=False, max_body=...))` would, without the closing brace: a
`JsonRun`'s `heads`. The capture dissector then appends each event's
source keys (`conn`, `dir`, `packets`, `ts`) and the brace (`source_suffix`, `join_run`); the
elements that lie within one packet share one suffix, so most of a run is one `str.join`.

With fields (`zmtplab dissect --jsonl`), each head also carries the event's `fields`, written from
templates rather than built as dicts: a frame's fields differ from one frame to the next only in
their offsets, its size and its body's value, so `_field_texts` makes, once per framing, the JSON
text of the fields the engine's own functions give (`header_field_dicts`, `body_field`) with
sentinel numbers where those go, and cuts it there; a frame's fields are then one f-string of the
pieces and its numbers, and its message's field shares the body's value text.
(tests/capture/test_json_runs.py and tests/capture/test_dissect_output.py compare the text with
`orjson.dumps` of the events, byte for byte.)
"""

from __future__ import annotations

import re
from functools import lru_cache, partial

import orjson

from ..engine.batch import FrameRun, RunScanner, scan_run
from ..engine.framing import body_field, body_value, header_field_dicts

_NO_LIMIT = 1 << 64  # a body limit no frame reaches
# The text of short sizes and lengths, and the hex of short headers (flags 0 or 1), made once.
# The text of a short frame (flags 0 or 1, then size) between its offset and its body, and between its
# body and its body again (its hex, after the header's); a one-frame message's between offset and body.
_SHORT_HEAD = [[f',"length":{k + 2},"more":{"true" if flags else "false"},"long":false,"size":{k},"body":"'
                for k in range(256)] for flags in (0, 1)]
_SHORT_HEX = [[f'","hex":"{flags:02x}{k:02x}' for k in range(256)] for flags in (0, 1)]
_SHORT_MESSAGE = [f',"length":{k + 2},"frames":["' for k in range(256)]
_DISPLAY_LIMIT = 4096  # body_value's default limit: a longer body's value is cut (by body_value itself)
# Sentinel numbers put where a field's offset, length, value or frame number goes, then cut out (`_field_texts`).
_SENTINEL = re.compile(r"-91\d\d")


class JsonRun(FrameRun):
    """A `FrameRun` with each event's JSON object text: `heads[i]` is the i-th event's object
    without its closing brace."""

    __slots__ = ("heads",)

    def __init__(self, start: int, data: bytes | bytearray, heads: list[str], fresh: int, framing: str,
                 starts: list[int] | None = None) -> None:
        super().__init__(start, data, fresh, framing, len(heads), starts)
        self.heads = heads


def json_runs(max_body: int | None, with_fields: bool = False) -> RunScanner:
    """The run scanner that makes `JsonRun`s, bodies cut to `max_body` octets as `to_dict` cuts them,
    with each event's `fields` when `with_fields`."""
    if with_fields:
        return partial(scan_json_run, max_body, with_fields=True)
    return partial(scan_json_run, max_body)


def _pieces(value: object, count: int) -> tuple[str, ...]:
    """orjson's text of `value` cut at its sentinel numbers, which must be `count`."""
    text = orjson.dumps(value).decode()
    pieces = tuple(_SENTINEL.split(text))
    if len(pieces) != count + 1:  # (a note that happened to contain a sentinel)
        raise AssertionError(f"field template {text!r} does not have {count} sentinels")
    return pieces


class _FieldTexts:
    """The fields' JSON pieces of one framing, cut where a frame's numbers go (see `_field_texts`)."""

    __slots__ = ("body_length", "frames", "message", "message_length", "short_size")

    def __init__(self, frames: list[tuple[str, ...]], message: tuple[str, ...]) -> None:
        # Every value of a body field is a string: its quotes go in the pieces, the value between them
        # (the body's own text, in the usual case) is the text of a JSON string without its quotes.
        self.frames = [(*f[:5], f[5] + '"', '"' + f[6]) for f in frames]
        self.message = (*message[:3], message[3] + '"', '"' + message[4])
        # The pieces around a short size, made once for each size: (flags 0 and 1) size field, body length.
        self.short_size = [[f"{frames[flags][2]}{n}{frames[flags][3]}" for n in range(256)] for flags in (0, 1)]
        self.body_length = [f"{frames[0][4]}{n}{frames[0][5]}\"" for n in range(256)]
        self.message_length = [f"{message[2]}{n}{message[3]}\"" for n in range(256)]


@lru_cache(maxsize=4)
def _field_texts(framing: str) -> _FieldTexts:
    """The fields' JSON pieces of framing `framing`: a frame's for each flags value 0-3, and a message's field.

    A frame's 7 pieces go around its flags' offset, its size field's offset and value, its body's
    offset, length and value: `,"fields":[...]` as orjson writes `Frame.field_dicts()`. A message's
    field (one per frame) has 5 pieces, around the frame's number, its body's offset, length and value.
    """
    frames = []
    for flags in range(4):
        header = bytes((flags, 0)) if flags < 2 else bytes((flags,)) + (256).to_bytes(8, "big")
        dicts = header_field_dicts(0, header, framing)
        dicts.append(body_field(0, b"").to_dict())
        flag, size, body = dicts
        flag["offset"], size["offset"], size["value"] = -9101, -9102, -9103
        body["offset"], body["length"], body["value"] = -9104, -9105, -9106
        first, *rest = _pieces({"fields": dicts}, 6)
        frames.append(("," + first[1:], *rest[:-1], rest[-1][:-1]))  # `,"fields":[` ... `]`, no braces
    field = body_field(0, b"", name="frame -9107").to_dict()
    field["offset"], field["length"], field["value"] = -9108, -9109, -9110
    return _FieldTexts(frames, _pieces(field, 4))


def value_json(data: bytes | bytearray, hexed: str | None = None) -> str:
    """The JSON text of a body field's value (`body_value(data)` as orjson writes it); `hexed`: data's hex if known."""
    if len(data) <= _DISPLAY_LIMIT and data.isascii():
        text = data.decode("ascii")
        if not text.isprintable():
            return f'"{data.hex() if hexed is None else hexed}"'
        if '"' in text or "\\" in text:
            return orjson.dumps(text).decode()
        return f'"{text}"'
    return orjson.dumps(body_value(bytes(data))).decode()


def scan_json_run(max_body: int | None, buf: bytearray, pos: int, base: int, fresh: int,
                  framing: str, *, with_fields: bool = False) -> JsonRun | None:
    """The `JsonRun` of the whole ordinary messages at `buf[pos:]`, or None (the scanner `json_runs` makes).

    `base` is the stream offset of `buf[0]`. The run is what `engine.batch.scan_run` finds (the one
    frame-header scan every run scanner shares); this writes its events' text. A body longer than
    `max_body` octets is cut (then `hex` too, and the event and its message are `truncated`). With
    `with_fields`, every head ends with the event's `fields`.
    """
    stop, _count, starts = scan_run(buf, pos)
    if not starts:
        return None
    data = buf[pos:stop]
    h = data.hex()
    # With fields, the run as latin-1 text: a body's own text when it is ASCII.
    t = data.decode("latin-1") if with_fields else ""
    base += pos  # from here on, positions are within `data`
    heads: list[str] = []
    app = heads.append
    limit = _NO_LIMIT if max_body is None else max_body
    cut2 = 2 * limit  # hex digits of a cut body
    # Short frames (flags below 2) take the fast branch, unless a short body may need a cut: one test per frame.
    fast = 2 if limit >= 255 else 0
    parts: list[str] | None = None  # whole hex bodies of the message in progress, from its first MORE frame
    msg_fields: list[str] = []  # with fields, the message field of each of those frames
    msg_off = 0  # stream offset of the message in progress
    msg_cut = False  # a body of the message in progress was cut
    # With fields, the template pieces (`_field_texts`); without, every fields text below stays "".
    frame_texts: list[tuple[str, ...]] = []
    m0 = m1 = m2 = m3 = m4 = ""
    short_size: list[list[str]] = []
    body_length: list[str] = []
    message_length: list[str] = []
    if with_fields:
        texts = _field_texts(framing)
        frame_texts, short_size = texts.frames, texts.short_size
        body_length, message_length = texts.body_length, texts.message_length
        m0, m1, m2, m3, m4 = texts.message
    ff = mf = fields = ""  # the frame's fields, its message's field, the message's fields
    ends = starts[1:]
    ends.append(len(data))
    (head0, head1), (hex0, hex1), message0 = _SHORT_HEAD, _SHORT_HEX, _SHORT_MESSAGE
    plain = fast and not with_fields  # the text of a short frame's message of one frame is two lines, no fields
    for pos, end in zip(starts, ends, strict=True):
        flags = data[pos]
        if not flags and plain and parts is None:
            # Without fields, a message of one short frame: nearly every element of dense traffic.
            size = end - pos - 2
            body = h[(pos << 1) + 4:end << 1]
            o = str(base + pos)  # (made once, written twice)
            app(f'{{"kind":"frame","offset":{o}{head0[size]}{body}{hex0[size]}{body}"')
            app(f'{{"kind":"message","offset":{o}{message0[size]}{body}"]')
            continue
        if flags < fast:
            # A short frame shown whole: nearly every frame, so the shortest code.
            size = end - pos - 2
            body = h[(pos << 1) + 4:end << 1]
            off = base + pos
            if with_fields:
                # The value: the body as text when it is printable ASCII with nothing to escape (the usual case).
                value = t[pos + 2:end]
                if not (value.isascii() and value.isprintable()) or '"' in value or "\\" in value:
                    value = value_json(data[pos + 2:end], body)[1:-1]
                f0, f1, _, _, _, _, f6 = frame_texts[flags]
                at = str(off + 2)
                if not flags and parts is None:
                    # A message of one frame, nearly every one: its frame and message each in one piece.
                    app(f'{{"kind":"frame","offset":{off}{head0[size]}{body}{hex0[size]}{body}"'
                        f'{f0}{off}{f1}{off + 1}{short_size[0][size]}{at}{body_length[size]}{value}{f6}')
                    app(f'{{"kind":"message","offset":{off}{message0[size]}{body}"],"fields":['
                        f'{m0}1{m1}{at}{message_length[size]}{value}{m4}]')
                    continue
                ff = f"{f0}{off}{f1}{off + 1}{short_size[flags][size]}{at}{body_length[size]}{value}{f6}"
                mf = f"{m0}{1 if parts is None else len(parts) + 1}{m1}{at}{message_length[size]}{value}{m4}"
            if not flags:
                # The last frame of a message of several (a message of one frame was written above).
                assert parts is not None
                app(f'{{"kind":"frame","offset":{off}{head0[size]}{body}{hex0[size]}{body}"{ff}')
                parts.append(body)
                if with_fields:
                    msg_fields.append(mf)
                    fields = f',"fields":[{",".join(msg_fields)}]'
                if msg_cut:
                    app(_message_head(msg_off, base + end - msg_off, parts, cut2) + fields)
                    msg_cut = False
                else:  # (inline: one message in ten is multipart in bulk traffic)
                    frames = '","'.join(parts)
                    app(f'{{"kind":"message","offset":{msg_off},"length":{base + end - msg_off},'
                        f'"frames":["{frames}"]{fields}')
                parts = None
            else:
                app(f'{{"kind":"frame","offset":{off}{head1[size]}{body}{hex1[size]}{body}"{ff}')
                if parts is None:
                    parts = [body]
                    msg_fields = [mf]
                    msg_off = off
                else:
                    parts.append(body)
                    msg_fields.append(mf)
            continue
        # A LONG frame, or a body to cut.
        if flags < 2:
            hl = 4  # hex digits of the header
            lg = "false"
        else:
            hl = 18
            lg = "true"
        size = end - pos - (hl >> 1)
        i = pos << 1
        j = end << 1
        off = base + pos
        full = h[i + hl:j]
        if size > limit:
            body = full[:cut2]
            tail = f'"{body}","hex":"{h[i:i + hl + cut2]}","truncated":true'
            msg_cut = True
        else:
            body = full
            tail = f'"{body}","hex":"{h[i:j]}"'
        if with_fields:
            at = off + (hl >> 1)  # the body's offset
            value = value_json(data[pos + (hl >> 1):end], full)[1:-1]
            f0, f1, f2, f3, f4, f5, f6 = frame_texts[flags]
            ff = f"{f0}{off}{f1}{off + 1}{f2}{size}{f3}{at}{f4}{size}{f5}{value}{f6}"
            mf = f"{m0}{1 if parts is None else len(parts) + 1}{m1}{at}{m2}{size}{m3}{value}{m4}"
        more = "true" if flags & 1 else "false"
        app(f'{{"kind":"frame","offset":{off},"length":{end - pos},"more":{more},"long":{lg},"size":{size},'
            f'"body":{tail}{ff}')
        if flags & 1:
            if parts is None:
                parts = [full]
                msg_fields = [mf]
                msg_off = off
            else:
                parts.append(full)
                msg_fields.append(mf)
        else:
            if parts is None:  # (inline: the usual message, one frame)
                if with_fields:
                    fields = f',"fields":[{mf}]'
                if msg_cut:
                    app(f'{{"kind":"message","offset":{off},"length":{end - pos},"frames":["{body}"],"truncated":true'
                        f'{fields}')
                else:
                    app(f'{{"kind":"message","offset":{off},"length":{end - pos},"frames":["{body}"]{fields}')
            else:
                parts.append(full)
                if with_fields:
                    msg_fields.append(mf)
                    fields = f',"fields":[{",".join(msg_fields)}]'
                app(_message_head(msg_off, base + end - msg_off, parts, cut2 if msg_cut else None) + fields)
                parts = None
            msg_cut = False
    return JsonRun(base, data, heads, fresh, framing, starts)


def _message_head(offset: int, length: int, parts: list[str], cut2: int | None) -> str:
    """A message's JSON head from its frames' whole hex bodies, cut to `cut2` hex digits unless it is None."""
    if cut2 is not None:
        frames = '","'.join([p[:cut2] for p in parts])
        return f'{{"kind":"message","offset":{offset},"length":{length},"frames":["{frames}"],"truncated":true'
    frames = '","'.join(parts)
    return f'{{"kind":"message","offset":{offset},"length":{length},"frames":["{frames}"]'


def source_suffix(conn: str, direction: str, packets: list[int], ts: float) -> str:
    """An event's source keys and closing brace, as orjson writes them after the head, with the newline."""
    source = {"conn": conn, "dir": direction, "packets": packets, "ts": ts}
    return "," + orjson.dumps(source, option=orjson.OPT_APPEND_NEWLINE).decode()[1:]


def join_run(heads: list[str], common: str | None, ends: dict[int, str]) -> str:
    """A run's JSON lines: event k ends with `ends[k]` when it has one, else with `common`."""
    if common is None:
        return "".join([head + ends[k] for k, head in enumerate(heads)])
    if not ends:
        return common.join([*heads, ""])  # (not `+ common`: that copies the whole text again)
    last = max(ends) + 1
    first = "".join([heads[k] + ends.get(k, common) for k in range(last)])
    return first + common.join([*heads[last:], ""]) if last < len(heads) else first
