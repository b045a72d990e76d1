"""Pydantic models of the corpus routes (`/api/corpus/...`): runs, their progress and table pages."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, StringConstraints

RunState = Literal["running", "done", "error", "cancelled"]
CaptureId = Annotated[str, StringConstraints(min_length=1, max_length=64)]


class CorpusRunRequest(BaseModel):
    """The captures (ids from `POST /api/captures`) a run dissects, in the order its tables list them."""

    captures: list[CaptureId] = Field(..., min_length=1, max_length=10_000)


class CorpusStatus(BaseModel):
    """Whether this server can start corpus runs."""

    available: bool
    problem: str | None = Field(None, description="why runs cannot start here and what to install (in the "
                                                  "request's language); null when they can")


class CorpusRunCreated(BaseModel):
    id: str


class StoredCapture(BaseModel):
    """An uploaded capture a run may take."""

    id: str
    name: str
    size: int
    created: float
    state: str


class StoredCaptures(BaseModel):
    captures: list[StoredCapture]


class CorpusCapture(BaseModel):
    """One capture of a run: `name` labels it in the report (made unique within the run)."""

    id: str
    name: str
    size: int


class CorpusSummary(BaseModel):
    """What a finished run found."""

    captures: int = Field(description="captures read")
    inputs: int
    bytes: int
    frames: int
    connections: int = Field(description="TCP connections")
    zmtp_connections: int
    events: int
    events_by_kind: dict[str, int]
    errors: int = Field(description="rows of the `errors` table (damaged or unreadable inputs)")
    damaged: list[str] = Field(description="ids of the captures with an error row")
    seconds: float | None
    report: bool


class CorpusProgress(BaseModel):
    """One server-sent event of `GET /api/corpus/runs/{id}/progress`."""

    state: RunState
    phase: str = Field(description="`starting Spark`, then the pipeline's: start, plan, connections, events, "
                                   "tables, report")
    fraction: float = Field(description="0..1 for the whole run; never goes back")
    tasks_done: int
    tasks_total: int
    elapsed: float = Field(description="seconds since the run started")
    detail: str = ""


class CorpusRun(CorpusProgress):
    id: str
    created: float
    finished: float | None
    error: str | None
    captures: list[CorpusCapture]
    summary: CorpusSummary | None


class CorpusRuns(BaseModel):
    runs: list[CorpusRun]


class TablePage(BaseModel):
    """Rows of a table in display order; `total` counts the rows matching the filters."""

    rows: list[dict[str, Any]]
    total: int
    offset: int
    limit: int
