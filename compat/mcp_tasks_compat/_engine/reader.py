"""Reading tasks: from the store into this process's records, and as the wire answers them.

Getting a task, four ways that differ in meaning:

* :meth:`TaskReader.lookup` ``(task_id, owner)``: the record of the owner's task, read from the
  store now; :class:`~.limits.UnknownTask` when unknown, expired or another owner's.
* :meth:`TaskReader.get` ``(task_id, owner)``: the task as a read answers it (:meth:`~TaskReader.lookup`,
  then :meth:`~TaskReader.shown`: its poll hint computed for its age now).
* :meth:`TaskReader.refresh` ``(record)``: re-read a record this process already holds.
* :meth:`TaskReader.record_of` ``(state)``: this process's record for a state already read.

An engine holds one (``engine.reader``); its writer and the parts that only read (the input
relay's waits, the sweeper's clock, the replica link's re-reads) use that same one, so the
records of this process are one set.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Final, cast

from ..core._model import Task
from ..errors import INVALID_PARAMS, PeerProtocolError, TaskStoreError
from .limits import LIST_PAGE_SIZE, TaskLimits, UnknownTask, echoed_id
from .polling import PollPolicy
from .records import LiveRecords, TaskRecord, adopt
from .stores import TaskState, TaskStore
from .stores.contract import decode_cursor

__all__ = ["CLOCK_READ_BOUND_S", "TaskReader"]

CLOCK_READ_BOUND_S: Final = 0.5
"""A read of the store's clock slower than this says too little about the offset to keep it."""


