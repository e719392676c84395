"""TTL expiry: each task's deadline, its retention once it ends, and the sweep that acts on them.

Deadlines are on the engine's monotonic clock and kept by the store in an order it can pop from
(the in-memory store's heap), so a sweep never scans every task. A task that expires while still
running is failed and kept readable for a grace period, not silently dropped; an ended task is
kept for its TTL counted from its end.
"""

from __future__ import annotations

import math

import anyio

from ..core.lifecycle import TaskEvent
from ..core.model import JsonRpcError
from ..errors import INTERNAL_ERROR
from .state import TaskRecord, TaskWriter
from .store import TaskStore

__all__ = ["EXPIRED_GRACE_MS", "Sweeper"]

EXPIRED_GRACE_MS = 60_000
"""How long a task that expired while running stays readable (as failed) before it is dropped."""


class Sweeper:
    """Expires what is due; woken early whenever a task is created (its deadline may be the next)."""

    def __init__(self, writer: TaskWriter, store: TaskStore) -> None:
        self._writer = writer
        self._store = store
        self._wakeup = anyio.Event()

    def deadline(self, ttl_ms: int | None) -> float:
        """The deadline of a task created now with ``ttl_ms``; ``inf`` for an unlimited TTL."""
        return math.inf if ttl_ms is None else self._writer.monotonic() + ttl_ms / 1000

    def wake(self) -> None:
        self._wakeup.set()

    async def retain_if_ended(self, record: TaskRecord) -> None:
        """Restart retention at the terminal transition, so a result is never lost to a run that
        used up most of its TTL."""
        if record.task.is_terminal and record.task.ttl_ms is not None:
            record.expires_at = self._writer.monotonic() + record.task.ttl_ms / 1000
            await self._store.reschedule(record)

    async def sweep(self) -> int:
        """Expire what is due: running tasks fail (kept for a grace period), ended ones go."""
        removed = 0
        for record in await self._store.pop_expired(self._writer.monotonic()):
            if record.task.is_terminal:
                await self._store.remove(record.task.task_id)
                removed += 1
                continue
            ttl = record.task.ttl_ms
            error = JsonRpcError(INTERNAL_ERROR, f"Task exceeded its TTL of {ttl} ms and was stopped")
            await self._writer.finish(record, TaskEvent.FAIL, error=error, stop_work=True)
            grace_ms = min(ttl or EXPIRED_GRACE_MS, EXPIRED_GRACE_MS)
            record.expires_at = self._writer.monotonic() + grace_ms / 1000
            await self._store.reschedule(record)
        return removed

    async def run(self, *, max_sleep_s: float = 1.0) -> None:
        """Sweep forever; wakes at most every ``max_sleep_s`` and whenever a task is created."""
        while True:
            await self.sweep()
            self._wakeup = anyio.Event()
            with anyio.move_on_after(max_sleep_s):
                await self._wakeup.wait()
