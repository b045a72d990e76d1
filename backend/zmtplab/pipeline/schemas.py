"""Every table the pipeline makes, its intermediate rows and its Parquet outputs, in one place.

Arrow schemas (pyarrow) for what the Python tasks make and read, Spark DDL strings for the small tables
the driver writes through Spark, and `spark_schema` between the two. Outputs (docs/pipeline.md):
`events` (EVENTS_SCHEMA), `connections` (CONNECTIONS_COLUMNS of the connections pass and the dissect
tasks' counts), `topology`, `findings` and `errors`. Intermediate: PACKET_SCHEMA (the data source's
rows), CONNECTION_SCHEMA (the connections pass), STAGE_SCHEMA (the dissect stage's events, before their
connection gets its id), ZMTP_STATS_SCHEMA (per-connection counts) and FILE_SCHEMA (what a task wrote).

Nothing here computes: the modules that fill these tables import them, so none imports another for a
schema.
"""

from __future__ import annotations

import pyarrow as pa

# --------------------------------------------------------------------------- events

# Kind-specific keys of the event contract with a column of their own: name -> (arrow type, python
# types a value must have to go in it; anything else goes to `extra`).
_STR, _INT, _BOOL = (str,), (int,), (bool,)
SCALAR_COLUMNS: dict[str, tuple[pa.DataType, tuple[type, ...]]] = {
    # greeting
    "version": (pa.string(), _STR),
    "mechanism": (pa.string(), _STR),
    "as_server": (pa.bool_(), _BOOL),
    "socket_type": (pa.string(), _STR),
    "identity": (pa.string(), _STR),
    "hex": (pa.string(), _STR),
    # command
    "name": (pa.string(), _STR),
    "reason": (pa.string(), _STR),
    "ttl": (pa.int64(), _INT),
    "context": (pa.string(), _STR),
    "topic": (pa.string(), _STR),
    "username": (pa.string(), _STR),
    "password": (pa.string(), _STR),
    "group": (pa.string(), _STR),
    "encrypted": (pa.bool_(), _BOOL),
    "box_size": (pa.int64(), _INT),
    # frame
    "more": (pa.bool_(), _BOOL),
    "long": (pa.bool_(), _BOOL),
    "size": (pa.int64(), _INT),
    "body": (pa.string(), _STR),
    "truncated": (pa.bool_(), _BOOL),
    # expert
    "severity": (pa.string(), _STR),
    "text": (pa.string(), _STR),
    "rule": (pa.string(), _STR),
}

FIELD_TYPE = pa.struct([
    pa.field("name", pa.string()),
    pa.field("offset", pa.int64()),
    pa.field("length", pa.int64()),
    pa.field("value", pa.string()),
    pa.field("rule", pa.string()),
    pa.field("note", pa.string()),
])
STR_MAP = pa.map_(pa.string(), pa.string())

# The columns the dissect stage emits, in order. `cap` and `first_frame` identify the connection
# (capture index, frame that opened it) until the driver maps them to `capture` and `conn`.
STAGE_SCHEMA = pa.schema([
    pa.field("cap", pa.int32()),
    pa.field("first_frame", pa.int64()),
    pa.field("seq", pa.int64()),
    pa.field("emit_frame", pa.int64()),
    pa.field("dir", pa.string()),
    pa.field("offset", pa.int64()),
    pa.field("length", pa.int64()),
    pa.field("kind", pa.string()),
    pa.field("ts", pa.float64()),
    pa.field("packets", pa.list_(pa.int64())),
    pa.field("fields", pa.list_(FIELD_TYPE)),
    *(pa.field(name, t) for name, (t, _py) in SCALAR_COLUMNS.items()),
    pa.field("properties", STR_MAP),
    pa.field("frames", pa.list_(pa.string())),
    pa.field("message_size", pa.int64()),
    pa.field("extra", STR_MAP),
])

# Columns of the stage and `events` tables that are not contract keys.
PIPELINE_COLUMNS = frozenset({"capture", "seq", "emit_frame", "message_size", "extra", "cap", "first_frame"})

EVENT_HEAD = ["capture", "conn", "dir", "offset", "length", "kind", "ts", "packets", "fields"]
EVENT_TAIL = ["seq", "emit_frame", "message_size", "extra"]


def _events_schema() -> pa.Schema:
    by_name = {f.name: f for f in STAGE_SCHEMA}
    middle = [f.name for f in STAGE_SCHEMA if f.name not in EVENT_HEAD and f.name not in EVENT_TAIL
              and f.name not in ("cap", "first_frame")]
    fields = [pa.field("capture", pa.string()), pa.field("conn", pa.string())]
    fields += [by_name[n] for n in [*EVENT_HEAD[2:], *middle, *EVENT_TAIL]]
    return pa.schema(fields)


# The `events` table: the stage's columns with `capture` and `conn` for `cap` and `first_frame`.
EVENTS_SCHEMA = _events_schema()

# --------------------------------------------------------------------------- packets and connections

PACKET_SCHEMA = pa.schema([
    pa.field("cap", pa.int32()),
    pa.field("flow", pa.int64()),
    pa.field("frame", pa.int64()),
    pa.field("ts", pa.float64()),
    pa.field("src", pa.string()),
    pa.field("dst", pa.string()),
    pa.field("sport", pa.int32()),
    pa.field("dport", pa.int32()),
    pa.field("seq", pa.int64()),
    pa.field("ack", pa.int64()),
    pa.field("flags", pa.int32()),
    pa.field("plen", pa.int32()),
    pa.field("missing", pa.int64()),
    pa.field("poff", pa.int64()),  # where the payload sits in the capture file, when it was located
    pa.field("payload", pa.binary()),  # the payload itself otherwise (gzip files, odd frames)
    pa.field("window", pa.int32()),  # the TCP window field (the reassembler notes zero windows)
])

