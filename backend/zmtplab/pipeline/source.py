"""A PySpark Python Data Source that reads planned capture byte ranges as rows of TCP packets.

    spark.dataSource.register(PacketSource)
    spark.read.format("zmtplab_packets").option("plan", encode_plan(parts)).load()

The plan (see `plan.py`) is a list of partitions, each a list of `ranges.PlannedRange`: one
large file spreads over many partitions, many small files share one. Options:

* `plan`: the encoded plan (required);
* `payload`: "offset" (default) ships each payload as its offset in the capture file (`poff`:
  the dissect tasks read the bytes themselves, so payloads never go through the shuffle) and
  only payloads that cannot be located (gzip files) as bytes; "inline" ships all of them as bytes.

Rows follow `schemas.PACKET_SCHEMA`; they are produced as Arrow record batches.
"""

from __future__ import annotations

import base64
import pickle
import zlib
from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from .ranges import PlannedRange, read_range_located
from .schemas import PACKET_SCHEMA, spark_schema
from .stages import fewer_collections, packets_batch

__all__ = ["PacketSource", "decode_plan", "encode_plan"]

BATCH_PACKETS = 8192


def encode_plan(parts: list[list[PlannedRange]]) -> str:
    """The plan as an option string."""
    return base64.b64encode(zlib.compress(pickle.dumps(parts, protocol=pickle.HIGHEST_PROTOCOL), 6)).decode("ascii")


def decode_plan(text: str) -> list[list[PlannedRange]]:
    return pickle.loads(zlib.decompress(base64.b64decode(text)))


class RangesPartition(InputPartition):
    """The ranges one task reads."""

    def __init__(self, index: int, ranges: list[PlannedRange]) -> None:
        super().__init__(index)
        self.ranges = ranges


class PacketSource(DataSource):
    """`zmtplab_packets`: the TCP packets of planned capture ranges."""

    @classmethod
    def name(cls) -> str:
        return "zmtplab_packets"

    def schema(self):
        return spark_schema(PACKET_SCHEMA)

    def reader(self, schema) -> DataSourceReader:
        return _Reader(self.options)


class _Reader(DataSourceReader):
    def __init__(self, options) -> None:
        self.plan = options.get("plan")
        self.inline = str(options.get("payload", "offset")).lower() == "inline"

    def partitions(self) -> list[InputPartition]:
        parts = decode_plan(self.plan) if self.plan else []
        return [RangesPartition(i, ranges) for i, ranges in enumerate(parts)] or [RangesPartition(0, [])]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, RangesPartition)  # (the partitions `partitions` made)
        yield from read_partition(partition.ranges, inline=self.inline)


def read_partition(ranges: list[PlannedRange], *, inline: bool = False) -> Iterator[pa.RecordBatch]:
    """Record batches of PACKET_SCHEMA for the packets of `ranges`."""
    with fewer_collections():
        for r in ranges:
            pending = []
            for located in read_range_located(r):
                pending.append(located)
                if len(pending) >= BATCH_PACKETS:
                    yield packets_batch(r.cap, pending, inline=inline)
                    pending = []
            if pending:
                yield packets_batch(r.cap, pending, inline=inline)
