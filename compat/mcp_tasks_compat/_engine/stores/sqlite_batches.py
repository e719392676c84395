"""The SQLite store's one connection and its group commit, apart from what the store stores.

``sqlite3`` is blocking, so calls run on an anyio worker thread, one batch at a time behind an
``anyio.Lock`` (one connection, never used by two threads at once). Calls queue, and whoever
takes the lock runs everything queued in one trip to the worker thread, in the order queued, from
the first write on in one transaction with one ``COMMIT`` (one fsync for the batch, not one per
task). Each write is its own compare-and-set statement that changes nothing when it loses, so a
conflict fails that write alone; a SQLite error (the disk full, the file locked) rolls the batch
back and fails every call of the transaction. No caller hears "saved", nor reads a write, before
the batch's ``COMMIT`` returned.
"""

from __future__ import annotations

import sqlite3
from collections import deque
from collections.abc import Callable
from typing import Final, Generic, TypeVar, cast

import anyio
import anyio.to_thread

from ...errors import TaskStoreError
from .sqlite_file import SqliteFile

__all__ = ["BATCH_LIMIT", "SqliteWorker"]

_T = TypeVar("_T")

BATCH_LIMIT: Final = 512
"""The most calls one trip to the worker thread runs (the rest wait for the next)."""


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


class SqliteWorker:
    """The store's connection to its file: opened, closed, and every call run in a batch."""

    def __init__(self, file: SqliteFile) -> None:
        self._file = file
        self._connection: sqlite3.Connection | None = None
        self._lock: anyio.Lock | None = None  # one batch on the connection at a time; exists while open
        self._queued: deque[_Call[object]] = deque()  # calls not yet taken by a batch
        self.commits = 0
        """Transactions committed: with concurrent writers, fewer than the writes (group commit)."""

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

    async def call(self, operation: Callable[[sqlite3.Connection], _T], *, writes: bool = False) -> _T:
        """Queue ``operation`` and return its outcome once a batch ran it (see the module docstring).

        Whoever holds the lock runs every call queued so far; a caller whose call a batch already
        ran only collects its outcome. A caller cancelled before any batch took its call takes it
        back out of the queue, so it never runs.
        """
        lock = self._lock
        if lock is None:
            raise TaskStoreError(f"{self._file.describe} is not open: call open() first")
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
            closed = TaskStoreError(f"{self._file.describe} is not open: call open() first")
            for call in batch:
                call.error = closed
            return
        if await anyio.to_thread.run_sync(_run_batch, connection, batch):
            self.commits += 1
