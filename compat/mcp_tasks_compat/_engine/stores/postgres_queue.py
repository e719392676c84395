"""The PostgreSQL store's workers' queue: the ``task_queue`` table, taken with ``FOR UPDATE SKIP LOCKED``.

Rows are added by the ``tasks`` table's trigger (:mod:`.postgres_schema`) in the statement that
queues the task, and deleted by the worker's ack once it claimed the task (a fenced save, so of
two workers handed one task only one claims it). A take marks up to ``count`` rows as handed to
the consumer in one ``UPDATE ... WHERE seq IN (SELECT ... FOR UPDATE SKIP LOCKED) RETURNING``:
rows no one holds, or held past the redelivery bound by a worker that died before claiming;
two workers taking at once skip each other's rows rather than wait for them. A take with nothing
to hand waits for the trigger's ``NOTIFY`` on the queue's channel (``LISTEN``, on a connection of
its own), looking again at least every :data:`REREAD_S` (entries due for redelivery are not
notified); all times are the database's (``clock_timestamp()``).
"""

from __future__ import annotations

import time
from contextlib import suppress
from datetime import datetime, timezone
from typing import Final

import anyio
import psycopg
from psycopg import sql

from .postgres_link import COMMAND_TIMEOUT_S, PostgresLink, Row
from .queue import QueueEntry

__all__ = ["REREAD_S", "PostgresTaskQueue"]

REREAD_S: Final = 1.0
"""The longest a waiting take goes without looking at the table (the fallback when no ``NOTIFY``
comes: a redelivery, a listening connection that dropped)."""


class PostgresTaskQueue:
    """The ``task_queue`` table of a :class:`~.postgres.PostgresTaskStore`'s schema."""

    def __init__(self, link: PostgresLink, schema: str) -> None:
        self._link = link
        self.channel = f"{schema}.queue"
        s = schema
        self._take = (
            f"UPDATE {s}.task_queue SET consumer = %s, taken_at = clock_timestamp() WHERE seq IN ("
            f"SELECT seq FROM {s}.task_queue WHERE consumer IS NULL"
            " OR taken_at <= clock_timestamp() - make_interval(secs => %s)"
            " ORDER BY seq LIMIT %s FOR UPDATE SKIP LOCKED) RETURNING seq, task_id, claim, queued_at"
        )
        self._ack = f"DELETE FROM {s}.task_queue WHERE seq = %s"
        self._depth = f"SELECT count(*) FROM {s}.task_queue"
        self._listener: psycopg.AsyncConnection[Row] | None = None

    async def _take_once(self, consumer: str, count: int, redeliver_after_s: float) -> list[QueueEntry]:
        rows = await self._link.fetch(self._take, (consumer, redeliver_after_s, count))
        return [
            QueueEntry(str(seq), str(task_id), int(claim), at.astimezone(timezone.utc))
            for seq, task_id, claim, at in sorted(rows)
            if isinstance(at, datetime)
        ]

    async def _listening(self) -> psycopg.AsyncConnection[Row] | None:
        """The connection listening on the queue's channel (``None`` when it cannot be had now:
        the take then looks again after :data:`REREAD_S`)."""
        if self._listener is not None and not self._listener.closed:
            return self._listener
        try:
            connection = await self._link.connect()
        except Exception:
            return None
        try:
            with anyio.fail_after(COMMAND_TIMEOUT_S):
                await connection.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
        except (psycopg.Error, OSError, TimeoutError):
            with suppress(psycopg.Error, OSError):
                await connection.close()
            return None
        self._listener = connection
        return connection

    async def _until_notified(self, seconds: float) -> None:
        """Return at the queue's next ``NOTIFY`` or after ``seconds``, whichever is first."""
        listener = await self._listening()
        if listener is None:
            await anyio.sleep(seconds)  # no listener now: a bounded pause before looking again
            return
        try:
            async for _ in listener.notifies(timeout=seconds, stop_after=1):
                pass
        except (psycopg.Error, OSError):
            self._listener = None
            with suppress(psycopg.Error, OSError):
                await listener.close()

    async def take(
        self, consumer: str, count: int, *, wait_s: float, redeliver_after_s: float
    ) -> list[QueueEntry]:
        deadline = time.monotonic() + wait_s
        await self._listening()  # listening before the first look: a NOTIFY after it is heard
        while True:
            entries = await self._take_once(consumer, count, redeliver_after_s)
            left = deadline - time.monotonic()
            if entries or left <= 0:
                return entries
            await self._until_notified(min(left, REREAD_S))

    async def ack(self, entry: QueueEntry) -> None:
        await self._link.fetch(self._ack, (int(entry.entry_id),))

    async def depth(self) -> int:
        rows = await self._link.fetch(self._depth)
        return int(rows[0][0])

    async def close(self) -> None:
        """Close the listening connection (the store's close does)."""
        listener, self._listener = self._listener, None
        if listener is not None:
            with suppress(psycopg.Error, OSError):
                await listener.close()
