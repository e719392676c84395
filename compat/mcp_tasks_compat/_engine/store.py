"""Where task states live: the :class:`TaskStore` and :class:`Notifier` contracts, and the in-memory store.

Storage only, like the python-sdk's own task store: a store keeps :class:`~.persisted.TaskState`
values and never runs work. Every write is a compare-and-set on ``version``, so two processes
sharing a store (a restarted server, replicas behind a load balancer) never overwrite each
other's transitions silently: the loser re-reads and asks the lifecycle table again, which keeps
a cancelled task cancelled when another replica finishes its work.

The notifier carries what a process must hear *now* from another one: a task changed (wake the
waiters), its cancellation was asked (stop the work), input was answered (deliver it to the
work). In one process the engine wakes its own waiters, so the in-memory notifier is a no-op.

Contract (checked for every store by ``tests/contracts/test_task_store.py``):

* ``create`` is durable when it returns (the spec wants a task readable before the create answer
  is sent); an id that exists raises :class:`StoreConflict`.
* ``get`` returns ``None`` for an unknown (or deleted) id.
* ``save(state)`` writes ``state`` with ``version + 1`` and returns it, if the stored version is
  ``state.version``; otherwise it raises :class:`StoreConflict` carrying the stored state (or
  ``None`` if the task is gone).
* ``due_for_expiry(now)`` returns states whose ``expires_at`` is at or before ``now``, soonest
  first, without scanning tasks that are not due; ``next_expiry()`` the soonest deadline.
* ``lease_expired(now)`` returns non-terminal states with a ``runner`` whose ``lease_until`` is
  at or before ``now``.
* ``list_tasks(owner=..., cursor=..., limit=...)`` pages through an owner's tasks (or every
  owner's, :data:`EVERY_OWNER`) in creation order; the cursor is opaque and ``None`` at the end.
"""

from __future__ import annotations

import bisect
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Final, Literal, Protocol

import anyio

from ..core.model import format_timestamp, parse_timestamp
from ..errors import TaskStoreError
from .persisted import TaskState

__all__ = [
    "EVERY_OWNER",
    "EveryOwner",
    "InMemoryTaskStore",
    "Notifier",
    "SilentNotifier",
    "StoreConflict",
    "StoreEvent",
    "TaskStore",
    "TaskStoreError",
    "decode_cursor",
    "encode_cursor",
]


class EveryOwner:
    """The type of :data:`EVERY_OWNER` (a store's ``list_tasks`` may test ``owner is EVERY_OWNER``)."""

    def __repr__(self) -> str:
        return "EVERY_OWNER"


EVERY_OWNER: Final = EveryOwner()
"""``list_tasks(owner=EVERY_OWNER)``: every task, for operators (``owner=None`` means unowned)."""

EventKind = Literal["changed", "cancel", "input"]


@dataclass(frozen=True)
class StoreEvent:
    """One message between processes sharing a store: what happened to which task, and who said so."""

    kind: EventKind
    task_id: str
    origin: str


class StoreConflict(Exception):
    """A compare-and-set lost: ``current`` is what the store holds now (``None``: the task is gone)."""

    def __init__(self, task_id: str, current: TaskState | None) -> None:
        self.task_id = task_id
        self.current = current
        super().__init__(f"task {task_id} changed in the store meanwhile")


class Notifier(Protocol):
    """Carries :class:`StoreEvent` between the processes sharing a store."""

    async def publish(self, event: StoreEvent) -> None: ...

    def subscribe(self) -> AbstractAsyncContextManager[AsyncIterator[StoreEvent]]:
        """``async with notifier.subscribe() as events: async for event in events: ...``.

        Events published while subscribed are delivered; a notifier that cannot deliver (the
        connection dropped) raises :class:`TaskStoreError` from the iterator.
        """
        ...


class TaskStore(Protocol):
    """Where task states live (see the module docstring for the contract every store keeps)."""

    @property
    def notifier(self) -> Notifier: ...

    @property
    def describe(self) -> str:
        """What and where the store is, for messages (``memory:``, ``sqlite:///tasks.db``)."""
        ...

    async def open(self) -> None:
        """Connect, create or migrate; idempotent. A bad store raises :class:`TaskStoreError`."""
        ...

    async def close(self) -> None: ...

    async def create(self, state: TaskState) -> None: ...

    async def get(self, task_id: str) -> TaskState | None: ...

    async def save(self, state: TaskState) -> TaskState: ...

    async def delete(self, task_id: str) -> None: ...

    async def count_active(self, owner: str | None, *, at_most: int) -> int:
        """How many of ``owner``'s tasks are not terminal, counting no further than ``at_most``.

        The engine asks it before every create (the per-owner limit), so it must not read every
        task the owner ever had: terminal ones are skipped by an index or a counter.
        """
        ...

    async def due_for_expiry(self, now: datetime, *, limit: int = 100) -> list[TaskState]: ...

    async def next_expiry(self) -> datetime | None: ...

    async def lease_expired(self, now: datetime, *, limit: int = 100) -> list[TaskState]: ...

    async def list_tasks(
        self, *, owner: str | EveryOwner | None = EVERY_OWNER, cursor: str | None = None, limit: int = 100
    ) -> tuple[list[TaskState], str | None]: ...


class SilentNotifier:
    """One process: nothing to tell anyone (the engine wakes its own waiters)."""

    async def publish(self, event: StoreEvent) -> None:
        del event

    @asynccontextmanager
    async def subscribe(self) -> AsyncGenerator[AsyncIterator[StoreEvent], None]:
        yield _Never()


