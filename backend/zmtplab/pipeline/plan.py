"""Planning a run: which files, cut into which byte ranges, read by which tasks.

The driver finds the capture files under the inputs, reads each one's header (`ranges.probe`),
cuts large files into ranges of about `split_size` bytes, has the ranges scanned (in parallel
on Spark, or in-process for small runs), chains the scans of each file (`ranges.chain_scans`),
and packs the ranges into read partitions. Files that are not captures, and files damaged
part-way, become rows of the `errors` table; a damaged file keeps the packets before the damage.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

from ..capture.errors import CaptureFormatError
from ..capture.pcapfile import sniff_format
from .ranges import FileHeader, PlannedRange, RangeScan, chain_scans, error_message, nominal_ranges, probe, scan_range

__all__ = ["CaptureEntry", "PipelinePlan", "ScanTask", "discover", "make_plan", "run_scan_task"]

CAPTURE_SUFFIXES = (".pcap", ".pcapng", ".cap", ".ntar", ".pcap.gz", ".pcapng.gz", ".cap.gz")
DEFAULT_SPLIT_SIZE = 64 << 20
MAX_PARTITION_BYTES = 256 << 20


@dataclass
class CaptureEntry:
    """One input file."""

    cap: int
    name: str  # as the user named it (the `capture` column)
    path: str  # absolute, for the tasks
    size: int = 0
    format: str | None = None
    compressed: bool = False
    frames: int = 0
    ranges: int = 0
    error: str | None = None


@dataclass
class PipelinePlan:
    captures: list[CaptureEntry]
    partitions: list[list[PlannedRange]]
    errors: list[dict] = field(default_factory=list)
    rescans: int = 0
    scanned_ranges: int = 0

    @property
    def total_bytes(self) -> int:
        return sum(c.size for c in self.captures)

    @property
    def readable(self) -> list[CaptureEntry]:
        return [c for c in self.captures if c.format is not None]


ScanTask = tuple[FileHeader, int, int, int]  # header, range index, nominal start, nominal end


def run_scan_task(task: ScanTask) -> RangeScan:
    """Scans one range (what every scan task runs)."""
    header, index, start, end = task
    return scan_range(header, index, start, end)


def _looks_like_capture(path: str) -> bool:
    lower = path.lower()
    if lower.endswith(CAPTURE_SUFFIXES):
        return True
    try:
        with open(path, "rb") as f:
            return sniff_format(f.read(4096)) is not None
    except OSError:
        return False


def discover(inputs: Iterable[str | os.PathLike[str]]) -> tuple[list[CaptureEntry], list[dict]]:
    """The capture files named by `inputs` (files, or directories searched recursively).

    A file named explicitly is always taken (and reported if it is not a capture); in a
    directory, files with a capture suffix or capture magic bytes are.
    """
    entries: list[CaptureEntry] = []
    errors: list[dict] = []
    seen: set[str] = set()

    def add(name: str, path: str) -> None:
        real = os.path.realpath(path)
        if real in seen:
            return
        seen.add(real)
        entries.append(CaptureEntry(len(entries), name, os.path.abspath(path)))

    for item in inputs:
        name = os.fspath(item)
        if os.path.isdir(name):
            found = []
            for root, dirs, files in os.walk(name):
                dirs.sort()
                for fname in sorted(files):
                    path = os.path.join(root, fname)
                    if os.path.isfile(path) and _looks_like_capture(path):
                        found.append(path)
            for path in found:
                add(path, path)
        elif os.path.exists(name):
            add(name, name)
        else:
            errors.append({"capture": name, "kind": "unreadable", "message": f"No such file or directory: {name}",
                           "offset": None, "frame": None})
    return entries, errors


def make_plan(inputs: Sequence[str | os.PathLike[str]], *, split_size: int = DEFAULT_SPLIT_SIZE,
              scan_map: Callable[[list[ScanTask]], list[RangeScan]] | None = None,
              parallelism: int = 1) -> PipelinePlan:
    """Plans a run over `inputs`. `scan_map` runs scan tasks (default: in this process).

    Read partitions hold about a quarter of the corpus per core (at least one range, at most
    MAX_PARTITION_BYTES): enough tasks to keep every core busy, few enough that task overhead
    stays small when the ranges are small."""
    entries, errors = discover(inputs)
    headers: dict[int, FileHeader] = {}
    tasks: list[ScanTask] = []
    for entry in entries:
        try:
            entry.size = os.path.getsize(entry.path)
            header = probe(entry.path)
        except CaptureFormatError as exc:
            entry.error = str(exc)
            kind = "truncated" if type(exc).__name__ == "TruncatedCaptureError" else "not-a-capture"
            errors.append({"capture": entry.name, "kind": kind, "message": str(exc), "offset": exc.offset,
                           "frame": exc.frame})
            continue
        except OSError as exc:
            entry.error = f"{exc.strerror or exc}"
            errors.append({"capture": entry.name, "kind": "unreadable", "message": entry.error, "offset": None,
                           "frame": None})
            continue
        entry.format, entry.compressed = header.format, header.compressed
        headers[entry.cap] = header
        for i, (start, end) in enumerate(nominal_ranges(header, split_size)):
            tasks.append((header, i, start, end))
    scans = (scan_map or _local_map)(tasks) if tasks else []
    by_file: dict[str, list[RangeScan]] = {}
    for task, scan in zip(tasks, scans, strict=True):
        by_file.setdefault(task[0].path, []).append(scan)
    planned_all: list[PlannedRange] = []
    rescans = 0
    for entry in entries:
        header = headers.get(entry.cap)
        if header is None:
            continue
        planned, err, n = chain_scans(header, by_file.get(header.path, []))
        rescans += n
        planned = [replace(r, cap=entry.cap) for r in planned]
        entry.ranges = len(planned)
        entry.frames = sum(r.frames for r in planned)
        if err is not None:
            message = error_message(err)
            entry.error = message
            errors.append({"capture": entry.name, "kind": err.kind, "message": message, "offset": err.offset,
                           "frame": err.frames})
        planned_all.extend(planned)
    total = sum(range_bytes(r) for r in planned_all)
    target = max(min(split_size, MAX_PARTITION_BYTES), min(MAX_PARTITION_BYTES, total // max(1, 4 * parallelism)))
    parts = pack_partitions(planned_all, target)
    return PipelinePlan(entries, parts, errors, rescans, len(tasks))


def _local_map(tasks: list[ScanTask]) -> list[RangeScan]:
    return [run_scan_task(t) for t in tasks]


def range_bytes(r: PlannedRange) -> int:
    if r.header.compressed:
        return r.header.size * 4  # a guess at the decompressed size
    return max(0, r.stop - r.start)


def pack_partitions(ranges: list[PlannedRange], target: int) -> list[list[PlannedRange]]:
    """Read partitions: a large range alone, small ones (many small files) packed up to `target` bytes."""
    parts: list[list[PlannedRange]] = []
    current: list[PlannedRange] = []
    size = 0
    for r in ranges:
        n = range_bytes(r)
        if n >= target:
            parts.append([r])
            continue
        if current and size + n > target:
            parts.append(current)
            current, size = [], 0
        current.append(r)
        size += n
    if current:
        parts.append(current)
    return parts