class TaskReader:
    """Reads one store's tasks for this process: its records of them, and what a read answers."""

    def __init__(
        self,
        store: TaskStore,
        *,
        poll_policy: PollPolicy,
        limits: TaskLimits,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.poll_policy = poll_policy
        self.limits = limits
        self.clock = clock
        """Seconds since the epoch: :meth:`now`, and the writer's rate bound of status messages."""
        self.store_offset_s = 0.0
        """How far the store's clock is ahead of :attr:`clock` (:meth:`sync_clock`)."""
        self.records = LiveRecords()
        """The tasks something of which lives in this process; the writer keeps the same ones."""

    def now(self) -> datetime:
        """The store's clock, as read here: every deadline and lease is on it, so replicas whose
        own clocks disagree still agree on when a lease runs out (:meth:`sync_clock`)."""
        return datetime.fromtimestamp(self.clock() + self.store_offset_s, timezone.utc)

    async def sync_clock(self) -> None:
        """Read the store's clock (a store with ``now()``: Redis ``TIME``, the SQLite host's) and
        keep how far it is from this process's; a store without one is this process's clock.

        The offset is taken at the midpoint of the read; a read slower than
        :data:`CLOCK_READ_BOUND_S` (this process paused, a stalled store) keeps the last one.
        """
        store_now = getattr(self.store, "now", None)
        if store_now is None:
            return
        before = self.clock()
        theirs = cast("datetime", await store_now())
        after = self.clock()
        if after - before <= CLOCK_READ_BOUND_S:
            self.store_offset_s = theirs.timestamp() - (before + after) / 2

    def deadline(self, ttl_ms: int | None) -> datetime | None:
        """When a task created (or ended) now with ``ttl_ms`` may be dropped; ``None``: never."""
        return None if ttl_ms is None else self.now() + timedelta(milliseconds=ttl_ms)

    def stamped(self, old: TaskState, new: TaskState) -> TaskState:
        """``new`` (a change of ``old``) time-stamped on this clock, its poll hint for its age;
        retention restarted at its terminal transition, so a result is never lost to a run that
        used up most of its TTL. The writer stamps every change it saves with it."""
        if new.task is old.task:
            return new
        now = self.now()
        task = new.task
        if task.poll_interval_ms == old.task.poll_interval_ms:
            age_ms = (now - task.created_at) / timedelta(milliseconds=1)
            task = task.evolve(poll_interval_ms=self.poll_policy.hint_ms(age_ms))
        new = new.evolve(task=task.evolve(last_updated_at=now))
        if new.is_terminal and not old.is_terminal:
            new = new.evolve(expires_at=self.deadline(task.ttl_ms))
        return new

    async def lookup(
        self, task_id: str, owner: str | None, *, also_of: Callable[[str], bool] | None = None
    ) -> TaskRecord:
        """The record, or :class:`~.limits.UnknownTask` (unknown, expired, or another principal's).

        The state is read from the store, so a task created or changed on another replica is
        seen as it is now; except a task that ended here a moment ago, before its deadline
        (``records.LiveRecords.recently_ended``: an ended state never changes again).
        ``also_of(stored_owner)``: other owners whose tasks this read may see.
        """
        self.limits.check_task_id(task_id)
        state = self.records.recently_ended(task_id)
        if state is None or (state.expires_at is not None and state.expires_at <= self.now()):
            state = await self.store.get(task_id)
        if state is None:
            self.records.drop(task_id)
            raise UnknownTask(task_id)
        visible = (
            state.owner is None or state.owner == owner or (also_of is not None and also_of(state.owner))
        )
        if not visible:
            raise UnknownTask(task_id)
        return self.records.record_of(state)

    async def refresh(self, record: TaskRecord) -> bool:
        """Re-read the record's state from the store (another process may have changed it);
        whether it had changed."""
        state = await self.store.get(record.task.task_id)
        if state is None:
            self.records.drop(record.task.task_id)
            record.wake_waiters()
            return False
        return adopt(record, state)

    async def record_for(self, task_id: str) -> TaskRecord | None:
        """The record held here for ``task_id``, else one for its stored state (no owner asked:
        for a run reporting on its own task); ``None``: no such task."""
        record = self.records.get(task_id)
        if record is None:
            state = await self.store.get(task_id)
            record = None if state is None else self.record_of(state)
        return record

    def record_of(self, state: TaskState) -> TaskRecord:
        """This process's record for ``state`` (a fresh one if nothing of it lives here)."""
        return self.records.record_of(state)

    def watch(self, record: TaskRecord) -> TaskRecord:
        """Register interest in a task's changes; returns the canonical record of this process."""
        return self.records.watch(record)

    def unwatch(self, record: TaskRecord) -> None:
        self.records.unwatch(record)

    async def watch_current(self, record: TaskRecord) -> TaskRecord:
        """:meth:`watch`, then the task re-read from a shared store: a change another process
        announced between the read that found ``record`` and the watch found nothing held here,
        so its event was dropped and no later one comes for an ended task (a waiter would wait
        for ever on a state the store left behind). Unwatched again when the re-read fails."""
        canonical = self.watch(record)
        if self.store.shared and not canonical.task.is_terminal:
            try:
                await self.refresh(canonical)
            except BaseException:
                self.unwatch(canonical)
                raise
        return canonical

    # --- as the wire answers -------------------------------------------------------------------

    def shown(self, task: Task) -> Task:
        """``task`` as a read answers it: its poll hint computed for its age now.

        The one poll-hint rule for reads, on every dialect and major: a quiet task's hint grows
        with its age (:class:`PollPolicy`); a terminal task keeps the hint it ended with.
        """
        if task.is_terminal:
            return task
        age_ms = (self.now() - task.created_at) / timedelta(milliseconds=1)
        hint = self.poll_policy.hint_ms(age_ms)
        return task if hint == task.poll_interval_ms else task.evolve(poll_interval_ms=hint)

    async def get(self, task_id: str, owner: str | None) -> Task:
        """The owner's task as a read answers it (:meth:`shown`), else :class:`~.limits.UnknownTask`."""
        return self.shown((await self.lookup(task_id, owner)).task)

    async def list_page(
        self, owner: str | None, cursor: object, *, size: int = LIST_PAGE_SIZE
    ) -> tuple[list[Task], str | None]:
        """One ``tasks/list`` page of ``owner``'s tasks after ``cursor``, as reads answer them.

        The store's own cursor is the wire cursor: one page is one store read, in creation order.
        A cursor that is not one a store issues (or not a string) is -32602.
        """
        if cursor is not None:
            if not isinstance(cursor, str):
                raise PeerProtocolError("tasks/list: 'cursor' must be a string", jsonrpc_code=INVALID_PARAMS)
            try:
                decode_cursor(cursor)
            except TaskStoreError:
                raise PeerProtocolError(
                    f"tasks/list: invalid cursor {echoed_id(cursor)!r} (not one this server issued)",
                    jsonrpc_code=INVALID_PARAMS,
                ) from None
        states, next_cursor = await self.store.list_tasks(owner=owner, cursor=cursor, limit=size)
        return [self.shown(state.task) for state in states], next_cursor

    async def owned_by(self, owner: str | None) -> list[Task]:
        """Every task of ``owner``, in creation order (all pages of the store), as stored."""
        tasks: list[Task] = []
        cursor: str | None = None
        while True:
            page, cursor = await self.store.list_tasks(owner=owner, cursor=cursor)
            tasks.extend(state.task for state in page)
            if cursor is None:
                return tasks

    async def wait_terminal(self, task_id: str, owner: str | None) -> Task:
        """Wait until the task is terminal (any number of concurrent waiters, on any replica)."""
        record = await self.watch_current(await self.lookup(task_id, owner))
        try:
            while not record.task.is_terminal:
                await record.changed.wait()
            return record.task
        finally:
            self.unwatch(record)
