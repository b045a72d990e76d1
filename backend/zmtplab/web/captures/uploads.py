"""Streaming a multipart upload straight to disk, checking size and magic number on the way.

The request body is parsed as it arrives (python-multipart's push parser), a batch at a time in a worker
thread (parsing a body of ten thousand empty parts is work the event loop never does): the bytes of the
`file` field go to the destination file in chunks, never whole in memory. Every octet of the body counts,
not only the file's: what is not the file (a preamble, part headers, other fields, boundaries, an epilogue)
may take `MULTIPART_OVERHEAD` octets, and reading stops at the closing boundary (the answer then closes the
connection: a client that goes on sending after it is not read). The upload stops with 413 the moment it
passes the size limit and with 415 as soon as its first bytes show it is not a pcap or pcapng capture.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from fastapi import Request
from python_multipart.multipart import MultipartParser, parse_options_header

from ...capture.pcapfile import sniff_format
from ..core.errors import Refused, TooLarge, Unprocessable, Unsupported

FIELD = "file"
SNIFF_BYTES = 4096  # enough for sniff_format, gzip-compressed captures included
WRITE_BATCH = 1 << 20
MULTIPART_OVERHEAD = 64 * 1024  # octets of the body that are not the file (boundaries, headers, other fields)
PARSE_BATCH = 256 * 1024  # octets of the body parsed (and written) in one turn of the worker thread


class UploadProblem(Refused):
    """An upload refused, with a text the client can show; the connection is closed after the answer (the rest of
    the body is not read)."""

    headers = {"Connection": "close"}


class UploadTooLarge(UploadProblem, TooLarge):
    """The file, or what the form holds besides it, is larger than the server takes."""


class NotACapture(UploadProblem, Unsupported):
    """The body is not a multipart form, or its file is not a pcap or pcapng capture."""


class MalformedForm(UploadProblem, Unprocessable):
    """The multipart form is broken, or has no `file` field."""


@dataclass
class _Part:
    name: str | None = None
    filename: str | None = None
    headers: dict[bytes, bytes] = field(default_factory=dict)


@dataclass
class _State:
    """What the parser callbacks collect between two writes."""

    part: _Part = field(default_factory=_Part)
    header_name: bytearray = field(default_factory=bytearray)
    header_value: bytearray = field(default_factory=bytearray)
    in_file: bool = False
    file_seen: bool = False
    file_done: bool = False
    filename: str | None = None
    pending: list[bytes] = field(default_factory=list)
    ended: bool = False  # the closing boundary was read


@dataclass
class UploadResult:
    """A stored upload (`complete`: the body was read to its end; otherwise the answer closes the connection)."""

    filename: str | None
    size: int
    format: str
    complete: bool = True


async def receive_capture(request: Request, dest: Path, max_bytes: int) -> UploadResult:
    """Stores the `file` field of a multipart request at `dest`; raises `UploadProblem` when refused."""
    content_type = request.headers.get("content-type", "")
    ctype, options = parse_options_header(content_type)
    boundary = options.get(b"boundary")
    if ctype != b"multipart/form-data" or not boundary:
        raise NotACapture(f"send the capture as multipart/form-data with a field named '{FIELD}'")
    check_declared_size(request, max_bytes)

    st = _State()

    def on_part_begin() -> None:
        st.part = _Part()

    def on_header_field(data: bytes, start: int, end: int) -> None:
        st.header_name += data[start:end]

    def on_header_value(data: bytes, start: int, end: int) -> None:
        st.header_value += data[start:end]

    def on_header_end() -> None:
        st.part.headers[bytes(st.header_name).lower()] = bytes(st.header_value)
        st.header_name.clear()
        st.header_value.clear()

    def on_headers_finished() -> None:
        _, opts = parse_options_header(st.part.headers.get(b"content-disposition", b""))
        name = opts.get(b"name")
        st.part.name = name.decode("utf-8", "replace") if name is not None else None
        filename = opts.get(b"filename")
        st.part.filename = filename.decode("utf-8", "replace") if filename is not None else None
        st.in_file = st.part.name == FIELD and not st.file_seen
        if st.in_file:
            st.file_seen = True
            st.filename = st.part.filename

    def on_part_data(data: bytes, start: int, end: int) -> None:
        if st.in_file:
            st.pending.append(data[start:end])

    def on_part_end() -> None:
        if st.in_file:
            st.in_file = False
            st.file_done = True

    def on_end() -> None:
        st.ended = True

    parser = MultipartParser(boundary, {
        "on_part_begin": on_part_begin, "on_part_data": on_part_data, "on_part_end": on_part_end,
        "on_header_field": on_header_field, "on_header_value": on_header_value, "on_header_end": on_header_end,
        "on_headers_finished": on_headers_finished, "on_end": on_end,
    })

    size = 0  # the file's octets
    parsed = 0  # the body's
    head = bytearray()
    sniffed: str | None = None
    buffered: list[bytes] = []
    buffered_len = 0

    def work(data: bytes, last: bool) -> None:
        """Parses a batch of the body and writes what it holds of the file (in the worker thread)."""
        nonlocal size, parsed, sniffed, buffered_len
        try:
            parser.write(data)
            if last:
                parser.finalize()
        except UploadProblem:
            raise
        except Exception as exc:  # python-multipart's MultipartParseError and friends
            raise MalformedForm(f"malformed multipart body: {exc}") from exc
        for piece in st.pending:
            size += len(piece)
            if size > max_bytes:
                raise UploadTooLarge(_too_large(max_bytes))
            if sniffed is None and len(head) < SNIFF_BYTES:
                head.extend(piece[: SNIFF_BYTES - len(head)])
            buffered.append(piece)
            buffered_len += len(piece)
        st.pending.clear()
        parsed += len(data)
        if not st.ended and parsed - size > MULTIPART_OVERHEAD:  # (after the end: the epilogue, not read on)
            raise UploadTooLarge(f"more than {MULTIPART_OVERHEAD} octets of the "
                                 "form are not the file (other fields, part headers, parts)")
        if sniffed is None and (len(head) >= SNIFF_BYTES or st.file_done):
            sniffed = _sniff(bytes(head))
        if sniffed is not None and (buffered_len >= WRITE_BATCH or (buffered and (last or st.ended))):
            out.write(b"".join(buffered))
            buffered.clear()
            buffered_len = 0

    limit = max_bytes + MULTIPART_OVERHEAD
    received = 0
    batch: list[bytes] = []
    batch_len = 0
    complete = True
    out: BinaryIO = await asyncio.to_thread(open, dest, "wb")
    try:
        async for chunk in request.stream():
            received += len(chunk)
            if received > limit:
                raise UploadTooLarge(_too_large(max_bytes))
            batch.append(chunk)
            batch_len += len(chunk)
            if batch_len >= PARSE_BATCH:
                await asyncio.to_thread(work, b"".join(batch), False)
                batch.clear()
                batch_len = 0
                if st.ended:  # the closing boundary: what follows is not read
                    complete = False
                    break
        await asyncio.to_thread(work, b"".join(batch), True)
        if not st.file_seen:
            raise MalformedForm(f"the form has no field named '{FIELD}'")
        if not st.file_done:
            raise MalformedForm("the multipart body ended inside the file")
        if sniffed is None:
            sniffed = _sniff(bytes(head))
        if buffered:
            await asyncio.to_thread(out.write, b"".join(buffered))
    finally:
        await asyncio.to_thread(out.close)
    return UploadResult(st.filename, size, sniffed, complete)


def check_declared_size(request: Request, max_bytes: int) -> None:
    """Raises `UploadTooLarge` when the request's Content-Length already says the file cannot fit within
    `max_bytes` (before anything else is checked: a size the server never takes is the answer, not a disk that cannot
    hold it)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes + MULTIPART_OVERHEAD:
        raise UploadTooLarge(_too_large(max_bytes))


def _sniff(head: bytes) -> str:
    if not head:
        raise NotACapture("the file is empty: not a pcap or pcapng capture")
    fmt = sniff_format(head)
    if fmt is None:
        raise NotACapture(f"not a pcap or pcapng capture (the file starts with {head[:4].hex(' ')})")
    return fmt


def _too_large(max_bytes: int) -> str:
    return f"the file is larger than the server's limit of {max_bytes} bytes"
