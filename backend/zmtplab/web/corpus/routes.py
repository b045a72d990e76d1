"""Corpus routes: start the Spark pipeline over uploaded captures, follow it, read its report and tables."""

from __future__ import annotations

import asyncio
from pathlib import Path as FilePath
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Path, Query, Request, Response, status
from fastapi.responses import StreamingResponse

from ...engine.events import WIRE_KINDS
from ...i18n import translate
from ..core.jsontext import json_bytes
from ..core.limits import client_address
from ..core.models import ErrorResponse
from ..core.sse import event_stream
from ..deps import CaptureStoreDep, CorpusRunsDep, LangDep, SettingsDep
from .models import (
    CorpusProgress,
    CorpusRun,
    CorpusRunCreated,
    CorpusRunRequest,
    CorpusRuns,
    CorpusStatus,
    StoredCapture,
    StoredCaptures,
    TablePage,
)
from .report import report_csp, report_name
from .tables import FILTERS, TABLES, TableQuery

router = APIRouter(prefix="/api/corpus", tags=["corpus"])

RunId = Annotated[str, Path(description="the id `POST /api/corpus/runs` returned", max_length=64)]
NOT_FOUND = {404: {"model": ErrorResponse, "description": "no run has this id"}}
NOT_READY = {409: {"model": ErrorResponse, "description": "the run is still running, or did not succeed"}}


@router.get("/status", response_model=CorpusStatus, summary="Whether corpus runs can start here")
async def corpus_status(runs: CorpusRunsDep, lang: LangDep) -> CorpusStatus:
    """`available`, or the `problem` (pyspark or Java missing) with what to install: the Corpus page says it
    before anyone ticks a capture."""
    problem = await runs.unavailable()
    return CorpusStatus(available=problem is None, problem=None if problem is None else translate(problem, lang))


@router.get("/captures", response_model=StoredCaptures, summary="Captures this client uploaded")
async def stored_captures(request: Request, store: CaptureStoreDep) -> StoredCaptures:
    """The uploads of this client address still on the server (newest first): what a run may take."""
    return StoredCaptures(captures=[StoredCapture(id=r.id, name=r.name, size=r.size, created=r.created,
                                                  state=r.state) for r in store.for_client(client_address(request))])


@router.post("/runs", status_code=status.HTTP_202_ACCEPTED, response_model=CorpusRunCreated,
             summary="Start a corpus run",
             responses={404: {"model": ErrorResponse, "description": "no capture has one of these ids"},
                        409: {"model": ErrorResponse, "description": "another run is in progress"},
                        422: {"model": ErrorResponse, "description": "no captures, or too many"},
                        503: {"model": ErrorResponse,
                              "description": "the server cannot run Spark (no pyspark or no Java: `GET "
                                             "/api/corpus/status`)"},
                        507: {"model": ErrorResponse, "description": "no disk space for the run"}})
async def start_run(body: CorpusRunRequest, request: Request, response: Response, store: CaptureStoreDep,
                    runs: CorpusRunsDep, settings: SettingsDep) -> CorpusRunCreated:
    """Starts the Spark pipeline over these uploaded captures; follow `GET /api/corpus/runs/{id}/progress`.

    One run at a time per server (Spark's session is per process): a second start answers 409.
    """
    ids = list(dict.fromkeys(body.captures))  # the order given, duplicates once
    if len(ids) > settings.corpus_max_captures:
        raise HTTPException(422, f"a run takes at most {settings.corpus_max_captures} captures ({len(ids)} given)")
    records = [store.get(capture_id) for capture_id in ids]
    try:
        record = await runs.create(records, client_address(request))
    except FileNotFoundError:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "a capture of the run was deleted meanwhile") from None
    except OSError as exc:
        raise HTTPException(status.HTTP_507_INSUFFICIENT_STORAGE,
                            f"the run could not be prepared on the server's disk: {exc.strerror or exc}") from None
    response.headers["Location"] = f"/api/corpus/runs/{record.id}"
    return CorpusRunCreated(id=record.id)


@router.get("/runs", response_model=CorpusRuns, summary="This client's corpus runs")
async def list_runs(request: Request, runs: CorpusRunsDep) -> Any:
    """The runs this client address started and the server still keeps, newest first."""
    return {"runs": [r.public() for r in runs.for_client(client_address(request))]}


@router.get("/runs/{run_id}", response_model=CorpusRun, summary="A corpus run", responses=NOT_FOUND)
async def get_run(run_id: RunId, runs: CorpusRunsDep) -> Any:
    """Its state and progress, its captures and, once done, what it found."""
    return runs.get(run_id).public()


@router.get("/runs/{run_id}/progress", summary="Run progress (server-sent events)", response_class=StreamingResponse,
            responses={200: {"content": {"text/event-stream": {}},
                             "description": "`data: {state, phase, fraction, tasks_done, tasks_total, elapsed, "
                                            "detail}` until the run ends"}, **NOT_FOUND})
