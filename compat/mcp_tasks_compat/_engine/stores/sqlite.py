"""The embedded durable store: task states in one SQLite file, through the standard library.

``sqlite3`` is blocking, so calls run on an anyio worker thread (:mod:`.sqlite_batches`: one
connection, batches behind an ``anyio.Lock``): that works on asyncio and trio alike, which an
asyncio-only driver would not. The file is in WAL mode with
``synchronous=FULL``, so a task is on disk when :meth:`SqliteTaskStore.create` returns (the spec
wants it readable before the create answer) and readers never wait for the one writer.

Concurrent writes commit together (group commit, :mod:`.sqlite_batches`): one fsync per batch.

A row holds the columns the store queries (owner and creation order for listing, the expiry
deadline, the runner's lease, the terminal flag, the compare-and-set version, the run's fencing
token) and the exact state as JSON text (:func:`~.task_state.dumps`). Times are ISO 8601 text in
UTC, fixed width with microseconds, so text order is time order. The table layout, its
migrations and the refusal of a bad file at open are in :mod:`.sqlite_file`.

SQLite serves one node (processes on one host may share the file; a network filesystem is not
safe for it), so there is no one to notify: :attr:`SqliteTaskStore.notifier` is silent. Several
replicas need the Redis store.
"""

from __future__ import annotations

import os
import sqlite3
from datetime import datetime, timezone
from typing import Final

from ...core._model import parse_timestamp
from ...errors import TaskStoreError
from .contract import (
    EVERY_OWNER,
    ActiveLimitReached,
    Notifier,
    SilentNotifier,
    StoreConflict,
    decode_cursor,
    encode_cursor,
    sql_page_filter,
)
from .sqlite_batches import SqliteWorker
from .sqlite_file import SqliteFile
from .sqlite_queue import SqliteTaskQueue
from .task_state import TaskState, WrittenStates, loads

__all__ = ["SqliteTaskStore"]

_COLUMNS: Final = (
    "owner, created_at, expires_at, lease_until, runner, terminal, version, claim, queued, state"
)
_INSERT: Final = (
    f"INSERT INTO tasks (task_id, {_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (task_id) DO NOTHING"
)
_COUNT_ACTIVE: Final = "SELECT COUNT(*) FROM (SELECT 1 FROM tasks WHERE owner IS ? AND terminal = 0 LIMIT ?)"
_INSERT_WITHIN_LIMIT: Final = (
    f"INSERT INTO tasks (task_id, {_COLUMNS}) SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?"
    f" WHERE ({_COUNT_ACTIVE}) < ? ON CONFLICT (task_id) DO NOTHING"
)


def _time(value: datetime | None) -> str | None:
    """Fixed-width UTC text (``2026-01-02T03:04:05.000006Z``): compares in text as in time."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def _columns(state: TaskState, written: WrittenStates) -> tuple[object, ...]:
    return (
        state.owner,
        _time(state.task.created_at),
        _time(state.expires_at),
        _time(state.lease_until),
        state.runner,
        int(state.is_terminal),
        state.version,
        state.claim,
        int(state.queued),
        written.dumps(state),
    )


def _count_active(connection: sqlite3.Connection, owner: str | None, at_most: int) -> int:
    """How many of ``owner``'s tasks are not terminal, counting no further than ``at_most``."""
    row = connection.execute(_COUNT_ACTIVE, (owner, at_most)).fetchone()
    return int(row[0]) if row is not None else 0


def _decode_cursor(cursor: str) -> tuple[str, str]:
    """The (created_at, task_id) a page ended at, in this store's column form."""
    created, task_id = decode_cursor(cursor)
    return str(_time(created)), task_id


