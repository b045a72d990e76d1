"""Settings of the web app, from the environment (prefix `ZMTPLAB_`), e.g. `ZMTPLAB_PORT=9000`.

Presenter mode's class size is `ZMTPLAB_CLASS_MAX_STUDENTS` (1,000 by default: a lecture hall; the server's
other classes, their rates and timeouts are `web.classes.registry.ClassLimits`)."""

from __future__ import annotations

import os
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from ... import resources
from ...sessions.limits import DEFAULTS as SESSIONS
from ...sessions.limits import SessionLimits


def default_data_dir() -> Path:
    """Where uploads and their dissections live unless `ZMTPLAB_DATA_DIR` says otherwise."""
    cache = os.environ.get("XDG_CACHE_HOME")
    if cache:
        return Path(cache) / "zmtplab"
    home = Path.home()
    if home.is_dir() and os.access(home, os.W_OK):
        return home / ".cache" / "zmtplab"
    return Path(tempfile.gettempdir()) / f"zmtplab-{os.getuid()}"


class Settings(BaseSettings):
    """Everything an operator may tune; every limit the server enforces lives here."""

    model_config = SettingsConfigDict(env_prefix="ZMTPLAB_", env_file=None, extra="ignore")

    host: str = Field("127.0.0.1", description="the address `zmtplab serve` listens on (`--host`)")
    port: int = Field(8000, ge=0, le=65535, description="the port `zmtplab serve` listens on (`--port`)")

    # Where things are.
    data_dir: Path = Field(default_factory=default_data_dir,
                           description="uploads, their dissections and corpus runs (what survives a restart)")
    frontend_dir: Path | None = Field(default_factory=resources.frontend_dir,
                                      description="the web pages served at `/` (default: the package's own)")
    sample_captures_dir: Path | None = Field(default_factory=resources.sample_captures_dir,
                                             description="the sample captures lessons play (default: the "
                                                         "package's own)")
    tshark_path: str | None = Field(None, description="the tshark that decodes a packet's lower layers "
                                                     "(default: the one on PATH)")

    # Requests.
    max_json_body: int = Field(1 << 20, ge=1024, description="largest JSON request body in bytes")
    decode_max_bytes: int = Field(256 * 1024, ge=1, description="largest input of POST /api/decode, in octets")
    decode_max_body: int | None = Field(64 * 1024, description="bodies in decode results are cut to this")
    max_request_head: int = Field(32 * 1024, ge=1024, description="octets of a request's line and headers; more are "
                                                                  "refused with 431 (the connection closes)")
    max_request_headers: int = Field(100, ge=8, description="header fields of one request; more are refused with 431")
    request_head_timeout: float = Field(30.0, gt=0, description="seconds a connection has to send a request's "
                                                                "head (from its opening, or the request's first "
                                                                "octet); then 408 and the connection closes")
    max_connections_per_client: int = Field(4096, ge=1, description="connections one client address (an IPv6 /64) "
                                                                    "may hold open, websockets included (a class "
                                                                    "behind one NAT fits); more are answered 503")
    max_idle_connections_per_client: int = Field(256, ge=1, description="connections one client address may hold "
                                                                        "open without a request in progress; more "
                                                                        "are answered 503")
    max_connections: int | None = Field(None, ge=16, description="connections the server holds at most; at the "
                                                                 "limit the oldest idle one of the address holding "
                                                                 "the most goes (None: the file limit less 128)")
    body_idle_timeout: float = Field(30.0, gt=0, description="seconds a request body may stall (no new octets) before "
                                                             "the request is ended with 408 (an upload's slot freed)")

    # Captures.
    # A 1 GB capture is browsable in the viewer (issue 22.1): its store costs no memory per element.
    max_upload_bytes: int = Field(1280 * 1024 * 1024, ge=1, description="the largest capture one upload may hold; "
                                                                       "larger ones are refused with 413")
    max_expand_ratio: float = Field(256.0, ge=1, description="a compressed capture is read up to this many times "
                                                             "its size (16 MiB at least, `max_upload_bytes` at "
                                                             "most); its dissection stops there, keeping what it "
                                                             "read")
    max_captures_per_client: int = Field(20, ge=1, description="captures one client address may have stored (or "
                                                               "be uploading) at once; more are refused with 429")
    min_free_disk: int = Field(16 * 1024 * 1024, ge=0, description="uploads that would leave less free space on "
                                                                   "the data disk are refused with 507")
    max_captures: int = Field(100, ge=1, description="oldest captures are deleted beyond this")
    max_total_bytes: int = Field(4 * 1024 * 1024 * 1024, ge=1,
                                 description="oldest captures are deleted when the uploads take more than this")
    capture_ttl: float = Field(24 * 3600.0, gt=0, description="seconds a capture is kept after its upload")
    dissect_workers: int = Field(2, ge=1, description="uploads dissected at once (worker processes); more wait")
    dissect_executor: Literal["process", "thread"] = Field("process", description="where dissections run: "
                                                                                  "worker processes or threads")
    max_events_per_capture: int = Field(200_000_000, ge=1, description="elements kept of one capture; a capture "
                                                                      "with more keeps the first ones and says so")
    dissect_max_seconds: float = Field(600.0, gt=0, description="a dissection stops after this many seconds; the "
                                                                "capture ends `error`, keeping what was read")
    store_max_body: int = Field(16 * 1024 * 1024, ge=4096, description="bodies are stored up to this many octets")
    list_max_body: int = Field(1024, ge=0, description="bodies in event lists are cut to this many octets")
    event_max_body: int = Field(1024 * 1024, ge=0, description="bodies in a single event are cut to this")
    events_max_limit: int = Field(1000, ge=1, description="most events one page may hold")
    search_max_seconds: float = Field(10.0, gt=0, description="a text search (`q`) answers after this many seconds "
                                                              "with what it found so far (`searched` of `elements`); "
                                                              "`more=1` searches on from there")
    search_first_seconds: float = Field(1.0, gt=0, description="a text search that has found its page's matches "
                                                                "answers after this many seconds (partial: `more=1` "
                                                                "searches on); until `search_max_seconds` otherwise")
    max_searches_per_client: int = Field(2, ge=1, description="text searches one client address may run at once; "
                                                              "more are refused with 429")
    packet_cache_size: int = Field(512, ge=0, description="packets whose lower layers (tshark) are kept")
    packet_timeout: float = Field(60.0, gt=0, description="seconds tshark may take to decode one packet")
    progress_interval: float = Field(0.25, gt=0, description="seconds between progress messages")

    # Sessions.
    max_sessions: int = Field(SESSIONS.max_sessions, ge=1,
                              description="playground sessions at once; more are refused with 429")
    max_sessions_per_client: int = Field(SESSIONS.max_sessions_per_client, ge=1,
                                         description="sessions one client address may run at once")
    session_reserve: int = Field(SESSIONS.session_reserve, ge=0,
                                 description="the last sessions of `max_sessions` only an address running "
                                             "none may start (429 for the others)")
    session_max_connections: int = Field(SESSIONS.session_max_connections, ge=1,
                                         description="connections (peers through the tap) open at once "
                                                     "in one session")
    session_max_messages: int = Field(SESSIONS.session_max_messages, ge=1,
                                      description="messages (and faults) one session carries; "
                                                  "`reset` starts the count again")
    session_max_sent_bytes: int = Field(SESSIONS.session_max_sent_bytes, ge=1,
                                        description="payload octets all messages of one "
                                                    "session carry together, counted once "
                                                    "per delivery (a PUB's message to 23 "
                                                    "SUBs counts 23 times)")
    session_max_wire_bytes: int = Field(SESSIONS.session_max_wire_bytes, ge=0,
                                        description="wire bytes one session keeps for "
                                                    "its pcapng export")
    session_idle_timeout: float = Field(SESSIONS.session_idle_timeout, gt=0,
                                        description="seconds without a command before a session ends")
    session_grace: float = Field(SESSIONS.session_grace, ge=0,
                                 description="seconds a session outlives its last websocket")
    session_max_events: int = Field(SESSIONS.session_max_events, ge=1,
                                    description="events one session keeps (and streams)")
    session_max_event_bytes: int = Field(SESSIONS.session_max_event_bytes, ge=1024,
                                         description="octets of JSON text one session's events take together (what "
                                                     "its export and a socket that joins late are given); later "
                                                     "events are not kept")
    session_event_max_body: int = Field(SESSIONS.session_event_max_body, ge=64,
                                        description="octets of its body (all its frames' together, for a message) "
                                                    "an event of a session keeps; longer ones are cut (`truncated`), "
                                                    "the whole bytes staying in the pcapng export")
    session_max_queue_bytes: int = Field(SESSIONS.session_max_queue_bytes, ge=64 * 1024,
                                         description="octets of messages queued for one session websocket; a socket "
                                                     "further behind is closed (1013) and may reconnect")
    ws_max_message: int = Field(1 << 20, ge=1024, description="largest websocket command, in bytes")
    ws_rate: float = Field(200.0, gt=0, description="websocket commands per second (token bucket refill)")
    ws_burst: int = Field(200, ge=1, description="websocket commands allowed at once (token bucket size)")
    ws_abuse_limit: int = Field(200, ge=1, description="refused websocket commands within `ws_abuse_window` "
                                                       "seconds before the socket is closed (1008)")
    ws_abuse_window: float = Field(10.0, gt=0, description="seconds over which refused commands are counted")
    session_max_frames: int = Field(SESSIONS.session_max_frames, ge=1, description="most frames in one `send` command")
    session_max_body: int = Field(SESSIONS.session_max_body, ge=0,
                                  description="largest frame a `send` command may carry")
    sim_step_interval: float = Field(SESSIONS.sim_step_interval, ge=0,
                                     description="seconds between elements of a playing simulated "
                                                            "session at speed 1")

    session_external_host: str = Field(SESSIONS.session_external_host,
                                       description="the address a real topology session listens on for its "
                                                   "external nodes' programs (an ephemeral port each; '0.0.0.0': "
                                                   "every interface)")
    session_external_advertise: str = Field(SESSIONS.session_external_advertise,
                                            description="the host an external node's `endpoint` names (empty: "
                                                        "the listening host, or the host the page reached the "
                                                        "server by when that is every interface)")
    session_external_max_held: int = Field(SESSIONS.session_external_max_held, ge=4096,
                                           description="octets one direction of an external node's connection "
                                                       "holds for an element not yet complete; a larger one is "
                                                       "an error: the connection is closed")
    session_external_cpu_share: float = Field(SESSIONS.session_external_cpu_share, gt=0, le=1,
                                              description="the share of a core the dissection of one external "
                                                          "node's connection may take (a faster peer is slowed "
                                                          "down)")
    session_external_handshake_timeout: float = Field(SESSIONS.session_external_handshake_timeout, gt=0,
                                              description="seconds an external node's connection has to finish "
                                                          "its greeting and handshake; then it is closed")

    # Live sources (a live capture on an interface, or a tap proxy).
    max_live_sources: int = Field(4, ge=1, description="live sources running at once")
    live_max_lifetime: float = Field(3600.0, gt=0, description="seconds a live source runs at most")
    live_grace: float = Field(30.0, ge=0, description="seconds a live source outlives its last websocket")
    live_max_events: int = Field(20_000, ge=1, description="recent events a live source keeps for late viewers")
    live_max_history_bytes: int = Field(64 * 1024 * 1024, ge=1024,
                                        description="JSON text of the recent events a live source keeps, in bytes")
    live_max_body: int = Field(16 * 1024, ge=0, description="bodies in live events are cut to this many octets")
    live_queue: int = Field(5_000, ge=16, description="events waiting for one slow websocket (oldest dropped)")
    live_max_held: int = Field(4 * 1024 * 1024, ge=4096,
                               description="octets one direction of a tap's or live capture's connection holds for "
                                           "an element not yet complete; a larger frame is reported as it streams "
                                           "and its body skipped (an `expert` note, rule `budget`)")
    live_cpu_share: float = Field(0.5, gt=0, le=1, description="the share of a core one tap's dissection may take "
                                                               "(it rests in between; a peer that sends faster is "
                                                               "slowed down)")
    live_max_event_rate: float = Field(5_000.0, gt=0, description="events a second a live source hands to its "
                                                                  "viewers (bursts of as many); more are dropped "
                                                                  "and counted in `dropped`")
    live_tap_host: str = Field("127.0.0.1", description="the address tap proxies listen on")
    live_tap_targets: list[str] = Field(["127.0.0.1", "localhost", "::1"],
                                        description="hosts a tap may forward to, and a real session may connect to "
                                                    "for an external node with an `endpoint` ('*': any)")

    # Corpus runs (the Spark pipeline over uploaded captures, the Corpus page).
    corpus_master: str = Field("local[2]", description="the Spark master of corpus runs (the session is started at "
                                                        "the first run and kept until the server stops)")
    corpus_spark_conf: dict[str, str] = Field({"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "8"},
                                              description="Spark settings of the session corpus runs use (JSON)")
    max_corpus_runs: int = Field(20, ge=1, description="corpus runs kept; the oldest finished ones are deleted beyond "
                                                       "(the newest finished one stays)")
    max_corpus_bytes: int = Field(2 * 1024 * 1024 * 1024, ge=1,
                                  description="octets of corpus tables and reports kept; the oldest finished runs "
                                              "are deleted beyond (the newest is kept whatever its size)")
    corpus_ttl: float = Field(24 * 3600.0, gt=0, description="seconds a corpus run is kept after it started")
    corpus_max_captures: int = Field(100, ge=1, description="captures one corpus run may take")
    corpus_max_seconds: float = Field(3600.0, gt=0, description="a corpus run is cancelled after this many seconds")

    # Lessons.
    lessons_dir: Path | None = Field(None, description="a directory of your own lessons: YAML files in the format "
                                     "of backend/zmtplab/lessons/README.md, listed with the shipped ones (a lesson "
                                     "with a shipped one's id replaces it), their translations in its zh-CN/, "
                                     "the captures their steps play beside them (or among the shipped samples); "
                                     "`zmtplab lessons check DIR` checks them")

    # Presenter mode (the other limits of classes are `web.classes.registry.ClassLimits`).
    class_max_students: int = Field(1000, ge=1, description="students one class may have at once "
                                                            "(`ZMTPLAB_CLASS_MAX_STUDENTS`); more are refused "
                                                            "with close code 4429")

    # Background work.
    reap_interval: float = Field(10.0, gt=0, description="seconds between reaper passes")

    @property
    def captures_dir(self) -> Path:
        """Where uploads are stored, one directory per capture id."""
        return self.data_dir / "captures"

    @property
    def corpus_dir(self) -> Path:
        """Where corpus runs are kept, one directory per run id."""
        return self.data_dir / "corpus"

    def session_limits(self) -> SessionLimits:
        """What sessions may hold and do, as these settings set it (`sessions.SessionLimits`)."""
        return SessionLimits.of(self)


@lru_cache
def get_settings() -> Settings:
    """The process-wide settings, read from the environment once."""
    return Settings()
