"""The pipeline's transforms: pure functions from DataFrames to DataFrames.

Nothing here reads or writes files; `job.py` wires these between the packet source
(`source.py`) and the loads (`sink.py`). Each function is small enough to test on a handful of rows.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from .schemas import CONNECTION_SCHEMA, CONNECTIONS_COLUMNS, ZMTP_COUNTS, spark_schema
from .stages import connections_partition, lazy_gc


def group_packets(packets: DataFrame, partitions: int, by: str | None = None) -> DataFrame:
    """Packets of a connection together and in capture order: shuffled by `by` (default the
    connection key), sorted by (cap, flow, frame) within each partition."""
    keys = [by] if by else ["cap", "flow"]
    return packets.repartition(partitions, *keys).sortWithinPartitions("cap", "flow", "frame")


def tcp_connections(grouped_packets: DataFrame) -> DataFrame:
    """One row per TCP connection (schemas.CONNECTION_SCHEMA), from packets grouped by `group_packets`."""
    return grouped_packets.mapInArrow(lazy_gc(connections_partition), spark_schema(CONNECTION_SCHEMA))


def number_connections(conns: DataFrame, partitions: int | None = None) -> DataFrame:
    """Adds `conn`: "0", "1", ... per capture in order of the frame that opened the connection,
    which is how `zmtplab dissect` (and Wireshark's tcp.stream) number them.

    `partitions` sets the shuffle's width (the session default is often far too wide for a
    table of connections, and a cached plan is not coalesced by adaptive execution)."""
    if partitions:
        conns = conns.repartition(partitions, "cap")
    w = Window.partitionBy("cap").orderBy("first_frame")
    return conns.withColumn("conn", (F.row_number().over(w) - 1).cast("string"))


# What a packet costs, in payload bytes of work: dense small-message traffic (many events a packet)
# costs far more per byte than bulk transfers. Fitted on the reference captures: a dissect task takes
# about 40 times longer over bulk.pcapng (5.7 MB, 7,035 packets) than over large.pcapng (1 MB, 53).
PACKET_COST = 8000


def flow_costs(conns: DataFrame) -> DataFrame:
    """An estimate of each flow's dissection work (payload bytes plus a per-packet charge)."""
    return conns.groupBy("cap", "flow").agg(
        F.sum(F.col("bytes_c2s") + F.col("bytes_s2c") + F.col("packets") * PACKET_COST).alias("cost"))


def connection_table(conn_ids: DataFrame, zmtp_stats: DataFrame, captures: DataFrame) -> DataFrame:
    """The `connections` table: every TCP connection (from the connections pass) with what ZMTP
    said on it (the dissect tasks' per-connection counts, schemas.ZMTP_STATS_SCHEMA)."""
    names = captures.select("cap", F.col("name").alias("capture"))
    out = (conn_ids.join(F.broadcast(names), "cap", "left")
           .join(zmtp_stats, ["capture", "conn"], "left")
           .fillna(0, subset=[*ZMTP_COUNTS, "unreadable"])
           # A connection whose only events are the `unreadable` notes is listed, but not as ZMTP.
           .withColumn("zmtp", F.col("events") > F.col("unreadable")))
    return out.select(*CONNECTIONS_COLUMNS)


# --------------------------------------------------------------------------- report aggregates


def kind_counts(connections: DataFrame) -> DataFrame:
    """Events by kind, from the per-connection counts of the connections table (one row)."""
    names = {"greeting": "greetings", "command": "commands", "frame": "frames", "message": "messages",
             "expert": "experts", "gap": "gaps"}
    return connections.agg(*(F.coalesce(F.sum(col), F.lit(0)).alias(kind) for kind, col in names.items()))


def versions_mechanisms(connections: DataFrame) -> DataFrame:
    """ZMTP connections by negotiated version (both directions when they differ) and mechanism."""
    v1, v2 = F.col("version_c2s"), F.col("version_s2c")
    version = F.when(v1.isNull() & v2.isNull(), F.lit("?")).when(
        F.coalesce(v1, F.lit("?")) == F.coalesce(v2, F.lit("?")), v1).otherwise(
        F.concat_ws(" / ", F.coalesce(v1, F.lit("?")), F.coalesce(v2, F.lit("?"))))
    return (connections.where("zmtp")
            .groupBy(version.alias("version"), F.coalesce("mechanism", F.lit("-")).alias("mechanism"))
            .count().orderBy(F.desc("count")))


def socket_pairs(connections: DataFrame) -> DataFrame:
    """ZMTP connections by (client socket type, server socket type)."""
    return (connections.where("zmtp")
            .groupBy(F.coalesce("socket_type_client", F.lit("?")).alias("client"),
                     F.coalesce("socket_type_server", F.lit("?")).alias("server"))
            .count().orderBy(F.desc("count")))


def message_histogram(events: DataFrame) -> DataFrame:
    """Messages counted by (size bucket, whole second): both the size distribution and the
    messages over time come from this one small aggregate. Bucket b holds body sizes in
    [2^(b-1), 2^b) octets; bucket 0 holds empty messages."""
    size = F.col("message_size")
    bucket = F.when(size <= 0, F.lit(0)).otherwise(F.floor(F.log2(size)).cast("int") + 1)
    return (events.where(F.col("kind") == "message")
            .groupBy(bucket.alias("bucket"), F.floor("ts").cast("long").alias("second")).count())


def expert_kinds(events: DataFrame) -> DataFrame:
    """Expert events by severity and rule, with one example text."""
    return (events.where(F.col("kind") == "expert")
            .groupBy(F.col("severity"), F.coalesce("rule", F.lit("-")).alias("rule"))
            .agg(F.count(F.lit(1)).alias("count"), F.first("text").alias("example"))
            .orderBy(F.desc("count")))


def capture_summary(connections: DataFrame) -> DataFrame:
    return (connections.groupBy("capture")
            .agg(F.count(F.lit(1)).alias("connections"), F.sum(F.col("zmtp").cast("long")).alias("zmtp"),
                 F.sum("events").alias("events"), F.sum("messages").alias("messages"),
                 F.sum("experts").alias("experts"))
            .orderBy(F.desc("events")))