# One row per TCP connection from the connections pass (reassembly only).
CONNECTION_SCHEMA = pa.schema([
    pa.field("cap", pa.int32()),
    pa.field("flow", pa.int64()),
    pa.field("first_frame", pa.int64()),
    pa.field("last_frame", pa.int64()),
    pa.field("client_ip", pa.string()),
    pa.field("client_port", pa.int32()),
    pa.field("server_ip", pa.string()),
    pa.field("server_port", pa.int32()),
    pa.field("syn_seen", pa.bool_()),
    pa.field("first_ts", pa.float64()),
    pa.field("last_ts", pa.float64()),
    pa.field("close_reason", pa.string()),
    pa.field("bytes_c2s", pa.int64()),
    pa.field("bytes_s2c", pa.int64()),
    pa.field("gap_bytes_c2s", pa.int64()),
    pa.field("gap_bytes_s2c", pa.int64()),
    pa.field("packets", pa.int64()),
])

# What each connection said in ZMTP, counted by the dissect tasks.
ZMTP_STATS_SCHEMA = pa.schema([
    pa.field("capture", pa.string()),
    pa.field("conn", pa.string()),
    pa.field("events", pa.int64()),
    pa.field("greetings", pa.int64()),
    pa.field("frames", pa.int64()),
    pa.field("messages", pa.int64()),
    pa.field("message_bytes", pa.int64()),
    pa.field("commands", pa.int64()),
    pa.field("experts", pa.int64()),
    pa.field("expert_errors", pa.int64()),
    pa.field("gaps", pa.int64()),
    pa.field("unreadable", pa.int64()),  # notes on connections that could not be read as ZMTP (their only events)
    pa.field("version_c2s", pa.string()),
    pa.field("version_s2c", pa.string()),
    pa.field("mechanism", pa.string()),
    pa.field("socket_type_client", pa.string()),
    pa.field("socket_type_server", pa.string()),
])
ZMTP_COUNTS = ["events", "greetings", "frames", "messages", "message_bytes", "commands", "experts", "expert_errors",
               "gaps"]

# The `connections` table, in order: the connections pass's TCP facts, then the ZMTP ones.
CONNECTIONS_COLUMNS = [
    "capture", "conn", "client_ip", "client_port", "server_ip", "server_port", "syn_seen", "first_frame",
    "last_frame", "first_ts", "last_ts", "close_reason", "packets", "bytes_c2s", "bytes_s2c", "gap_bytes_c2s",
    "gap_bytes_s2c", "zmtp", "version_c2s", "version_s2c", "mechanism", "socket_type_client",
    "socket_type_server", *ZMTP_COUNTS,
]

# One row per file a task wrote: "events" (a part of the table), "stats" (ZMTP_STATS_SCHEMA) or "feed"
# (the analysis items of capture `cap`, pipeline.feed: one row per capture in the file).
FILE_SCHEMA = pa.schema([
    pa.field("kind", pa.string()),
    pa.field("path", pa.string()),
    pa.field("rows", pa.int64()),
    pa.field("bytes", pa.int64()),
    pa.field("cap", pa.int32()),
])

# --------------------------------------------------------------------------- the driver's tables (Spark DDL)

CAPTURES_SCHEMA = "cap int, name string, size long, format string, frames long"
ERRORS_SCHEMA = "capture string, kind string, message string, offset long, frame long"
TOPOLOGY_SCHEMA = (
    "capture string, conn string, client string, server string, client_type string, server_type string, "
    "client_node string, server_node string, broker boolean, valid_pair boolean, zmtp boolean, version string, "
    "mechanism string, identity_c2s string, identity_s2c string, messages_c2s long, messages_s2c long, "
    "first_ts double, last_ts double"
)
FINDINGS_SCHEMA = (
    "capture string, rule string, severity string, conns array<string>, text string, ref string, "
    "event_conn string, event_dir string, event_offset long, event_packets array<long>, details string"
)  # details: the finding's numbers by name, as JSON (`zmtplab analyze --json`'s `details`)


def spark_schema(arrow_schema: pa.Schema):
    """The Spark StructType of an Arrow schema built from the types used here."""
    from pyspark.sql import types as T

    def conv(t: pa.DataType):
        if t == pa.string():
            return T.StringType()
        if t == pa.int64():
            return T.LongType()
        if t == pa.int32():
            return T.IntegerType()
        if t == pa.float64():
            return T.DoubleType()
        if t == pa.bool_():
            return T.BooleanType()
        if t == pa.binary():
            return T.BinaryType()
        if pa.types.is_map(t):
            return T.MapType(conv(t.key_type), conv(t.item_type), True)
        if pa.types.is_list(t):
            return T.ArrayType(conv(t.value_type), True)
        if pa.types.is_struct(t):
            return T.StructType([T.StructField(f.name, conv(f.type), True) for f in t])
        raise TypeError(f"no Spark type for {t}")

    return T.StructType([T.StructField(f.name, conv(f.type), True) for f in arrow_schema])
