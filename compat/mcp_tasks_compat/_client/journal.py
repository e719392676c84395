"""The client's task journal: each task this client made, kept in a SQLite file from the moment the
server acknowledged it until its outcome was read, so that a client that dies (a SIGKILL, a
restart) can find its tasks again and read their outcomes.

The file is written synchronously, in WAL mode with ``synchronous=FULL`` (each commit is on disk
before it returns), on a worker thread; the commit that records a task ends before the call that
made it goes on, so a task whose creation a caller saw is in the file. Several sessions and
processes may share one file (WAL, a busy timeout). Only what identifies a task is kept: its
endpoint (an HTTP URL, or a command line and its folder), dialect, id, tool, a hash of the
arguments, when it was acknowledged and its TTL; never a header, an argument or a result.

What the entry points see of it is a :class:`CallRecord` (one per call or handle): ``acknowledged``
when the server made the task, ``ended`` when its outcome was read. Which journal and endpoint a
session records into is kept with the session (:func:`bind_session`, :func:`record_for`). This
module imports no ``mcp``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Final, cast
from urllib.parse import urlsplit, urlunsplit

import anyio
import anyio.to_thread

from ..core._model import Task
from ..dialects import ALL_DIALECTS, Dialect
from ..errors import ServerConnectionLostError, TaskError, TaskStoreError
from .connections import PerSession

__all__ = [
    "JOURNAL_APPLICATION_ID",
    "CallRecord",
    "Endpoint",
    "JournalEntry",
    "JournalStore",
    "arguments_digest",
    "bind_session",
    "bound_session",
    "endpoint_of",
    "journal_location",
    "record_for",
]

logger = logging.getLogger("mcp_tasks_compat.client")

JOURNAL_APPLICATION_ID: Final = 0x4D544A31  # "MTJ1": SQLite's application_id of a journal file
SCHEMA_VERSION: Final = 1
BUSY_TIMEOUT_MS: Final = 30_000
"""How long a write waits for another process's (SQLite's busy timeout)."""

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS journal_entries (
    endpoint TEXT NOT NULL,
    task_id TEXT NOT NULL,
    dialect TEXT NOT NULL,
    tool TEXT,
    arguments_sha256 TEXT NOT NULL,
    acknowledged_at REAL NOT NULL,
    ttl_ms INTEGER,
    outcome TEXT,
    ended_at REAL,
    PRIMARY KEY (endpoint, task_id)
);
CREATE INDEX IF NOT EXISTS journal_pending ON journal_entries (acknowledged_at) WHERE outcome IS NULL;
"""


@dataclass(frozen=True)
class Endpoint:
    """Where a task lives: a streamable HTTP ``url``, or a stdio server's ``command`` line and ``cwd``.

    Two endpoints are the same server exactly when these are equal; a journal entry is followed
    only on a session to its own endpoint. Headers and the server command's environment are not
    part of it (they may hold credentials, and are never stored).
    """

    url: str | None = None
    command: tuple[str, ...] = ()
    cwd: str | None = None

    @classmethod
    def http(cls, url: str) -> Endpoint:
        parts = urlsplit(url.strip())
        if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
            raise ValueError(f"a journal's HTTP endpoint is an http:// or https:// URL, not {url!r}")
        if parts.password is not None:
            raise ValueError(
                "a journal never stores credentials, and this URL holds a password: send it as a "
                "header instead (connect_http(url, headers=...), or -H / --bearer-env on the command line)"
            )
        netloc = parts.netloc.rpartition("@")[2].lower()  # scheme and host are case-insensitive
        return cls(url=urlunsplit((parts.scheme.lower(), netloc, parts.path, parts.query, "")))

    @classmethod
    def http_or_none(cls, url: str) -> Endpoint | None:
        """``url``'s endpoint, or ``None`` for one a journal refuses (said when a journal is asked for)."""
        try:
            return cls.http(url)
        except ValueError:
            return None

    @classmethod
    def stdio(cls, command: Sequence[str], cwd: str | os.PathLike[str] | None = None) -> Endpoint:
        line = tuple(str(part) for part in command)
        if not line or not line[0]:
            raise ValueError("a journal's stdio endpoint is a command line: [command, *args]")
        return cls(command=line, cwd=os.path.abspath(cwd if cwd is not None else os.getcwd()))

    @classmethod
    def of(cls, given: str | Sequence[str]) -> Endpoint:
        """``endpoint=`` as a caller gives it: a URL, or a command line as a list of words."""
        if isinstance(given, str):
            return cls.http(given)
        return cls.stdio(given)

    def key(self) -> str:
        """The endpoint as stored (canonical JSON: equal endpoints, equal keys)."""
        if self.url is not None:
            return json.dumps({"url": self.url})
        return json.dumps({"command": list(self.command), "cwd": self.cwd})

    @classmethod
    def from_key(cls, key: str) -> Endpoint:
        data = cast("dict[str, Any]", json.loads(key))
        if "url" in data:
            return cls(url=str(data["url"]))
        return cls(command=tuple(str(part) for part in data["command"]), cwd=data.get("cwd"))

    def describe(self) -> str:
        if self.url is not None:
            return self.url
        import shlex

        return f"{shlex.join(self.command)} (in {self.cwd})"