async def run_progress(run_id: RunId, runs: CorpusRunsDep) -> StreamingResponse:
    """Streams the run's progress whenever it changes (at least every second) until done, error or cancelled."""
    return await event_stream(runs.progress(run_id), lambda message: json_bytes(CorpusProgress(**message).model_dump()))


@router.post("/runs/{run_id}/cancel", status_code=status.HTTP_202_ACCEPTED, response_model=CorpusRun,
             summary="Cancel a running run", responses={**NOT_FOUND, 409: {"model": ErrorResponse,
                                                                            "description": "the run is not running"}})
async def cancel_run(run_id: RunId, runs: CorpusRunsDep) -> Any:
    """Stops the run's Spark jobs; the run ends `cancelled` (its partial tables removed), the record is kept."""
    return (await runs.cancel(run_id)).public()


@router.delete("/runs/{run_id}", status_code=status.HTTP_204_NO_CONTENT, summary="Delete a run",
               responses=NOT_FOUND)
async def delete_run(run_id: RunId, runs: CorpusRunsDep) -> Response:
    """Deletes the run, its tables and report (cancelling it first when it runs)."""
    await runs.delete(run_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/runs/{run_id}/report", summary="The run's HTML report", response_class=Response,
            responses={200: {"content": {"text/html": {}}}, **NOT_FOUND, **NOT_READY})
async def run_report(run_id: RunId, runs: CorpusRunsDep, lang: LangDep) -> Response:
    """The pipeline's report (inline SVG plots), sandboxed by a Content-Security-Policy of its own: no script,
    its style blocks allowed by hash, framed by this app's pages only; in the language asked for (`?lang=`,
    Accept-Language), English when the run has no report in it."""
    record = runs.ready(run_id)
    page = await asyncio.to_thread(_read, record.out_dir / report_name(lang))
    if page is None and lang != "en":
        page = await asyncio.to_thread(_read, record.out_dir / report_name("en"))
    if page is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "the run has no report")
    return Response(page, media_type="text/html; charset=utf-8",
                    headers={"Content-Security-Policy": report_csp(page), "X-Frame-Options": "SAMEORIGIN"})


def _read(path: FilePath) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


@router.get("/runs/{run_id}/tables/{table}", response_model=TablePage, summary="A page of a run's table",
            responses={**NOT_FOUND, **NOT_READY, 422: {"model": ErrorResponse}})
async def run_table(
    run_id: RunId,
    table: Annotated[str, Path(max_length=32, description="events, connections or errors")],
    runs: CorpusRunsDep,
    settings: SettingsDep,
    offset: Annotated[int, Query(ge=0, le=2**40)] = 0,
    limit: Annotated[int, Query(ge=1, description="at most the server's limit (1000 by default)")] = 100,
    capture: Annotated[str | None, Query(max_length=64, description="one capture of the run (its id)")] = None,
    kind: Annotated[str | None, Query(max_length=40, description="events: an event kind; errors: an error kind")]
    = None,
    conn: Annotated[str | None, Query(pattern=r"^[0-9]{1,12}$", description="one connection number")] = None,
    dir: Annotated[Literal["c2s", "s2c"] | None, Query(description="events: one direction")] = None,
    fields: Annotated[bool, Query(description="events: 1 to include each event's fields")] = False,
) -> Response:
    """Rows of `events`, `connections` or `errors` in display order (events as `zmtplab dissect` lists them
    within each capture), `total` counting the matches. `capture` values are capture ids."""
    if table not in TABLES:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no table {table!r}; one of {', '.join(TABLES)}")
    given = {name for name, value in (("capture", capture), ("kind", kind), ("conn", conn), ("dir", dir))
             if value is not None}
    extra = sorted(given - set(FILTERS[table]))  # a filter another table has is refused, not ignored
    if extra:
        raise HTTPException(422, f"the {table} table has no {extra[0]!r} filter")
    if table == "events" and kind is not None and kind not in WIRE_KINDS:
        raise HTTPException(422, f"unknown kind {kind!r}; one of {', '.join(WIRE_KINDS)}")
    record = runs.ready(run_id)
    value = None
    if capture is not None:
        value = record.capture_input(capture)
        if value is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, f"the run has no capture {capture!r}")
    limit = min(limit, settings.events_max_limit)
    query = TableQuery(table=table, offset=offset, limit=limit, capture=value, kind=kind, conn=conn, dir=dir,
                       fields=fields and table == "events")
    rows, total = await runs.page(run_id, query)  # (RunNotFound too: deleted while the page was read)
    return Response(json_bytes({"rows": rows, "total": total, "offset": offset, "limit": limit}),
                    media_type="application/json")