class SqliteTaskStore:
    """Task states in the SQLite file ``path`` (created if missing; ``file:`` URIs as sqlite reads them).

    ``busy_timeout``: seconds to wait for another process's write before saying the file is
    locked. :meth:`open` creates or migrates the file, or raises :class:`TaskStoreError` and
    stays closed; a store that did not open refuses every call.
    """

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = 5.0) -> None:
        self._file = SqliteFile(path, busy_timeout=busy_timeout)
        self._worker = SqliteWorker(self._file)
        self._call = self._worker.call
        self._notifier = SilentNotifier()
        self._written = WrittenStates()  # what a read of this store's own last write returns
        self.queue = SqliteTaskQueue(self._worker)
        """The workers' queue (:mod:`.sqlite_queue`), filled by this store's own writes."""

    @property
    def path(self) -> str:
        return self._file.path

    @property
    def shared(self) -> bool:
        """Other processes of this host may open the same file."""
        return True

    @property
    def notifier(self) -> Notifier:
        return self._notifier

    @property
    def describe(self) -> str:
        return self._file.describe

    async def now(self) -> datetime:
        """One host: its clock (every process sharing the file reads the same one)."""
        return datetime.now(timezone.utc)

    # -- opening and running calls (:mod:`.sqlite_batches`) --------------------------------------------

    async def open(self) -> None:
        await self._worker.open()

    async def close(self) -> None:
        await self._worker.close()

    @property
    def commits(self) -> int:
        """Transactions committed: with concurrent writers, fewer than the writes (group commit)."""
        return self._worker.commits

    def _load(self, text: str) -> TaskState:
        if (known := self._written.recall(text)) is not None:
            return known
        try:
            return loads(text)
        except ValueError as exc:
            raise TaskStoreError(
                f"{self.describe}: a stored task cannot be read ({exc}); upgrade mcp-tasks-compat if a"
                " newer release wrote it"
            ) from None

    def _fetch(
        self, connection: sqlite3.Connection, query: str, params: tuple[object, ...]
    ) -> list[TaskState]:
        return [self._load(str(row[0])) for row in connection.execute(query, params)]

    def _read(self, connection: sqlite3.Connection, task_id: str) -> TaskState | None:
        found = self._fetch(connection, "SELECT state FROM tasks WHERE task_id = ?", (task_id,))
        return found[0] if found else None

    # -- the contract ------------------------------------------------------------------------------

    async def create(self, state: TaskState, *, active_limit: int | None = None) -> None:
        values = (state.task_id, *_columns(state, self._written))

        def insert(connection: sqlite3.Connection) -> None:
            if active_limit is None:
                cursor = connection.execute(_INSERT, values)
            else:  # one statement counts and inserts: atomic even beside other processes' writes
                cursor = connection.execute(
                    _INSERT_WITHIN_LIMIT, (*values, state.owner, active_limit, active_limit)
                )
            if cursor.rowcount == 1:
                return
            current = self._read(connection, state.task_id)
            if current is None and active_limit is not None:
                raise ActiveLimitReached(_count_active(connection, state.owner, active_limit))
            raise StoreConflict(state.task_id, current)

        await self._call(insert, writes=True)

    async def get(self, task_id: str) -> TaskState | None:
        return await self._call(lambda connection: self._read(connection, task_id))

    async def save(self, state: TaskState, *, fence: int | None = None) -> TaskState:
        saved = state.evolve(version=state.version + 1)
        columns = _columns(saved, self._written)  # here, not on the worker: the memo is the loop's

        def compare_and_set(connection: sqlite3.Connection) -> TaskState:
            # one conditional UPDATE: the version (compare-and-set) and, for a run's write, its
            # claim (the fence) are checked in the same statement that writes
            cursor = connection.execute(
                "UPDATE tasks SET owner = ?, created_at = ?, expires_at = ?, lease_until = ?, runner = ?,"
                " terminal = ?, version = ?, claim = ?, queued = ?, state = ?"
                " WHERE task_id = ? AND version = ? AND (? IS NULL OR claim = ?)",
                (*columns, state.task_id, state.version, fence, fence),
            )
            if cursor.rowcount != 1:
                raise StoreConflict(state.task_id, self._read(connection, state.task_id))
            return saved

        return await self._call(compare_and_set, writes=True)

    async def delete(self, task_id: str) -> None:
        def remove(connection: sqlite3.Connection) -> None:
            connection.execute("DELETE FROM tasks WHERE task_id = ?", (task_id,))

        await self._call(remove, writes=True)

    async def count_active(self, owner: str | None, *, at_most: int) -> int:
        return await self._call(lambda connection: _count_active(connection, owner, at_most))

    async def due_for_expiry(self, now: datetime, *, limit: int = 100) -> list[TaskState]:
        query = (
            "SELECT state FROM tasks WHERE expires_at IS NOT NULL AND expires_at <= ?"
            " ORDER BY expires_at, task_id LIMIT ?"
        )
        return await self._call(lambda connection: self._fetch(connection, query, (_time(now), limit)))

    async def next_expiry(self) -> datetime | None:
        def soonest(connection: sqlite3.Connection) -> str | None:
            row = connection.execute(
                "SELECT MIN(expires_at) FROM tasks WHERE expires_at IS NOT NULL"
            ).fetchone()
            return None if row is None or row[0] is None else str(row[0])

        found = await self._call(soonest)
        return None if found is None else parse_timestamp(found)

    async def lease_expired(self, now: datetime, *, limit: int = 100) -> list[TaskState]:
        query = (
            "SELECT state FROM tasks WHERE terminal = 0 AND runner IS NOT NULL AND lease_until IS NOT NULL"
            " AND lease_until <= ? ORDER BY lease_until, task_id LIMIT ?"
        )
        return await self._call(lambda connection: self._fetch(connection, query, (_time(now), limit)))

    async def list_tasks(
        self, *, owner: object = EVERY_OWNER, cursor: str | None = None, limit: int = 100
    ) -> tuple[list[TaskState], str | None]:
        """``owner``: a name, ``None`` (unowned tasks) or :data:`~.contract.EVERY_OWNER`."""
        if limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        where, params = sql_page_filter(owner, None if cursor is None else _decode_cursor(cursor), "?")
        query = f"SELECT state FROM tasks{where} ORDER BY created_at, task_id LIMIT ?"
        params.append(limit + 1)  # one more than the page: is there a next page?
        found = await self._call(lambda connection: self._fetch(connection, query, tuple(params)))
        if len(found) > limit:
            page = found[:limit]
            return page, encode_cursor(page[-1])
        return found, None