def arguments_digest(arguments: Mapping[str, Any] | None) -> str:
    """``sha256:`` of the arguments' canonical JSON: tells two calls apart without keeping the arguments."""
    text = json.dumps(dict(arguments or {}), sort_keys=True, separators=(",", ":"), default=str)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class JournalEntry:
    """One task in a :class:`~mcp_tasks_compat.client.TaskJournal`.

    ``endpoint`` (an :class:`Endpoint`: ``url``, or ``command`` and ``cwd``), ``dialect``,
    ``task_id``, ``tool``, ``arguments_sha256`` (the arguments' hash), ``acknowledged_at`` (this
    client's clock when the server acknowledged the task, UTC), ``ttl_ms`` (the TTL the server
    gave it; ``None``: unlimited); ``outcome`` is ``None`` while pending, else how it ended:
    ``"result"`` or an error ``code`` (``"task-failed"``, ``"task-cancelled"``,
    ``"task-not-found"``, ``"task-expired"``, ``"task-timeout"``).
    """

    endpoint: Endpoint
    task_id: str
    dialect: Dialect
    tool: str | None
    arguments_sha256: str
    acknowledged_at: datetime
    ttl_ms: int | None
    outcome: str | None = None
    ended_at: datetime | None = None

    @property
    def pending(self) -> bool:
        return self.outcome is None

    def expires_at(self) -> datetime | None:
        """When the task's TTL runs out, counted from its acknowledgement (``None``: never)."""
        if self.ttl_ms is None:
            return None
        return self.acknowledged_at + timedelta(milliseconds=self.ttl_ms)

    def expired(self, now: datetime | None = None) -> bool:
        expires = self.expires_at()
        return expires is not None and (now or datetime.now(timezone.utc)) >= expires


def _when(seconds: float | None) -> datetime | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, timezone.utc)


def _entry(row: tuple[Any, ...]) -> JournalEntry:
    endpoint, task_id, dialect, tool, digest, acknowledged, ttl_ms, outcome, ended = row
    acknowledged_at = _when(acknowledged)
    assert acknowledged_at is not None
    return JournalEntry(
        Endpoint.from_key(endpoint), task_id, dialect, tool, digest, acknowledged_at, ttl_ms, outcome,
        _when(ended),
    )  # fmt: skip


def journal_location(location: str | os.PathLike[str]) -> Path:
    """``sqlite:///relative.db``, ``sqlite:////absolute.db`` or a plain path."""
    text = os.fspath(location)
    if text.startswith("sqlite:"):
        if not text.startswith("sqlite:///") or "?" in text or "#" in text:
            raise ValueError(
                f"a journal location is sqlite:///path/to/file.db (or a plain path), not {text!r}"
            )
        text = text[len("sqlite:///") :]
    if not text or text == ":memory:":
        raise ValueError("a journal is a file (it must outlive this process): give a path")
    return Path(text)


