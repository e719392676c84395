"""The in-memory store: one process, a dict plus two sorted indexes, nothing shared."""

from __future__ import annotations

import bisect
import itertools
from collections import deque
from datetime import datetime, timezone

import anyio

from .contract import (
    EVERY_OWNER,
    ActiveLimitReached,
    EveryOwner,
    Notifier,
    SilentNotifier,
    StoreConflict,
    decode_cursor,
    encode_cursor,
)
from .queue import QueueEntry
from .task_state import TaskState

__all__ = ["InMemoryTaskStore", "MemoryTaskQueue"]


class MemoryTaskQueue:
    """One process's queue (workers in the same process: tests): a deque and a wake-up event."""

    def __init__(self) -> None:
        self._waiting: deque[QueueEntry] = deque()
        self._serial = itertools.count(1)
        self._added: anyio.Event | None = None  # made when a take waits (on its event loop)

    def put(self, state: TaskState) -> None:
        entry = QueueEntry(str(next(self._serial)), state.task_id, state.claim, datetime.now(timezone.utc))
        self._waiting.append(entry)
        if self._added is not None:
            self._added.set()

    async def take(
        self, consumer: str, count: int, *, wait_s: float, redeliver_after_s: float
    ) -> list[QueueEntry]:
        del consumer, redeliver_after_s  # one process: a worker that took an entry lives as long as it
        if not self._waiting:
            self._added = added = anyio.Event()
            with anyio.move_on_after(wait_s):
                await added.wait()
        return [self._waiting.popleft() for _ in range(min(count, len(self._waiting)))]

    async def ack(self, entry: QueueEntry) -> None:
        del entry  # taken entries left the deque already

    async def depth(self) -> int:
        return len(self._waiting)


class InMemoryTaskStore:
    """One process: a dict plus two sorted indexes (deadlines, creation order), never scanned whole.

    The default store (``store=None`` or ``"memory:"``); a test keeps one to look inside. Example::

        store = InMemoryTaskStore()
        app = TaskServer("builder", store=store)
        ...  # a task run through connect_in_memory(app)
        state = await store.get(task_id)  # what the server keeps: state.task is the Task
        assert state is not None and state.task.status is TaskStatus.COMPLETED
    """

    def __init__(self) -> None:
        self._states: dict[str, TaskState] = {}
        self._deadlines: list[tuple[datetime, str]] = []  # sorted: what is due comes first
        self._order: list[tuple[datetime, str]] = []  # (created_at, id), sorted: the list order
        self._active: dict[str | None, int] = {}  # owner -> tasks not terminal (the create limit)
        self._notifier = SilentNotifier()
        self.queue = MemoryTaskQueue()
        """The workers' queue, filled by this store's own writes (one process: for tests)."""

    def __len__(self) -> int:
        return len(self._states)

    @property
    def shared(self) -> bool:
        """No other process reads it: the engine needs no leases, notifier or re-reads."""
        return False

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

    async def create(self, state: TaskState, *, active_limit: int | None = None) -> None:
        if state.task_id in self._states:
            raise StoreConflict(state.task_id, self._states[state.task_id])
        if active_limit is not None and (active := self._active.get(state.owner, 0)) >= active_limit:
            raise ActiveLimitReached(active)
        self._states[state.task_id] = state
        bisect.insort(self._order, (state.task.created_at, state.task_id))
        _insert(self._deadlines, state.expires_at, state.task_id)
        self._count(state, +1)
        if state.queued:
            self.queue.put(state)

    async def get(self, task_id: str) -> TaskState | None:
        return self._states.get(task_id)

    async def save(self, state: TaskState, *, fence: int | None = None) -> TaskState:
        current = self._states.get(state.task_id)
        stale = fence is not None and current is not None and current.claim != fence
        if current is None or current.version != state.version or stale:
            raise StoreConflict(state.task_id, current)
        saved = state.evolve(version=state.version + 1)
        self._states[state.task_id] = saved
        self._count(current, -1)  # the old state out, the new one in: an owner change moves it too
        self._count(saved, +1)
        if saved.queued and not current.queued:
            self.queue.put(saved)
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


def _insert(index: list[tuple[datetime, str]], key: datetime | None, task_id: str) -> None:
    if key is not None:
        bisect.insort(index, (key, task_id))


def _remove(index: list[tuple[datetime, str]], key: datetime | None, task_id: str) -> None:
    if key is None:
        return
    position = bisect.bisect_left(index, (key, task_id))
    if position < len(index) and index[position] == (key, task_id):
        del index[position]
