"""Presenter mode: classes a teacher leads and students follow, mirrored over websockets.

`POST /api/classes` makes a class: a 6-character join code (no 0/O, 1/I/L) and a teacher token.
The teacher's websocket (`/ws/classes/{code}?role=teacher`) proves itself with its first message,
`{"type": "auth", "token": "..."}`, sent within `ClassLimits.auth_timeout` seconds of connecting: the
token never travels in a URL, where access logs, proxies and browser history would keep it (a URL
with `?token=` is refused). Students (`?role=student`) send nothing special. Then the teacher sends
what it shows:

    {"type": "state", "lesson": "greeting", "step": 3,
     "selection": {"element": 0, "field": 2}, "highlights": [0, 2]}

and the server relays it (with a `seq`) to every student (`?role=student`); a student who joins late
gets the latest state at once. Students tell the server whether they follow or wander
(`{"type": "status", "following": bool}`), and the teacher sees the counts
(`{"type": "students", "count", "following"}`). `{"type": "end"}` from the teacher ends the class.

Answers (issue 32.9): a student's answer to a step's question goes to the class too,

    {"type": "answer", "lesson": "framing", "step": 3, "seat": "k2x9...", "lang": "zh-CN",
     "answer": {"choice": "255"}}          (or {"index", "field"} / {"index", "offset"}: a click)

checked as the lessons API checks it and counted once per `seat` (a student's own random id, kept across its
reconnects: the last answer counts). The teacher gets the question's tally at once, and again whenever it changes
or the teacher moves to another step:

    {"type": "answers", "lesson", "step", "answered", "students", "revealed",
     "tally": [{"answer": {"choice": 1} | {"field": "flags"} | {"offset": 11}, "count", "correct"}, ...]}

`{"type": "reveal", "lesson", "step"}` from the teacher shows the tally to the class as well (`revealed`: true):
until then the teacher's page shows how many answered, not what (its screen is the projector's).

Limits (`ClassLimits`): classes per server and per client address (an IPv6 address counts by its /64),
a reserve of classes only an address without one may start (so one school's script cannot take
presenter mode from every other teacher), students per class, message size and rate, and how long a
class lives without activity or without its teacher's socket (a class whose teacher never connects,
or left, ends within `teacher_grace`: a reload is back well before). A student whose socket cannot
keep up loses queued messages, never the latest state: the queue is cleared and refilled with the
current state.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import os
import secrets
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.jsontext import json_text
from ..core.limits import TokenBucket, address_key
from ..wspump import Outbox

log = logging.getLogger(__name__)

CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 6
MAX_GUESSERS = 10_000  # addresses whose wrong join codes are remembered (those with a full budget are forgotten)


@dataclass
class ClassLimits:
    """Every limit of presenter mode."""

    max_classes: int = 200
    max_classes_per_address: int = 4  # classes one client address (IPv6: one /64) may have at once
    reserve: int = 20  # the last classes of `max_classes` go only to addresses that have none yet
    teacher_grace: float = 120.0  # seconds a class lives without a teacher socket (never connected, or left)
    max_students: int = 1000  # the app takes it from `Settings.class_max_students` (ZMTPLAB_CLASS_MAX_STUDENTS)
    max_message: int = 16 * 1024  # octets of one websocket message
    max_highlights: int = 64
    max_questions: int = 200  # questions of one class whose answers are kept (the oldest go first)
    queue: int = 64  # messages queued per student before the queue is collapsed to the latest state
    ttl: float = 6 * 3600.0  # seconds a class lives after its last teacher activity
    idle: float = 30 * 60.0  # seconds a class lives with nobody connected
    auth_timeout: float = 5.0  # seconds a teacher's socket has to send its `auth` message
    max_pending_auth: int = 8  # teacher sockets of one client address waiting to send their `auth` message
    max_token: int = 200  # characters of a token in an `auth` message (real ones are 32)
    rate: float = 20.0  # messages a second one socket may send (token bucket refill)
    burst: int = 40  # messages one socket may send at once (token bucket size)
    abuse_limit: int = 100  # refused messages within `abuse_window` seconds before the socket is closed (1008)
    abuse_window: float = 10.0
    guess_rate: float = 2.0  # join codes a second one address (IPv6: one /64) may try that name no class
    guess_burst: int = 60  # such codes it may try at once (a room of students behind one address mistypes too)


class Peer:
    """One websocket of a class: its outbox (which keeps the latest state when it overflows) and what it
    reported."""

    def __init__(self, role: str, limit: int) -> None:
        self.role = role
        self.outbox = Outbox(limit, "latest")
        self.following = True
        self.closed = False

    def put(self, message: dict[str, Any]) -> None:
        self.put_text(json_text(message))

    def put_text(self, text: str, latest: str | None = None) -> None:
        """Queues a message; `latest` (the class's state) is what stays when the queue overflows."""
        if not self.closed:
            self.outbox.put_text(text, latest)

    def end(self, code: int = 1000) -> None:
        """No more messages: the socket closes with `code` once the queue is sent."""
        if not self.closed:
            self.outbox.end(code)


@dataclass
class Classroom:
    """One class: its join code, the teacher's token, the latest state and who is connected."""

    code: str
    token: str = field(repr=False)  # a secret: never in a repr that could reach a log
    created: float
    last_active: float
    last_seen: float
    owner: str = ""  # the address key (`address_key`) of the client that created it
    teacher_gone: float = 0.0  # since when no teacher socket is connected (its creation, or the teacher leaving)
    state: dict[str, Any] | None = None
    seq: int = 0
    teacher: Peer | None = None
    students: set[Peer] = field(default_factory=set)
    wandering: int = 0  # students in `students` who do not follow (kept as they change: counts are O(1))
    peak: int = 0  # most students at once since the class last emptied
    ended: bool = False
    # (lesson, step) -> seat -> (what it answered, as JSON text; whether that was right); in the order asked
    answers: dict[tuple[str, int], dict[str, tuple[str, bool]]] = field(default_factory=dict)
    revealed: set[tuple[str, int]] = field(default_factory=set)

    def check_token(self, token: str | None) -> bool:
        """Whether `token` is this class's teacher token (compared in constant time)."""
        return bool(token) and hmac.compare_digest(self.token.encode(), str(token).encode())

    def counts(self) -> dict[str, Any]:
        return {"type": "students", "count": len(self.students), "following": len(self.students) - self.wandering}

    def join(self, peer: Peer) -> None:
        """A student arrives."""
        self.students.add(peer)
        if not peer.following:
            self.wandering += 1
        self.peak = max(self.peak, len(self.students))

    def leave(self, peer: Peer) -> None:
        """A student leaves (again: nothing)."""
        if peer in self.students:
            self.students.discard(peer)
            if not peer.following:
                self.wandering -= 1

    def set_following(self, peer: Peer, following: bool) -> bool:
        """A student follows or wanders; whether that changed anything."""
        if peer.following == following:
            return False
        peer.following = following
        if peer in self.students:
            self.wandering += -1 if following else 1
        return True

    def record_answer(self, question: tuple[str, int], seat: str, key: dict[str, Any], correct: bool,
                      limits: ClassLimits) -> None:
        """A student's (last) answer to a question (`question`: lesson and step)."""
        seats = self.answers.get(question)
        if seats is None:
            while len(self.answers) >= limits.max_questions:
                oldest = next(iter(self.answers))
                del self.answers[oldest]
                self.revealed.discard(oldest)
            seats = self.answers[question] = {}
        if seat not in seats and len(seats) >= 2 * limits.max_students:
            return  # (seats are the students' own ids: more than twice a full class is not a class)
        seats[seat] = (json_text(key), correct)

    def tally(self, question: tuple[str, int]) -> dict[str, Any]:
        """The `answers` message of a question: how many answered, and how many gave each answer."""
        seats = self.answers.get(question, {})
        counts: Counter[tuple[str, bool]] = Counter(seats.values())
        tally = [{"answer": json.loads(key), "count": n, "correct": right}
                 for (key, right), n in sorted(counts.items(), key=lambda item: (-item[1], item[0][0]))]
        return {"type": "answers", "lesson": question[0], "step": question[1], "answered": len(seats),
                "students": len(self.students), "revealed": question in self.revealed, "tally": tally}

    def latest(self) -> dict[str, Any] | None:
        return {"type": "state", **self.state} if self.state is not None else None

    def tell_teacher(self) -> None:
        if self.teacher is not None:
            self.teacher.put(self.counts())

    def broadcast(self, message: dict[str, Any]) -> None:
        """Queues `message` for every student: serialized once, whatever the class's size, and the latest
        state (what a full queue keeps) too, once (the same text when `message` is that state)."""
        latest = self.latest()
        text = json_text(message)
        latest_text = None if latest is None else text if latest == message else json_text(latest)
        for student in list(self.students):
            student.put_text(text, latest_text)

    def public(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "students": len(self.students),
                               "following": len(self.students) - self.wandering,
                               "teacher": self.teacher is not None}
        if self.state is not None:
            out["lesson"] = self.state.get("lesson")
            out["step"] = self.state.get("step")
        return out


class ClassFull(Exception):
    """No room for another student (or another class)."""


class TooManyClasses(Exception):
    """This client address has as many classes as it may."""


class TooManyWaiting(Exception):
    """A client address has as many unauthenticated teacher sockets open as it may."""


class TooManyGuesses(Exception):
    """A client address tried more join codes that name no class than it may (answered before any lookup)."""


class ClassRegistry:
    """Every class of one app. With a `path` (the app's `DATA_DIR/classes.json`) the classes survive a restart of
    the server: their codes, teacher tokens, what the teacher shows and the answers collected are written there
    (`save`, by the app's reaper when something changed, and when the app stops; readable by the server's user
    only: it holds the tokens) and read back at the next start, each class then given its teacher's grace again
    (teachers and students reconnect by themselves)."""

    def __init__(self, limits: ClassLimits | None = None, clock=time.monotonic, path: Path | None = None) -> None:
        self.limits = limits or ClassLimits()
        self.clock = clock
        self.classes: dict[str, Classroom] = {}
        self.pending_auth: Counter[str] = Counter()  # client address -> its teacher sockets not yet authenticated
        self.guesses: dict[str, TokenBucket] = {}  # address key -> its budget of join codes that name no class
        self.path = path
        self.dirty = False  # something to save
        if path is not None:
            self._load()

    # ---- surviving a restart

    def save(self) -> None:
        """Writes the classes to `path` (atomically), when there is one."""
        self.dirty = False
        if self.path is None:
            return
        data = {room.code: {"token": room.token, "owner": room.owner, "state": room.state, "seq": room.seq,
                            "answers": [[lesson, step, {seat: list(v) for seat, v in seats.items()}]
                                        for (lesson, step), seats in room.answers.items()],
                            "revealed": [list(q) for q in room.revealed]}
                for room in self.classes.values() if not room.ended}
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(json_text({"classes": data}))
            os.replace(tmp, self.path)
        except OSError as exc:
            log.warning("the classes could not be saved to %s: %s", self.path, exc)

    def save_if_dirty(self) -> None:
        if self.dirty:
            self.save()

    def _load(self) -> None:
        assert self.path is not None
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))["classes"]
            now = self.clock()
            for code, entry in data.items():
                room = Classroom(code=normalize_code(code), token=str(entry["token"]), created=now, last_active=now,
                                 last_seen=now, owner=str(entry.get("owner", "")), teacher_gone=now,
                                 state=entry.get("state"), seq=int(entry.get("seq", 0)))
                for lesson, step, seats in entry.get("answers", []):
                    room.answers[(str(lesson), int(step))] = {str(k): (str(v[0]), bool(v[1])) for k, v in seats.items()}
                room.revealed = {(str(q[0]), int(q[1])) for q in entry.get("revealed", [])}
                self.classes[room.code] = room
        except FileNotFoundError:
            return
        except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
            log.warning("the saved classes in %s could not be read (%s): starting without them", self.path, exc)
            self.classes.clear()

    def _new_code(self) -> str:
        for _ in range(100):
            code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
            if code not in self.classes:
                return code
        raise ClassFull("no free join code")  # pragma: no cover - 31^6 codes

    def create(self, address: str = "") -> Classroom:
        """A new class for a client at `address`; raises `TooManyClasses` when that address has
        `max_classes_per_address`, `ClassFull` when the server has no room (the last `reserve` places are kept for
        addresses without a class)."""
        self.expire()
        lim = self.limits
        owner = address_key(address)
        mine = sum(1 for room in self.classes.values() if room.owner == owner)
        if mine >= lim.max_classes_per_address:
            raise TooManyClasses(f"this address already has {mine} classes (at most {lim.max_classes_per_address}); "
                                 "end one, or wait: a class without its teacher ends after "
                                 f"{lim.teacher_grace:g} s")
        if len(self.classes) >= lim.max_classes:
            raise ClassFull(f"the server holds at most {lim.max_classes} classes at once")
        if mine and len(self.classes) >= lim.max_classes - lim.reserve:
            raise ClassFull(f"the server is nearly full: its last {lim.reserve} classes are kept for teachers "
                            "who have none yet")
        now = self.clock()
        room = Classroom(code=self._new_code(), token=secrets.token_urlsafe(24), created=now, last_active=now,
                         last_seen=now, owner=owner, teacher_gone=now)
        self.classes[room.code] = room
        self.dirty = True
        return room

    def get(self, code: str) -> Classroom | None:
        self.expire()
        return self.classes.get(normalize_code(code))

    def find(self, code: str, address: str) -> Classroom | None:
        """The class a client at `address` names by its join code (None: no such class). Raises `TooManyGuesses`,
        whether or not the code is right, once that address has tried `guess_burst` codes naming no class (and
        `guess_rate` a second since): join codes cannot be guessed at hundreds a second."""
        key = address_key(address)
        bucket = self.guesses.get(key)
        if bucket is not None and not bucket.ready():
            raise TooManyGuesses(f"too many join codes that name no class from this address; at most "
                                 f"{self.limits.guess_rate:g} a second: try again in a moment")
        room = self.get(code)
        if room is None:
            if bucket is None:
                if len(self.guesses) >= MAX_GUESSERS:  # (forget the addresses whose buckets are full again)
                    self.guesses = {k: b for k, b in self.guesses.items() if not b.ready(self.limits.guess_burst)}
                bucket = self.guesses[key] = TokenBucket(self.limits.guess_rate, self.limits.guess_burst,
                                                         clock=self.clock)
            bucket.take()
        return room

    def end(self, room: Classroom, reason: str) -> None:
        room.ended = True
        self.classes.pop(room.code, None)
        self.dirty = True
        message = {"type": "ended", "reason": reason}
        for peer in [*room.students, *([room.teacher] if room.teacher else [])]:
            peer.put(message)
            peer.end()

    def expire(self) -> None:
        now = self.clock()
        lim = self.limits
        for room in list(self.classes.values()):
            nobody = room.teacher is None and not room.students
            if now - room.last_active > lim.ttl or (nobody and now - room.last_seen > lim.idle):
                self.end(room, "the class expired")
            elif room.teacher is None and now - room.teacher_gone > lim.teacher_grace:
                self.end(room, "the teacher did not come back")

    @contextlib.contextmanager
    def authenticating(self, address: str) -> Iterator[None]:
        """Counts one teacher socket of `address` as waiting to authenticate while the block runs; raises
        `TooManyWaiting` when the address already has `max_pending_auth` of them. (Each is dropped at the
        auth deadline; without a count, one address could hold any number of them open at once.)"""
        if self.pending_auth[address] >= self.limits.max_pending_auth:
            raise TooManyWaiting(f"at most {self.limits.max_pending_auth} teacher connections from one address "
                                 "may wait to authenticate at once")
        self.pending_auth[address] += 1
        try:
            yield
        finally:
            self.pending_auth[address] -= 1
            if not self.pending_auth[address]:
                del self.pending_auth[address]

    def teacher_left(self, room: Classroom) -> None:
        """The teacher's socket closed: the class ends unless a teacher is back within `teacher_grace`."""
        room.teacher_gone = self.clock()

    def touch(self, room: Classroom, *, teacher: bool = False) -> None:
        """Someone connected, left or spoke (`teacher`: the teacher did, which keeps the class alive)."""
        now = self.clock()
        room.last_seen = now
        self.dirty = True
        if teacher:
            room.last_active = now


def normalize_code(code: str) -> str:
    """Join codes are case-insensitive and may be typed with spaces or dashes."""
    return "".join(c for c in str(code).upper() if c.isalnum())[:16]
