"""The embedded durable store: task states in one SQLite file, through the standard library.

``sqlite3`` is blocking, so calls run on an anyio worker thread, one batch at a time behind an
``anyio.Lock`` (one connection, never used by two threads at once): that works on asyncio and
trio alike, which an asyncio-only driver would not. The file is in WAL mode with
``synchronous=FULL``, so a task is on disk when :meth:`SqliteTaskStore.create` returns (the spec
wants it readable before the create answer) and readers never wait for the one writer.

Group commit: calls queue, and whoever takes the lock runs everything queued in one trip to the
worker thread, in the order queued, from the first write on in one transaction with one
``COMMIT`` (one fsync for the batch, not one per task). Each write is its own compare-and-set
statement that changes nothing when it loses, so a conflict fails that write alone; a SQLite error (the disk
full, the file locked) rolls the batch back and fails every call of the transaction. No caller
hears "saved", nor reads a write, before the batch's ``COMMIT`` returned.

A row holds the columns the store queries (owner and creation order for listing, the expiry
deadline, the runner's lease, the terminal flag, the compare-and-set version) and the exact
state as JSON text (:func:`~.task_state.dumps`). Times are ISO 8601 text in UTC, fixed width with
microseconds, so text order is time order. The table layout, its migrations and the refusal of a
bad file at open are in :mod:`.sqlite_file`.

SQLite serves one node (processes on one host may share the file; a network filesystem is not
safe for it), so there is no one to notify: :attr:`SqliteTaskStore.notifier` is silent. Several
replicas need the Redis store.
"""

from __future__ import annotations

import os
import sqlite3
from collections import deque
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Final, Generic, TypeVar, cast

import anyio
import anyio.to_thread

from ...core.model import parse_timestamp
from ...errors import TaskStoreError
from .contract import EVERY_OWNER, Notifier, SilentNotifier, StoreConflict, decode_cursor, encode_cursor
from .sqlite_file import SqliteFile
from .task_state import TaskState, dumps, loads

__all__ = ["SqliteTaskStore"]

_T = TypeVar("_T")

BATCH_LIMIT: Final = 512
"""The most calls one trip to the worker thread runs (the rest wait for the next)."""

_COLUMNS: Final = "owner, created_at, expires_at, lease_until, runner, terminal, version, state"


def _time(value: datetime | None) -> str | None:
    """Fixed-width UTC text (``2026-01-02T03:04:05.000006Z``): compares in text as in time."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def _columns(state: TaskState) -> tuple[object, ...]:
    return (
        state.owner,
        _time(state.task.created_at),
        _time(state.expires_at),
        _time(state.lease_until),
        state.runner,
        int(state.is_terminal),
        state.version,
        dumps(state),
    )


def _decode_cursor(cursor: str) -> tuple[str, str]:
    """The (created_at, task_id) a page ended at, in this store's column form."""
    created, task_id = decode_cursor(cursor)
    return str(_time(created)), task_id


class _Call(Generic[_T]):
    """One queued call: the operation, whether it writes, and (once run) its outcome."""

    __slots__ = ("error", "operation", "ran", "result", "writes")

    def __init__(self, operation: Callable[[sqlite3.Connection], _T], *, writes: bool) -> None:
        self.operation = operation
        self.writes = writes
        self.ran = False
        self.result: _T | None = None
        self.error: BaseException | None = None

    def run(self, connection: sqlite3.Connection) -> None:
        """Run the operation; a :class:`sqlite3.Error` propagates (it fails the batch), any other
        exception (a lost compare-and-set) is this call's own outcome."""
        try:
            self.result = self.operation(connection)
        except sqlite3.Error:
            raise
        except Exception as exc:
            self.error = exc

    def outcome(self) -> _T:
        if self.error is not None:
            raise self.error
        return self.result  # pyright: ignore[reportReturnType] - set when ran without an error


def _run_batch(connection: sqlite3.Connection, batch: list[_Call[object]]) -> bool:
    """The calls in the order they were queued, from the first write on in one transaction (one
    ``COMMIT``, one fsync): on the worker thread. ``True``: committed.

    A read queued after a write sees it, as when each call ran alone. A SQLite error before the
    first write fails that read; from the first write on it rolls the transaction back and fails
    every call from there (no write of it is saved, and no read of it saw anything but the
    unsaved writes), raised as each one's outcome.
    """
    first_write = next((index for index, call in enumerate(batch) if call.writes), len(batch))
    for call in batch[:first_write]:
        try:
            call.run(connection)
        except sqlite3.Error as exc:
            call.error = exc
    in_transaction = batch[first_write:]
    if not in_transaction:
        return False
    if len(in_transaction) == 1:  # one write alone: its statement is its transaction (autocommit)
        try:
            in_transaction[0].run(connection)
        except sqlite3.Error as exc:
            in_transaction[0].error = exc
            return False
        return True
    try:
        connection.execute("BEGIN IMMEDIATE")
        try:
            for call in in_transaction:
                call.run(connection)
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:  # SQLite rolls back by itself on some errors (a full disk)
                connection.execute("ROLLBACK")
            raise
    except sqlite3.Error as exc:
        for call in in_transaction:
            call.result, call.error = None, exc
        return False
    return True


