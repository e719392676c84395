"""Where task records live: the :class:`TaskStore` contract and the in-memory default."""

from __future__ import annotations

import heapq
import math
from typing import Protocol

from .state import TaskRecord

__all__ = ["InMemoryTaskStore", "TaskStore"]


class TaskStore(Protocol):
    """Where task records live. The in-memory default is enough for one process.

    A durable store keeps the same contract: ``get`` returns ``None`` for unknown ids, and
    ``pop_expired`` returns records whose deadline passed, without scanning the live ones.
    """

    async def add(self, record: TaskRecord) -> None: ...

    async def get(self, task_id: str) -> TaskRecord | None: ...

    async def remove(self, task_id: str) -> None: ...

    async def reschedule(self, record: TaskRecord) -> None: ...

    async def pop_expired(self, now: float) -> list[TaskRecord]: ...

    async def owned_by(self, owner: str | None) -> list[TaskRecord]: ...


class InMemoryTaskStore:
    """Dict + expiry heap. Rescheduling pushes a new heap entry; stale entries are skipped."""

    def __init__(self) -> None:
        self._records: dict[str, TaskRecord] = {}
        self._heap: list[tuple[float, str]] = []

    def __len__(self) -> int:
        return len(self._records)

    async def add(self, record: TaskRecord) -> None:
        self._records[record.task.task_id] = record
        if record.expires_at != math.inf:
            heapq.heappush(self._heap, (record.expires_at, record.task.task_id))

    async def get(self, task_id: str) -> TaskRecord | None:
        return self._records.get(task_id)

    async def remove(self, task_id: str) -> None:
        self._records.pop(task_id, None)

    async def reschedule(self, record: TaskRecord) -> None:
        if record.expires_at != math.inf:
            heapq.heappush(self._heap, (record.expires_at, record.task.task_id))

    async def pop_expired(self, now: float) -> list[TaskRecord]:
        due: list[TaskRecord] = []
        seen: set[str] = set()
        while self._heap and self._heap[0][0] <= now:
            deadline, task_id = heapq.heappop(self._heap)
            record = self._records.get(task_id)
            # Skip stale entries, and duplicates: a reschedule to an equal deadline (a coarse
            # clock) must not hand out one record twice, or a task would expire twice at once.
            if record is not None and record.expires_at == deadline and task_id not in seen:
                seen.add(task_id)
                due.append(record)
        return due

    async def owned_by(self, owner: str | None) -> list[TaskRecord]:
        return [r for r in self._records.values() if r.owner == owner]
