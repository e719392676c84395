"""The SQLite store's workers' queue: the ``task_queue`` table, taken by one ``UPDATE ... RETURNING``.

Rows are added by triggers of the ``tasks`` table (:mod:`.sqlite_file`), in the statement that
queues the task. A take marks up to ``count`` rows as handed to the consumer in one conditional
``UPDATE ... RETURNING``: rows no one holds, or held past the redelivery bound by a worker that
died before acking; SQLite runs one write at a time, so two workers never take the same row.
SQLite cannot wake a waiting worker, so a take with nothing to hand polls, from
:data:`POLL_FIRST_S` to :data:`POLL_MAX_S` (one host: a read of a local file).
"""

from __future__ import annotations

import sqlite3
import time
from datetime import datetime, timezone
from typing import Final

import anyio

from .queue import QueueEntry
from .sqlite_batches import SqliteWorker
from .sqlite_file import NOW_S

__all__ = ["POLL_FIRST_S", "POLL_MAX_S", "SqliteTaskQueue"]

POLL_FIRST_S: Final = 0.02
POLL_MAX_S: Final = 0.2
"""Between two looks at an empty queue: doubling from the first to the last (a back-off)."""

_TAKE: Final = (
    f"UPDATE task_queue SET consumer = ?, taken_at = {NOW_S} WHERE seq IN ("
    f"SELECT seq FROM task_queue WHERE consumer IS NULL OR taken_at <= {NOW_S} - ? ORDER BY seq LIMIT ?"
    ") RETURNING seq, task_id, claim, queued_at"
)


def _instant(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, timezone.utc)


_ANY_TO_TAKE: Final = f"SELECT 1 FROM task_queue WHERE consumer IS NULL OR taken_at <= {NOW_S} - ? LIMIT 1"


class SqliteTaskQueue:
    """The ``task_queue`` table of a :class:`~.sqlite.SqliteTaskStore`'s file."""

    def __init__(self, worker: SqliteWorker) -> None:
        self._call = worker.call

    async def _take_once(self, consumer: str, count: int, redeliver_after_s: float) -> list[QueueEntry]:
        def any_to_take(connection: sqlite3.Connection) -> bool:
            return connection.execute(_ANY_TO_TAKE, (redeliver_after_s,)).fetchone() is not None

        if not await self._call(any_to_take):  # a read: an idle worker's looks take no write lock
            return []

        def take(connection: sqlite3.Connection) -> list[QueueEntry]:
            rows = connection.execute(_TAKE, (consumer, redeliver_after_s, count)).fetchall()
            return [
                QueueEntry(str(seq), str(task_id), int(claim), _instant(float(at)))
                for seq, task_id, claim, at in sorted(rows)
            ]

        return await self._call(take, writes=True)

    async def take(
        self, consumer: str, count: int, *, wait_s: float, redeliver_after_s: float
    ) -> list[QueueEntry]:
        deadline = time.monotonic() + wait_s
        pause = POLL_FIRST_S
        while True:
            entries = await self._take_once(consumer, count, redeliver_after_s)
            left = deadline - time.monotonic()
            if entries or left <= 0:
                return entries
            await anyio.sleep(min(pause, left))  # a back-off between looks, not a synchronisation
            pause = min(pause * 2, POLL_MAX_S)

    async def ack(self, entry: QueueEntry) -> None:
        def delete(connection: sqlite3.Connection) -> None:
            connection.execute("DELETE FROM task_queue WHERE seq = ?", (int(entry.entry_id),))

        await self._call(delete, writes=True)

    async def depth(self) -> int:
        def count(connection: sqlite3.Connection) -> int:
            row = connection.execute("SELECT COUNT(*) FROM task_queue").fetchone()
            return int(row[0]) if row is not None else 0

        return await self._call(count)
