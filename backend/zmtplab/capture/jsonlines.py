"""The event contract as JSON lines text, written straight from the octets for runs of ordinary frames.

`zmtplab dissect --jsonl --no-fields` on a bulk capture spends its time per element. Its decoders
get `json_runs(max_body)` as their run scanner (`engine.batch`): in one pass over a run's octets it
finds where the run ends, as every run scanner does, and writes each frame's and each message's
JSON object exactly as `orjson.dumps(event.to_dict(with_fields=False, max_body=...))` would,
without the closing brace: a `JsonRun`'s `heads`. The capture dissector then appends each event's
source keys (`conn`, `dir`, `packets`, `ts`) and the brace (`source_suffix`, `join_run`); the
elements that lie within one packet share one suffix, so most of a run is one `str.join`.
(tests/capture/test_json_runs.py and tests/capture/test_dissect_output.py compare the text with
`orjson.dumps` of the events, byte for byte.)
"""

from __future__ import annotations

from functools import partial

import orjson

from ..engine.batch import FrameRun, RunScanner

# Hex windows grow from this many octets (doubling up to _MAX_SPAN) while a run keeps going.
_FIRST_SPAN = 2048
_MAX_SPAN = 1 << 20
_NO_LIMIT = 1 << 64  # a body limit no frame reaches
# The text of short sizes and lengths, and the hex of short headers (flags 0 or 1), made once.
_DEC = [str(k) for k in range(258)]
_HEX0 = [f"00{k:02x}" for k in range(256)]
_HEX1 = [f"01{k:02x}" for k in range(256)]


class JsonRun(FrameRun):
    """A `FrameRun` with each event's JSON object text: `heads[i]` is the i-th event's object
    without its closing brace."""

    __slots__ = ("heads",)

    def __init__(self, start: int, data: bytes | bytearray, heads: list[str], fresh: int, framing: str) -> None:
        super().__init__(start, data, fresh, framing, len(heads))
        self.heads = heads


def json_runs(max_body: int | None) -> RunScanner:
    """The run scanner that makes `JsonRun`s, bodies cut to `max_body` octets as `to_dict` cuts them."""
    return partial(scan_json_run, max_body)


def scan_json_run(max_body: int | None, buf: bytearray, pos: int, base: int, fresh: int,
                  framing: str) -> JsonRun | None:
    """The `JsonRun` of the whole ordinary messages at `buf[pos:]`, or None (the scanner `json_runs` makes).

    `base` is the stream offset of `buf[0]`. Stops where `engine.batch.scan_run` stops, and gives
    back every frame of a message it could not finish. A body longer than `max_body` octets is cut
    (then `hex` too, and the event and its message are `truncated`).
    """
    start = pos
    n = len(buf)
    heads: list[str] = []
    app = heads.append
    limit = _NO_LIMIT if max_body is None else max_body
    cut2 = 2 * limit  # hex digits of a cut body
    # Short frames (flags below 2) take the fast branch, unless a short body may need a cut: one test per frame.
    fast = 2 if limit >= 255 else 0
    parts: list[str] | None = None  # whole hex bodies of the message in progress, from its first MORE frame
    msg_off = 0  # stream offset of the message in progress
    msg_cut = False  # a body of the message in progress was cut
    h = ""
    hs = he = pos  # `h` is the hex of buf[hs:he], and he <= n
    span = _FIRST_SPAN
    while True:
        try:
            flags = buf[pos]
            size = buf[pos + 1]
        except IndexError:  # fewer than 2 octets left
            break
        if flags < fast:
            # A short frame shown whole: nearly every frame, so the shortest code.
            end = pos + 2 + size
            if end > he:
                if end > n:
                    break
                if span < _MAX_SPAN:
                    span += span
                hs = pos
                he = max(end, min(n, pos + span))
                h = buf[hs:he].hex()
            i = ((pos - hs) << 1) + 4
            body = h[i:i + size + size]
            if not flags:
                if parts is None:
                    off = str(base + pos)
                    ln = _DEC[size + 2]
                    app(f'{{"kind":"frame","offset":{off},"length":{ln},"more":false,"long":false,'
                        f'"size":{_DEC[size]},"body":"{body}","hex":"{_HEX0[size]}{body}"')
                    app(f'{{"kind":"message","offset":{off},"length":{ln},"frames":["{body}"]')
                else:
                    app(f'{{"kind":"frame","offset":{base + pos},"length":{_DEC[size + 2]},"more":false,"long":false,'
                        f'"size":{_DEC[size]},"body":"{body}","hex":"{_HEX0[size]}{body}"')
                    parts.append(body)
                    if msg_cut:
                        app(_message_head(msg_off, base + end - msg_off, parts, cut2))
                        msg_cut = False
                    else:  # (inline: one message in ten is multipart in bulk traffic)
                        frames = '","'.join(parts)
                        app(f'{{"kind":"message","offset":{msg_off},"length":{base + end - msg_off},'
                            f'"frames":["{frames}"]')
                    parts = None
            else:
                app(f'{{"kind":"frame","offset":{base + pos},"length":{_DEC[size + 2]},"more":true,"long":false,'
                    f'"size":{_DEC[size]},"body":"{body}","hex":"{_HEX1[size]}{body}"')
                if parts is None:
                    parts = [body]
                    msg_off = base + pos
                else:
                    parts.append(body)
            pos = end
            continue
        # A LONG frame, or a body to cut.
        if flags < 2:
            end = pos + 2 + size
            hl = 4  # hex digits of the header
            lg = "false"
        elif flags < 4:
            if n - pos < 9:
                break
            size = int.from_bytes(buf[pos + 1:pos + 9], "big")
            if size < 256:
                break  # LONG for a short frame: the decoder adds its note
            end = pos + 9 + size
            hl = 18
            lg = "true"
        else:
            break  # COMMAND or a reserved bit: the decoder decides
        if end > n:
            break
        if end > he:
            if span < _MAX_SPAN:
                span += span
            hs = pos
            he = max(end, min(n, pos + span))
            h = buf[hs:he].hex()
        i = (pos - hs) << 1
        j = (end - hs) << 1
        off = base + pos
        full = h[i + hl:j]
        if size > limit:
            body = full[:cut2]
            tail = f'"{body}","hex":"{h[i:i + hl + cut2]}","truncated":true'
            msg_cut = True
        else:
            body = full
            tail = f'"{body}","hex":"{h[i:j]}"'
        more = "true" if flags & 1 else "false"
        app(f'{{"kind":"frame","offset":{off},"length":{end - pos},"more":{more},"long":{lg},"size":{size},'
            f'"body":{tail}')
        if flags & 1:
            if parts is None:
                parts = [full]
                msg_off = off
            else:
                parts.append(full)
        else:
            if parts is None:  # (inline: the usual message, one frame)
                if msg_cut:
                    app(f'{{"kind":"message","offset":{off},"length":{end - pos},"frames":["{body}"],"truncated":true')
                else:
                    app(f'{{"kind":"message","offset":{off},"length":{end - pos},"frames":["{body}"]')
            else:
                parts.append(full)
                app(_message_head(msg_off, base + end - msg_off, parts, cut2 if msg_cut else None))
                parts = None
            msg_cut = False
        pos = end
    if parts is not None:
        # An unfinished message: give its frames back.
        del heads[len(heads) - len(parts):]
        pos = msg_off - base
    return JsonRun(base + start, buf[start:pos], heads, fresh, framing) if heads else None


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
        return common.join(heads) + common
    last = max(ends) + 1
    first = "".join([heads[k] + ends.get(k, common) for k in range(last)])
    return first + common.join(heads[last:]) + common if last < len(heads) else first
