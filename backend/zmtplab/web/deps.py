"""Dependencies of the routes, as `Annotated` aliases: `def route(store: CaptureStoreDep)`.

Everything lives on `app.state` (set by `create_app`'s lifespan), so one process may
run several apps (tests do) without sharing state.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query
from starlette.requests import HTTPConnection

from ..i18n import pick_lang
from ..sessions import SessionManager
from .captures.packets import PacketDecoder
from .captures.store import CaptureStore
from .classes.registry import ClassRegistry
from .core.settings import Settings
from .corpus.runs import CorpusRuns
from .lessons.library import LessonLibrary
from .live.sources import LiveSources


def get_app_settings(conn: HTTPConnection) -> Settings:
    """The settings the app was created with."""
    return conn.app.state.settings


def get_capture_store(conn: HTTPConnection) -> CaptureStore:
    """The app's capture store."""
    return conn.app.state.captures


def get_packet_decoder(conn: HTTPConnection) -> PacketDecoder:
    """The app's tshark packet decoder."""
    return conn.app.state.packets


def get_session_manager(conn: HTTPConnection) -> SessionManager:
    """The app's session manager."""
    return conn.app.state.sessions


def get_corpus_runs(conn: HTTPConnection) -> CorpusRuns:
    """The app's corpus runs (the Spark pipeline over uploaded captures)."""
    return conn.app.state.corpus


def get_live_sources(conn: HTTPConnection) -> LiveSources:
    """The app's live sources (live captures and tap proxies)."""
    return conn.app.state.live


def get_class_registry(conn: HTTPConnection) -> ClassRegistry:
    """The app's classes (presenter mode)."""
    return conn.app.state.classrooms


def get_lesson_library(conn: HTTPConnection) -> LessonLibrary:
    """The app's lessons (the shipped ones and a teacher's own, each played once)."""
    return conn.app.state.lessons


def get_lang(conn: HTTPConnection,
             lang: Annotated[str | None, Query(max_length=16, description="`en` or `zh-CN` (else the "
                                                                          "Accept-Language header's choice)")] = None
             ) -> str:
    """The language to answer in: `?lang=`, then Accept-Language, else English (docs/architecture.md#languages)."""
    return pick_lang(lang, conn.headers.get("accept-language"))


SettingsDep = Annotated[Settings, Depends(get_app_settings)]
CaptureStoreDep = Annotated[CaptureStore, Depends(get_capture_store)]
PacketDecoderDep = Annotated[PacketDecoder, Depends(get_packet_decoder)]
SessionManagerDep = Annotated[SessionManager, Depends(get_session_manager)]
LiveSourcesDep = Annotated[LiveSources, Depends(get_live_sources)]
CorpusRunsDep = Annotated[CorpusRuns, Depends(get_corpus_runs)]
ClassRegistryDep = Annotated[ClassRegistry, Depends(get_class_registry)]
LessonLibraryDep = Annotated[LessonLibrary, Depends(get_lesson_library)]
LangDep = Annotated[str, Depends(get_lang)]