class JournalStore:
    """The SQLite file of a journal; one connection, used from worker threads one at a time."""

    def __init__(self, location: str | os.PathLike[str]) -> None:
        self.path = journal_location(location)
        self._lock = threading.Lock()
        self._connection = self._open()

    def _open(self) -> sqlite3.Connection:
        what = f"the task journal {str(self.path)!r}"
        if self.path.is_dir():
            raise TaskStoreError(f"cannot use {what}: it is a folder; fix: give a file's path")
        try:
            connection = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            version = self._claimed(connection, what)
            connection.execute("PRAGMA journal_mode = WAL")  # outside a transaction, once the file is ours
            connection.execute("PRAGMA synchronous = FULL")  # every commit fsync'd before it returns
        except sqlite3.Error as error:
            raise TaskStoreError(
                f"cannot use {what}: {error}; fix: check the path and its permissions"
            ) from error
        if version > SCHEMA_VERSION:
            connection.close()
            raise TaskStoreError(
                f"cannot use {what}: a newer mcp-tasks-compat wrote it (schema {version}); fix: upgrade"
            )
        return connection

    @staticmethod
    def _claimed(connection: sqlite3.Connection, what: str) -> int:
        """Check the file is a journal (or empty, then made one) in one write transaction, so
        processes opening a new file at once agree; its schema version. A file of another
        application's is refused untouched."""
        connection.execute("BEGIN IMMEDIATE")
        try:
            owner = connection.execute("PRAGMA application_id").fetchone()[0]
            tables = connection.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
            if owner not in (0, JOURNAL_APPLICATION_ID) or (owner == 0 and tables):
                raise TaskStoreError(
                    f"cannot use {what}: it is another application's SQLite file (a task store?); "
                    "fix: give the journal a file of its own"
                )
            if owner == 0:
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        connection.execute(statement)
                connection.execute(f"PRAGMA application_id = {JOURNAL_APPLICATION_ID}")
                connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            version: int = connection.execute("PRAGMA user_version").fetchone()[0]
        except BaseException:
            connection.execute("ROLLBACK")
            connection.close()
            raise
        connection.execute("COMMIT")
        return version

    def close(self) -> None:
        with self._lock:
            self._connection.close()

    def _run(self, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._connection.execute(query, params).fetchall()

    def record_now(self, entry: JournalEntry) -> None:
        """Insert ``entry`` (pending), committed to disk when this returns (blocking)."""
        self._run(
            "INSERT OR REPLACE INTO journal_entries VALUES (?, ?, ?, ?, ?, ?, ?, NULL, NULL)",
            (
                entry.endpoint.key(), entry.task_id, entry.dialect, entry.tool, entry.arguments_sha256,
                entry.acknowledged_at.timestamp(), entry.ttl_ms,
            ),
        )  # fmt: skip

    def end_now(self, endpoint: Endpoint, task_id: str, outcome: str) -> bool:
        """Mark a pending entry ended with ``outcome`` (blocking); whether there was one."""
        with self._lock:
            cursor = self._connection.execute(
                "UPDATE journal_entries SET outcome = ?, ended_at = ? "
                "WHERE endpoint = ? AND task_id = ? AND outcome IS NULL",
                (outcome, time.time(), endpoint.key(), task_id),
            )
            return cursor.rowcount > 0

    def entries(self, *, pending_only: bool = False) -> list[JournalEntry]:
        """Every entry (or the pending ones), oldest first."""
        where = " WHERE outcome IS NULL" if pending_only else ""
        rows = self._run(f"SELECT * FROM journal_entries{where} ORDER BY acknowledged_at, task_id")
        return [_entry(row) for row in rows]

    def entry(self, endpoint: Endpoint, task_id: str) -> JournalEntry | None:
        rows = self._run(
            "SELECT * FROM journal_entries WHERE endpoint = ? AND task_id = ?", (endpoint.key(), task_id)
        )
        return _entry(rows[0]) if rows else None

    async def record(self, entry: JournalEntry) -> None:
        """:meth:`record_now` on a worker thread, finished even if the caller is cancelled meanwhile.

        A write that fails is :class:`TaskStoreError`: the call then ends early, so its task is
        cancelled rather than left running where no journal holds it."""
        try:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self.record_now, entry)
        except sqlite3.Error as error:
            raise TaskStoreError(
                f"could not record task {entry.task_id} in the task journal {str(self.path)!r} ({error}); "
                "the call is ended and its task cancelled. fix: check the disk and the file's permissions"
            ) from error

    async def end(self, endpoint: Endpoint, task_id: str, outcome: str) -> None:
        """:meth:`end_now` on a worker thread. A write that fails is logged, not raised: the
        outcome was read, and an entry left pending is only read again by a later resume."""
        try:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self.end_now, endpoint, task_id, outcome)
        except sqlite3.Error as error:
            logger.warning("could not end task %s in the task journal %s (%s)", task_id, self.path, error)


