"""One layer between the engine and its store: every operation handed on, and hooks told of each.

The engine wants two things told of its store's operations: whether the store answers (its
health, ``_engine/outage.py``) and how long each took and whether it raised (its metrics,
``_engine/observed.py``). Both are hooks on this one layer (:class:`DelegatingStore`), so neither
can see an operation the other misses: the workers' queue included, which the layer hands on
through a queue of its own (:attr:`DelegatingStore.queue`, what :func:`~.queue.queue_of` finds
on it), not the inner store's reached around the hooks.

A hook is told before an operation (it returns a mark: a clock reading, an outage's epoch), then
after it, that it succeeded or raised (with the mark). Hooks nest in the order given: the first
is told first before and last after, so the last one's mark is the nearest to the store's own
work (a timer's reading excludes the other hooks). With no hook the store is used as it is.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, ParamSpec, Protocol, TypeVar

from .contract import EVERY_OWNER, EveryOwner, Notifier, TaskStore
from .queue import QueueEntry, TaskQueue, queue_of
from .task_state import TaskState

__all__ = [
    "OPERATIONS",
    "DelegatingQueue",
    "DelegatingStore",
    "StoreHook",
    "StoreOperation",
    "delegating",
]

T = TypeVar("T")
P = ParamSpec("P")
Mark = TypeVar("Mark")


@dataclass(frozen=True, slots=True)
class StoreOperation:
    """One operation of the store contract or its queue, as the hooks are told of it."""

    name: str
    """As the metrics name it (``mcp_tasks.store.operation``): ``save``, ``queue_take``."""
    writes: bool
    """It changes the store: its success proves that writes land (a locked SQLite file still reads)."""


OPEN: Final = StoreOperation("open", writes=False)
CREATE: Final = StoreOperation("create", writes=True)
GET: Final = StoreOperation("get", writes=False)
SAVE: Final = StoreOperation("save", writes=True)
DELETE: Final = StoreOperation("delete", writes=True)
COUNT_ACTIVE: Final = StoreOperation("count_active", writes=False)
DUE_FOR_EXPIRY: Final = StoreOperation("due_for_expiry", writes=False)
NEXT_EXPIRY: Final = StoreOperation("next_expiry", writes=False)
LEASE_EXPIRED: Final = StoreOperation("lease_expired", writes=False)
LIST_TASKS: Final = StoreOperation("list_tasks", writes=False)
QUEUE_TAKE: Final = StoreOperation("queue_take", writes=False)  # an empty take only reads (SQLite)
QUEUE_ACK: Final = StoreOperation("queue_ack", writes=True)
QUEUE_DEPTH: Final = StoreOperation("queue_depth", writes=False)

OPERATIONS: Final = (
    OPEN,
    CREATE,
    GET,
    SAVE,
    DELETE,
    COUNT_ACTIVE,
    DUE_FOR_EXPIRY,
    NEXT_EXPIRY,
    LEASE_EXPIRED,
    LIST_TASKS,
    QUEUE_TAKE,
    QUEUE_ACK,
    QUEUE_DEPTH,
)
"""Every operation the layer tells its hooks of (``close`` and the notifier are handed on untold)."""


class StoreHook(Protocol[Mark]):
    """What the layer tells of each operation: before it (the hook's mark returned), then once after."""

    def before(self, operation: StoreOperation) -> Mark: ...

    def succeeded(self, operation: StoreOperation, mark: Mark) -> None: ...

    def raised(self, operation: StoreOperation, mark: Mark, exc: BaseException) -> None:
        """``exc``: the store's error, an answer (a lost compare-and-set) or a cancellation."""
        ...


def delegating(store: TaskStore, *hooks: StoreHook[Any] | None) -> TaskStore:
    """``store`` behind a :class:`DelegatingStore` telling ``hooks`` (the ``None`` among them: a
    hook that does not apply, left out); ``store`` itself when none is left."""
    told = [hook for hook in hooks if hook is not None]
    return DelegatingStore(store, told) if told else store


async def _told(
    hooks: Sequence[StoreHook[Any]],
    operation: StoreOperation,
    call: Callable[P, Awaitable[T]],
    *args: P.args,
    **kwargs: P.kwargs,
) -> T:
    """``call(*args, **kwargs)``, each hook told before it and after it (in reverse order: they nest)."""
    marks = [hook.before(operation) for hook in hooks]
    try:
        answer = await call(*args, **kwargs)
    except BaseException as exc:
        for hook, mark in zip(reversed(hooks), reversed(marks), strict=True):
            hook.raised(operation, mark, exc)
        raise
    for hook, mark in zip(reversed(hooks), reversed(marks), strict=True):
        hook.succeeded(operation, mark)
    return answer


class DelegatingQueue:
    """The inner store's :class:`~.queue.TaskQueue`, each operation told to the store's hooks."""

    def __init__(self, inner: TaskQueue, hooks: Sequence[StoreHook[Any]]) -> None:
        self.inner = inner
        self.hooks = hooks

    async def take(
        self, consumer: str, count: int, *, wait_s: float, redeliver_after_s: float
    ) -> list[QueueEntry]:
        return await _told(
            self.hooks,
            QUEUE_TAKE,
            self.inner.take,
            consumer,
            count,
            wait_s=wait_s,
            redeliver_after_s=redeliver_after_s,
        )

    async def ack(self, entry: QueueEntry) -> None:
        await _told(self.hooks, QUEUE_ACK, self.inner.ack, entry)

    async def depth(self) -> int:
        return await _told(self.hooks, QUEUE_DEPTH, self.inner.depth)


class DelegatingStore:
    """A :class:`~.contract.TaskStore` that hands every operation on to ``inner`` and tells its
    ``hooks`` of each (:data:`OPERATIONS`); anything else is the inner store's."""

    def __init__(self, inner: TaskStore, hooks: Sequence[StoreHook[Any]]) -> None:
        self.inner = inner
        self.hooks: tuple[StoreHook[Any], ...] = tuple(hooks)
        queue = queue_of(inner)
        self.queue: TaskQueue | None = DelegatingQueue(queue, self.hooks) if queue is not None else None
        """The inner store's queue through the hooks (``None``: the store has none)."""

    @property
    def shared(self) -> bool:
        return self.inner.shared

    @property
    def notifier(self) -> Notifier:
        return self.inner.notifier

    @property
    def describe(self) -> str:
        return self.inner.describe

    async def open(self) -> None:
        await _told(self.hooks, OPEN, self.inner.open)

    async def close(self) -> None:
        await self.inner.close()

    async def create(self, state: TaskState, *, active_limit: int | None = None) -> None:
        await _told(self.hooks, CREATE, self.inner.create, state, active_limit=active_limit)

    async def get(self, task_id: str) -> TaskState | None:
        return await _told(self.hooks, GET, self.inner.get, task_id)

    async def save(self, state: TaskState, *, fence: int | None = None) -> TaskState:
        return await _told(self.hooks, SAVE, self.inner.save, state, fence=fence)

    async def delete(self, task_id: str) -> None:
        await _told(self.hooks, DELETE, self.inner.delete, task_id)

    async def count_active(self, owner: str | None, *, at_most: int) -> int:
        return await _told(self.hooks, COUNT_ACTIVE, self.inner.count_active, owner, at_most=at_most)

    async def due_for_expiry(self, now: datetime, *, limit: int = 100) -> list[TaskState]:
        return await _told(self.hooks, DUE_FOR_EXPIRY, self.inner.due_for_expiry, now, limit=limit)

    async def next_expiry(self) -> datetime | None:
        return await _told(self.hooks, NEXT_EXPIRY, self.inner.next_expiry)

    async def lease_expired(self, now: datetime, *, limit: int = 100) -> list[TaskState]:
        return await _told(self.hooks, LEASE_EXPIRED, self.inner.lease_expired, now, limit=limit)

    async def list_tasks(
        self, *, owner: str | EveryOwner | None = EVERY_OWNER, cursor: str | None = None, limit: int = 100
    ) -> tuple[list[TaskState], str | None]:
        return await _told(
            self.hooks, LIST_TASKS, self.inner.list_tasks, owner=owner, cursor=cursor, limit=limit
        )

    def __getattr__(self, name: str) -> object:
        """Anything else a store has (its clock, a test's or a tool's look inside) is the inner store's."""
        return getattr(self.inner, name)