class _Never:
    """An event stream on which nothing ever arrives."""

    def __aiter__(self) -> _Never:
        return self

    async def __anext__(self) -> StoreEvent:
        await anyio.sleep_forever()
        raise StopAsyncIteration  # pragma: no cover - sleep_forever only ends by cancellation


class InMemoryTaskStore:
    """One process: a dict plus two sorted indexes (deadlines, creation order), never scanned whole."""

    shared: Final = False
    """No other process reads it: the engine needs no leases, notifier or re-reads."""

    def __init__(self) -> None:
        self._states: dict[str, TaskState] = {}
        self._deadlines: list[tuple[datetime, str]] = []  # sorted: what is due comes first
        self._order: list[tuple[datetime, str]] = []  # (created_at, id), sorted: the list order
        self._active: dict[str | None, int] = {}  # owner -> tasks not terminal (the create limit)
        self._notifier = SilentNotifier()

    def __len__(self) -> int:
        return len(self._states)

    @property
    def notifier(self) -> Notifier:
        return self._notifier

    @property
    def describe(self) -> str:
        return "memory:"

    async def open(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def create(self, state: TaskState) -> None:
        if state.task_id in self._states:
            raise StoreConflict(state.task_id, self._states[state.task_id])
        self._states[state.task_id] = state
        bisect.insort(self._order, (state.task.created_at, state.task_id))
        _insert(self._deadlines, state.expires_at, state.task_id)
        self._count(state, +1)

    async def get(self, task_id: str) -> TaskState | None:
        return self._states.get(task_id)

    async def save(self, state: TaskState) -> TaskState:
        current = self._states.get(state.task_id)
        if current is None or current.version != state.version:
            raise StoreConflict(state.task_id, current)
        saved = state.evolve(version=state.version + 1)
        self._states[state.task_id] = saved
        self._count(current, -1)  # the old state out, the new one in: an owner change moves it too
        self._count(saved, +1)
        if saved.expires_at != current.expires_at:
            _remove(self._deadlines, current.expires_at, state.task_id)
            _insert(self._deadlines, saved.expires_at, state.task_id)
        if saved.task.created_at != current.task.created_at:  # the list order follows the saved state
            _remove(self._order, current.task.created_at, state.task_id)
            bisect.insort(self._order, (saved.task.created_at, state.task_id))
        return saved

    async def delete(self, task_id: str) -> None:
        state = self._states.pop(task_id, None)
        if state is not None:
            _remove(self._order, state.task.created_at, task_id)
            _remove(self._deadlines, state.expires_at, task_id)
            self._count(state, -1)

    def _count(self, state: TaskState, delta: int) -> None:
        """Add ``delta`` to its owner's count of unfinished tasks when ``state`` is one."""
        if state.is_terminal:
            return
        left = self._active.get(state.owner, 0) + delta
        if left > 0:
            self._active[state.owner] = left
        else:
            self._active.pop(state.owner, None)

    async def count_active(self, owner: str | None, *, at_most: int) -> int:
        return min(at_most, self._active.get(owner, 0))

    async def due_for_expiry(self, now: datetime, *, limit: int = 100) -> list[TaskState]:
        end = bisect.bisect_right(self._deadlines, (now, "\U0010ffff"))
        return [self._states[task_id] for _deadline, task_id in self._deadlines[: min(end, limit)]]

    async def next_expiry(self) -> datetime | None:
        return self._deadlines[0][0] if self._deadlines else None

    async def lease_expired(self, now: datetime, *, limit: int = 100) -> list[TaskState]:
        del now, limit
        return []  # one process: its own runs never lose their lease

    async def list_tasks(
        self, *, owner: str | EveryOwner | None = EVERY_OWNER, cursor: str | None = None, limit: int = 100
    ) -> tuple[list[TaskState], str | None]:
        start = 0 if cursor is None else bisect.bisect_right(self._order, decode_cursor(cursor))
        page: list[TaskState] = []
        order = self._order
        for index in range(start, len(order)):  # no slice: a page must not copy the whole index
            state = self._states.get(order[index][1])
            if state is None or (owner is not EVERY_OWNER and state.owner != owner):
                continue
            if len(page) == limit:
                return page, encode_cursor(page[-1])
            page.append(state)
        return page, None


def encode_cursor(last: TaskState) -> str:
    """A page cursor: where the page ended in creation order (valid even if that task is deleted)."""
    return f"{format_timestamp(last.task.created_at)}|{last.task_id}"


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    """(created_at, task id) of a cursor from :func:`encode_cursor`; :class:`TaskStoreError` otherwise."""
    created, sep, task_id = cursor.partition("|")
    try:
        if not sep or not task_id:
            raise ValueError(cursor)
        return parse_timestamp(created), task_id
    except ValueError:
        raise TaskStoreError(f"not a cursor this store issued: {cursor[:40]!r}") from None


def _insert(index: list[tuple[datetime, str]], key: datetime | None, task_id: str) -> None:
    if key is not None:
        bisect.insort(index, (key, task_id))


def _remove(index: list[tuple[datetime, str]], key: datetime | None, task_id: str) -> None:
    if key is None:
        return
    position = bisect.bisect_left(index, (key, task_id))
    if position < len(index) and index[position] == (key, task_id):
        del index[position]