def outcome_of(error: BaseException | None) -> str | None:
    """How a call's end is recorded: ``"result"``, a ``Task*Error``'s code, or ``None`` (the
    outcome was not read: the connection was lost, the caller cancelled; the entry stays pending)."""
    if error is None:
        return "result"
    if isinstance(error, TaskError) and not isinstance(error, ServerConnectionLostError):
        return error.code
    return None


class CallRecord:
    """What one call (or one handle) records: the task when acknowledged, its outcome when read."""

    def __init__(
        self, store: JournalStore, endpoint: Endpoint, tool: str | None, arguments: Mapping[str, Any] | None
    ) -> None:
        self._store = store
        self._endpoint = endpoint
        self._tool = tool
        self._digest = arguments_digest(arguments)
        self._task_id: str | None = None

    @classmethod
    def existing(cls, store: JournalStore, endpoint: Endpoint, task_id: str) -> CallRecord:
        """The record of a task already in the journal (resumed): only its end is written."""
        record = cls(store, endpoint, None, None)
        record._task_id = task_id
        return record

    async def acknowledged(self, task: Task, dialect: Dialect) -> None:
        """The server made ``task``: on disk before this returns."""
        assert dialect in ALL_DIALECTS
        self._task_id = task.task_id
        entry = JournalEntry(
            self._endpoint, task.task_id, dialect, self._tool, self._digest, datetime.now(timezone.utc),
            task.ttl_ms,
        )  # fmt: skip
        await self._store.record(entry)

    async def ended(self, error: BaseException | None) -> None:
        """The call ended (``error``: how, ``None`` for a result); a read outcome ends the entry."""
        outcome = outcome_of(error)
        if self._task_id is not None and outcome is not None:
            await self._store.end(self._endpoint, self._task_id, outcome)


@dataclass(frozen=True)
class SessionJournal:
    """What a session records into: its server's :class:`Endpoint` and, when asked for, a journal."""

    endpoint: Endpoint | None
    store: JournalStore | None


def _unknown_endpoint() -> ValueError:
    return ValueError(
        "a journal needs to know the session's server: give TaskClientSession(..., endpoint=URL "
        "or [command, *args]), or open the session with connect_http() / connect_stdio()"
    )


_bindings: Final = PerSession[Any, SessionJournal]("journal")


def bind_session(session: Any, *, endpoint: Endpoint | None, store: JournalStore | None) -> None:
    """Remember ``session``'s endpoint (an opener knows it) and the journal it records into."""
    if endpoint is None and store is not None:
        raise _unknown_endpoint()
    _bindings.set(session, SessionJournal(endpoint, store))


def endpoint_of(session: Any) -> Endpoint | None:
    """The endpoint ``session`` was opened to, when the library knows it."""
    bound = _bindings.get(session)
    return bound.endpoint if bound is not None else None


def record_for(
    session: Any,
    tool: str | None,
    arguments: Mapping[str, Any] | None,
    *,
    given: JournalStore | None = None,
    task_id: str | None = None,
) -> CallRecord | None:
    """The record of one call on ``session`` (``given``: the call's own journal, else the session's),
    or of a resumed ``task_id``; ``None`` when nothing is journaled. A journal on a session whose
    server is unknown is refused before anything is sent."""
    session = getattr(session, "wrapped_session", session)  # a TaskSessionWrapper's session
    bound = _bindings.get(session)
    store = given or (bound.store if bound is not None else None)
    if store is None:
        return None
    endpoint = bound.endpoint if bound is not None else None
    if endpoint is None:
        raise _unknown_endpoint()
    if task_id is not None:
        return CallRecord.existing(store, endpoint, task_id)
    return CallRecord(store, endpoint, tool, arguments)


@asynccontextmanager
async def bound_session(
    opening: AbstractAsyncContextManager[Any], endpoint: Endpoint | None, store: JournalStore | None
) -> AsyncGenerator[Any, None]:
    """``opening``'s session, bound to ``endpoint`` and ``store`` before the caller gets it."""
    async with opening as session:
        bind_session(session, endpoint=endpoint, store=store)
        yield session