class SqliteTaskStore:
    """Task states in the SQLite file ``path`` (created if missing; ``file:`` URIs as sqlite reads them).

    ``busy_timeout``: seconds to wait for another process's write before saying the file is
    locked. :meth:`open` creates or migrates the file, or raises :class:`TaskStoreError` and
    stays closed; a store that did not open refuses every call.
    """

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = 5.0) -> None:
        self._file = SqliteFile(path, busy_timeout=busy_timeout)
        self._connection: sqlite3.Connection | None = None
        self._lock: anyio.Lock | None = None  # one batch on the connection at a time; exists while open
        self._queued: deque[_Call[object]] = deque()  # calls not yet taken by a batch
        self.commits = 0
        """Transactions committed: with concurrent writers, fewer than the writes (group commit)."""
        self._notifier = SilentNotifier()

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

    # -- opening ---------------------------------------------------------------------------------

    async def open(self) -> None:
        if self._lock is None:  # made here, on the event loop that uses the store (not at construction)
            self._lock = anyio.Lock()
        async with self._lock:
            if self._connection is not None:
                return
            try:
                # Shielded: a cancelled open must not drop a connection its thread has just made.
                with anyio.CancelScope(shield=True):
                    self._connection = await anyio.to_thread.run_sync(self._file.connect)
            except sqlite3.Error as exc:
                raise self._file.error(exc) from exc
            finally:
                if self._connection is None:
                    self._lock = None  # closed, as before the call

    async def close(self) -> None:
        lock = self._lock
        if lock is None:
            return
        async with lock:
            connection, self._connection = self._connection, None
            self._lock = None  # the next open may be on another event loop
            if connection is not None:
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(connection.close)

    # -- running a call on the worker --------------------------------------------------------------

    async def _call(self, operation: Callable[[sqlite3.Connection], _T], *, writes: bool = False) -> _T:
        """Queue ``operation`` and return its outcome once a batch ran it (see the module docstring).

        Whoever holds the lock runs every call queued so far; a caller whose call a batch already
        ran only collects its outcome. A caller cancelled before any batch took its call takes it
        back out of the queue, so it never runs.
        """
        lock = self._lock
        if lock is None:
            raise TaskStoreError(f"{self.describe} is not open: call open() first")
        call = _Call(operation, writes=writes)
        queued = cast("_Call[object]", call)
        self._queued.append(queued)
        try:
            async with lock:
                if not call.ran:
                    await self._run_queued()
        except BaseException:
            if not call.ran:
                self._queued.remove(queued)
            raise
        try:
            return call.outcome()
        except sqlite3.Error as exc:
            raise self._file.error(exc) from exc

    async def _run_queued(self) -> None:
        """Take what is queued (up to :data:`BATCH_LIMIT`) and run it on the worker thread (lock held)."""
        batch: list[_Call[object]] = []
        while self._queued and len(batch) < BATCH_LIMIT:
            batch.append(self._queued.popleft())
        for call in batch:
            call.ran = True  # from here the batch owns it: a cancelled caller must not dequeue it
        connection = self._connection
        if connection is None:
            closed = TaskStoreError(f"{self.describe} is not open: call open() first")
            for call in batch:
                call.error = closed
            return
        if await anyio.to_thread.run_sync(_run_batch, connection, batch):
            self.commits += 1

    def _load(self, text: str) -> TaskState:
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

    async def create(self, state: TaskState) -> None:
        def insert(connection: sqlite3.Connection) -> None:
            cursor = connection.execute(
                f"INSERT INTO tasks (task_id, {_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (task_id) DO NOTHING",
                (state.task_id, *_columns(state)),
            )
            if cursor.rowcount != 1:
                raise StoreConflict(state.task_id, self._read(connection, state.task_id))

        await self._call(insert, writes=True)

    async def get(self, task_id: str) -> TaskState | None:
        return await self._call(lambda connection: self._read(connection, task_id))

    async def save(self, state: TaskState) -> TaskState:
        saved = state.evolve(version=state.version + 1)

        def compare_and_set(connection: sqlite3.Connection) -> TaskState:
            cursor = connection.execute(
                "UPDATE tasks SET owner = ?, created_at = ?, expires_at = ?, lease_until = ?, runner = ?,"
                " terminal = ?, version = ?, state = ? WHERE task_id = ? AND version = ?",
                (*_columns(saved), state.task_id, state.version),
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
        def count(connection: sqlite3.Connection) -> int:
            row = connection.execute(
                "SELECT COUNT(*) FROM (SELECT 1 FROM tasks WHERE owner IS ? AND terminal = 0 LIMIT ?)",
                (owner, at_most),
            ).fetchone()
            return int(row[0]) if row is not None else 0

        return await self._call(count)

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
        clauses: list[str] = []
        params: list[object] = []
        if owner is None:
            clauses.append("owner IS NULL")
        elif isinstance(owner, str):
            clauses.append("owner = ?")
            params.append(owner)
        elif owner is not EVERY_OWNER:
            raise TypeError(f"owner must be a str, None or EVERY_OWNER, not {owner!r}")
        if cursor is not None:
            clauses.append("(created_at, task_id) > (?, ?)")
            params.extend(_decode_cursor(cursor))
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        query = f"SELECT state FROM tasks{where} ORDER BY created_at, task_id LIMIT ?"
        params.append(limit + 1)  # one more than the page: is there a next page?
        found = await self._call(lambda connection: self._fetch(connection, query, tuple(params)))
        if len(found) > limit:
            page = found[:limit]
            return page, encode_cursor(page[-1])
        return found, None
