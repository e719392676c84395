"""The workers' queue: how a store hands queued tasks to worker processes, one delivery each.

A task whose runs are queued (``TaskState.run_on == "workers"``) is *queued* while no worker claims
it (:attr:`~.task_state.TaskState.queued`). A store with a queue adds an entry for it in the same
atomic step as the write that makes it queued (its create, a re-queue after a lost run, a
worker's give-back): a task is never queued without an entry, nor an entry added twice for one
wait. An entry names the task and the claim (fencing token) it was queued under, nothing more:
the task's state stays the truth. A worker :meth:`~TaskQueue.take` s entries, claims each task by
compare-and-set on that token (so of two workers handed the same task, say after a redelivery,
only one runs it), then :meth:`~TaskQueue.ack` s the entry, whatever the claim found.

The stores use their own engine's queue primitive: Redis a stream read by one consumer group
(``XADD`` in the write's script, ``XREADGROUP``, ``XAUTOCLAIM`` for the entries of a worker that
died between delivery and claim, ``XACK``); SQLite a table filled by a trigger of the write and
taken by one ``UPDATE ... RETURNING``; the in-memory store a deque (one process: for tests).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable

from .contract import TaskStore

__all__ = ["QUEUE_GROUP", "QueueEntry", "TaskQueue", "queue_of"]

QUEUE_GROUP = "workers"
"""The name of the one consumer group (Redis): every worker of a store's prefix reads in it."""


@dataclass(frozen=True, slots=True)
class QueueEntry:
    """One delivery: task ``task_id`` was queued under ``claim`` at ``queued_at`` (the store's clock)."""

    entry_id: str
    task_id: str
    claim: int
    queued_at: datetime


@runtime_checkable
class TaskQueue(Protocol):
    """What a store's queue does for workers (entries are added by the store's own writes)."""

    async def take(
        self, consumer: str, count: int, *, wait_s: float, redeliver_after_s: float
    ) -> list[QueueEntry]:
        """Up to ``count`` entries for ``consumer``, waiting up to ``wait_s`` for the first.

        An entry handed to another consumer more than ``redeliver_after_s`` ago and never acked
        (that worker died between delivery and claim) is handed again; any other entry is handed
        to one consumer only.
        """
        ...

    async def ack(self, entry: QueueEntry) -> None:
        """The entry is done with (its task claimed, or found not to need a run): never handed again."""
        ...

    async def depth(self) -> int:
        """Entries not yet acked (waiting, or handed and not yet claimed)."""
        ...


def queue_of(store: TaskStore) -> TaskQueue | None:
    """``store``'s queue, or ``None`` for a store that has none (a custom store, say)."""
    queue = getattr(store, "queue", None)
    return queue if isinstance(queue, TaskQueue) else None
