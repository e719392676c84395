"""The task engine: creates a task, runs its work, applies the outcome, wakes waiters, cancels.

The engine is the only writer of task states (:class:`~.state.TaskWriter`); its input relay
(:attr:`TaskEngine.inputs`) and its sweeper (:attr:`TaskEngine.expiry`) change tasks through it.
Every change is a compare-and-set save to the store, judged again by the lifecycle table when
another process wrote first; with a shared store (SQLite, Redis) the engine also renews the
leases of the runs it holds and follows the store's notifier, so a cancel or an answer given on
another replica reaches the work here.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import partial
from typing import Any

import anyio
import anyio.abc

from ..core.lifecycle import TaskEvent, next_status
from ..core.model import JsonRpcError, Task, TaskStatus, utc_now
from ..dialects import Dialect
from ..errors import INVALID_PARAMS, PeerProtocolError, TaskStateError, TaskStoreError
from . import runs
from .expiry import Sweeper
from .inputs import InputRelay
from .limits import LIST_PAGE_SIZE, TaskLimits, echoed_id, list_page
from .persisted import TaskState
from .records import LiveRecords, adopt
from .replicas import ReplicaLink, new_replica_id
from .runs import TaskRuns, pending_call, report_status
from .state import RunStop, StateChange, TaskRecord, new_task_id
from .store import InMemoryTaskStore, StoreConflict, StoreEvent, TaskStore

__all__ = ["DEFAULT_TTL_FLOOR_MS", "PollPolicy", "TaskEngine", "current_run", "pending_call", "report_status"]

logger = logging.getLogger("mcp_tasks_compat.engine")

DEFAULT_TTL_FLOOR_MS = 3_600_000
"""Real long runs need an hour; a client asking for less gets the floor."""

DEFAULT_LEASE_S = 30.0
"""How long a replica's claim on a run holds without renewal (renewed every third of it)."""


@dataclass(frozen=True)
class PollPolicy:
    """The ``pollInterval(Ms)`` hint a task carries: short while it is young, growing with its age.

    hint = clamp(age * ratio, minimum_ms, maximum_ms). The default polls every 10 ms for the
    first 200 ms (a quick tool's result is picked up within a few milliseconds of its end), then
    at a twentieth of the task's age (63 ms at 1.3 s, 500 ms at 10 s), up to 5 s, so a long task
    is never polled in a busy loop. :meth:`proportional` is the schedule before (the benchmark's
    "off" switch).
    """

    minimum_ms: int = 10
    maximum_ms: int = 5_000
    ratio: float = 0.05

    @classmethod
    def proportional(cls) -> PollPolicy:
        """The earlier default: clamp(age * 0.1, 100 ms, 5 s)."""
        return cls(minimum_ms=100, maximum_ms=5_000, ratio=0.1)

    def hint_ms(self, age_ms: float) -> int:
        return int(min(self.maximum_ms, max(self.minimum_ms, age_ms * self.ratio)))


def _ending_changes(
    status: TaskStatus,
    *,
    result: Mapping[str, Any] | None,
    error: JsonRpcError | None,
    message: str | None,
) -> dict[str, Any]:
    """What a terminal transition changes: the status, the outcome, and no input outstanding."""
    changes: dict[str, Any] = {"status": status, "input_requests": {}}
    if result is not None:
        changes["result"] = dict(result)
    if error is not None:
        changes["error"] = error
        changes["status_message"] = message or error.message
    elif message is not None:
        changes["status_message"] = message
    return changes


def current_run() -> tuple[TaskEngine, TaskRecord] | None:
    """The engine and record of the task whose work is running in this context, if any."""
    run = runs.current_run()
    if run is None:
        return None
    engine, record = run
    assert isinstance(engine, TaskEngine)  # a run's writer is the engine that started it
    return engine, record


async def _tell_listeners(record: TaskRecord) -> None:
    """Give every status listener the task as it is now; a dead peer must not break the task."""
    snapshot = record.task
    for listener in list(record.listeners):
        try:
            await listener(snapshot)
        except Exception:
            logger.debug("task %s status listener failed", snapshot.task_id, exc_info=True)


class TaskEngine:
    """Creates, runs, reads, cancels and expires tasks for one server (one replica of it)."""

    def __init__(
        self,
        *,
        store: TaskStore | None = None,
        ttl_floor_ms: int = DEFAULT_TTL_FLOOR_MS,
        default_ttl_ms: int | None = None,
        poll_policy: PollPolicy | None = None,
        status_interval_s: float = 0.1,
        lease_s: float = DEFAULT_LEASE_S,
        clock: Callable[[], float] = time.time,
        limits: TaskLimits | None = None,
    ) -> None:
        if ttl_floor_ms < 0:
            raise ValueError("ttl_floor_ms must be >= 0")
        if lease_s <= 0:
            raise ValueError("lease_s must be positive")
        self.store: TaskStore = store if store is not None else InMemoryTaskStore()
        self.ttl_floor_ms = ttl_floor_ms
        self.default_ttl_ms = default_ttl_ms if default_ttl_ms is not None else ttl_floor_ms
        self.poll_policy = poll_policy or PollPolicy()
        self.limits = limits or TaskLimits()
        self.status_interval_s = status_interval_s
        self.lease_s = lease_s
        replica_id = new_replica_id()
        self.shared = bool(getattr(self.store, "shared", True))
        """Other processes may use the store: leases, the notifier and re-reads matter."""
        self._clock = clock
        self._records = LiveRecords()
        self._opened = False
        self.runs = TaskRuns(self, self._records)
        self.start = self.runs.start
        """Run ``work`` in a task group as the task's run (:meth:`.runs.TaskRuns.start`)."""
        self.begin = self.runs.begin
        """Start ``work`` undecided: its plain outcome or its task (:meth:`.runs.TaskRuns.begin`)."""
        self.inputs = InputRelay(self)
        self.expiry = Sweeper(self, self.store)
        self.replicas = ReplicaLink(
            self, self.store, self._records, self.expiry, replica_id=replica_id, lease_s=lease_s
        )

    def now(self) -> datetime:
        return datetime.fromtimestamp(self._clock(), timezone.utc)

    def effective_ttl(self, requested_ms: int | None, *, requested: bool) -> int | None:
        """The TTL a task gets: the request's (floored), or the default; capped by ``limits``.

        A negative TTL is refused (-32602) rather than silently raised to the floor.
        """
        if not requested:
            return self.limits.ttl(self.default_ttl_ms)
        if requested_ms is None:
            return self.limits.ttl(None)
        if requested_ms < 0:
            raise PeerProtocolError(
                f"params.task.ttl must be >= 0 milliseconds or null, not {requested_ms}",
                jsonrpc_code=INVALID_PARAMS,
            )
        return self.limits.ttl(max(requested_ms, self.ttl_floor_ms))

    # --- creating and running ------------------------------------------------------------------

    async def create(
        self,
        *,
        dialect: Dialect,
        owner: str | None,
        tool_name: str,
        ttl_ms: int | None,
        status_message: str | None = None,
    ) -> TaskRecord:
        """Create a ``working`` task, durably stored (readable by any replica) before this returns.

        Refused (``PeerProtocolError``) when ``owner`` already has its maximum of active tasks.
        """
        await self.limits.admit(self.store, owner)
        now = utc_now()
        task = Task(
            task_id=new_task_id(),
            status=TaskStatus.WORKING,
            created_at=now,
            last_updated_at=now,
            ttl_ms=ttl_ms,
            poll_interval_ms=self.poll_policy.hint_ms(0),
            status_message=status_message,
        )
        state = TaskState(task, dialect, owner, tool_name, expires_at=self.expiry.deadline(ttl_ms))
        if self.shared:
            state = self.replicas.claim(state)
        with anyio.CancelScope(shield=True):  # a write cut off by cancellation may still land
            await self.store.create(state)
        record = TaskRecord(state)
        self._records.add(record)
        self.expiry.wake()
        return record

    # --- changing a task -------------------------------------------------------------------------

    async def finish(
        self,
        record: TaskRecord,
        event: TaskEvent,
        *,
        result: Mapping[str, Any] | None = None,
        error: JsonRpcError | None = None,
        message: str | None = None,
        stop_work: bool = False,
    ) -> None:
        """Apply a terminal event; a task that is already terminal keeps its status (sticky).

        ``stop_work`` cancels the run's scope once the status is saved and before anyone hears of
        it, so work waiting on the task (for input, say) is cancelled rather than woken to find
        its task ended; a run on another replica hears of it through the notifier.
        """

        def end(state: TaskState) -> TaskState | None:
            if state.is_terminal:
                return None
            status = next_status(state.task.status, event)
            changes = _ending_changes(status, result=result, error=error, message=message)
            return state.evolve(task=state.task.evolve(**changes), runner=None, lease_until=None)

        await self.mutate(record, end, force_notify=True, stop=record.scope if stop_work else None)

    async def mutate(
        self,
        record: TaskRecord,
        change: StateChange,
        *,
        force_notify: bool,
        stop: RunStop | None = None,
        announce: bool = True,
    ) -> bool:
        """Apply ``change`` to the latest state and save it (compare-and-set, retried on conflict).

        Then (with ``announce``) wake the waiters, tell the listeners (rate-bounded unless
        ``force_notify``) and the other processes. ``False``: nothing to do, or the task is gone.
        """
        while True:
            proposed = change(record.state)
            if proposed is None:
                return False
            proposed = self._stamp(record.state, proposed)
            try:
                saved = await self.store.save(proposed)
            except StoreConflict as conflict:
                if conflict.current is None:
                    self._records.drop(record.task.task_id)
                    return False
                # Another process wrote first: take its state (and stop the run here if it ended
                # the task there), then judge the change again against it.
                adopt(record, conflict.current)
                continue
            break
        previous, record.state = record.state, saved
        if stop is not None:
            stop.cancel()
        if announce:
            await self._announce(record, previous, force_notify=force_notify)
        return True

    def _stamp(self, old: TaskState, new: TaskState) -> TaskState:
        """Time-stamp a changed task; restart retention at its terminal transition, so a result is
        never lost to a run that used up most of its TTL."""
        if new.task is old.task:
            return new
        now = utc_now()
        task = new.task
        if task.poll_interval_ms == old.task.poll_interval_ms:
            age_ms = (now - task.created_at) / timedelta(milliseconds=1)
            task = task.evolve(poll_interval_ms=self.poll_policy.hint_ms(age_ms))
        new = new.evolve(task=task.evolve(last_updated_at=now))
        if new.is_terminal and not old.is_terminal:
            new = new.evolve(expires_at=self.expiry.deadline(task.ttl_ms))
        return new

    async def _announce(self, record: TaskRecord, previous: TaskState, *, force_notify: bool) -> None:
        record.wake_waiters()
        if self.shared:
            kind = "changed"
            if record.task.status is TaskStatus.CANCELLED and not previous.is_terminal:
                kind = "cancel"
            elif record.state.input_responses != previous.input_responses:
                kind = "input"
            try:
                event = StoreEvent(kind, record.task.task_id, self.replicas.replica_id)
                await self.store.notifier.publish(event)
            except TaskStoreError:
                logger.warning("could not tell other replicas of task %s", record.task.task_id, exc_info=True)
        mono = self._clock()
        if force_notify or mono - record.last_notified >= self.status_interval_s:
            record.last_notified = mono
            await _tell_listeners(record)

    async def set_status_message(self, task: TaskRecord | str, message: str) -> None:
        """Record a progress message (listeners hear it at most every ``status_interval_s``).

        ``task`` is the record (a run reporting on itself) or a task id; an unknown id is ignored.
        """
        record = task if isinstance(task, TaskRecord) else await self._record_by_id(task)
        if record is None:
            return

        def say(state: TaskState) -> TaskState | None:
            if state.is_terminal:
                return None
            return state.evolve(task=state.task.evolve(status_message=message))

        await self.mutate(record, say, force_notify=False)

    # --- reading ---------------------------------------------------------------------------------

    async def lookup(self, task_id: str, owner: str | None) -> TaskRecord:
        """The record, or ``PeerProtocolError`` -32602 (unknown, expired, or another principal's).

        The state is read from the store, so a task created or changed on another replica is
        seen as it is now.
        """
        self.limits.check_task_id(task_id)
        state = await self.store.get(task_id)
        if state is None:
            self._records.drop(task_id)
            raise PeerProtocolError(f"Task not found: {echoed_id(task_id)}", jsonrpc_code=INVALID_PARAMS)
        if state.owner is not None and state.owner != owner:
            raise PeerProtocolError(f"Task not found: {echoed_id(task_id)}", jsonrpc_code=INVALID_PARAMS)
        return self._records.record_of(state)

    async def refresh(self, record: TaskRecord) -> None:
        state = await self.store.get(record.task.task_id)
        if state is None:
            self._records.drop(record.task.task_id)
            record.wake_waiters()
            return
        adopt(record, state)

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
        """The owner's task as a read answers it (:meth:`shown`), else -32602."""
        return self.shown((await self.lookup(task_id, owner)).task)

    async def list_page(
        self, owner: str | None, cursor: object, *, size: int = LIST_PAGE_SIZE
    ) -> tuple[list[Task], str | None]:
        """One ``tasks/list`` page of ``owner``'s tasks after ``cursor``, as reads answer them.

        A cursor this server never issued (or not a string) is -32602 (:func:`.limits.list_page`).
        """
        page, next_cursor = list_page(await self.owned_by(owner), cursor, size=size)
        return [self.shown(task) for task in page], next_cursor

    async def owned_by(self, owner: str | None) -> list[Task]:
        """Every task of ``owner``, in creation order (all pages of the store)."""
        tasks: list[Task] = []
        cursor: str | None = None
        while True:
            page, cursor = await self.store.list_tasks(owner=owner, cursor=cursor)
            tasks.extend(state.task for state in page)
            if cursor is None:
                return tasks

    # --- cancelling, waiting, forgetting ---------------------------------------------------------

    async def cancel(
        self, task_id: str, owner: str | None, *, strict: bool, reason: str = "cancelled by the client"
    ) -> Task:
        """Cancel: the status becomes ``cancelled`` before this returns, then the work is stopped.

        ``strict`` (2025-11-25) raises -32602 for a terminal task; otherwise (2026-07-28) a
        terminal task is left alone and the call is an acknowledgement. ``reason`` becomes the
        status message (an adapter ending a session says so).
        """
        return await self.cancel_record(await self.lookup(task_id, owner), strict=strict, reason=reason)

    async def cancel_record(
        self, record: TaskRecord, *, strict: bool, reason: str = "cancelled by the client"
    ) -> Task:
        """:meth:`cancel` of a record already looked up (no second read of the store)."""
        if record.task.is_terminal:
            if strict:
                try:
                    next_status(record.task.status, TaskEvent.CANCEL)
                except TaskStateError as exc:
                    raise PeerProtocolError(exc.message, jsonrpc_code=exc.jsonrpc_code) from None
            return record.task
        await self.finish(record, TaskEvent.CANCEL, message=reason, stop_work=True)
        return record.task

    def watch(self, record: TaskRecord) -> TaskRecord:
        return self._records.watch(record)

    def unwatch(self, record: TaskRecord) -> None:
        self._records.unwatch(record)

    async def wait_terminal(self, task_id: str, owner: str | None) -> Task:
        """Wait until the task is terminal (any number of concurrent waiters, on any replica)."""
        record = self.watch(await self.lookup(task_id, owner))
        try:
            while not record.task.is_terminal:
                await record.changed.wait()
            return record.task
        finally:
            self.unwatch(record)

    async def forget(self, task_id: str) -> None:
        await self.store.delete(task_id)
        self._records.drop(task_id)

    async def _record_by_id(self, task_id: str) -> TaskRecord | None:
        record = self._records.get(task_id)
        if record is not None:
            return record
        state = await self.store.get(task_id)
        return None if state is None else TaskRecord(state)

    def record_of(self, state: TaskState) -> TaskRecord:
        return self._records.record_of(state)

    # --- the background work of a server ---------------------------------------------------------

    async def sweep(self) -> int:
        """One expiry sweep now (:meth:`.expiry.Sweeper.sweep`); the engine's sweeper runs it by itself."""
        return await self.expiry.sweep()

    async def open(self) -> None:
        """Open the store (idempotent). Reading and changing tasks needs nothing more; serving
        them needs :meth:`background` too."""
        if not self._opened:
            await self.store.open()
            self._opened = True

    async def recover(self) -> int:
        """At a server's start on a shared store: fail the runs of dead processes of this host."""
        return await self.replicas.recover() if self.shared else 0

    async def background(self, *, max_sleep_s: float = 1.0) -> None:
        """What a server runs beside its tasks: the sweeper and, on a shared store, the lease
        renewal and the notifier (so a cancel or an answer given on another replica arrives)."""
        await self.open()
        await self.recover()
        async with anyio.create_task_group() as group:
            group.start_soon(partial(self.expiry.run, max_sleep_s=max_sleep_s), name="mcp-tasks sweeper")
            if self.shared:
                group.start_soon(self.replicas.renew_leases, name="mcp-tasks leases")
                group.start_soon(self.replicas.follow_other_replicas, name="mcp-tasks notifier")

    @asynccontextmanager
    async def running(self) -> AsyncGenerator[anyio.abc.TaskGroup, None]:
        """A task group for runs plus :meth:`background`; leaving it cancels every run still going."""
        await self.open()
        await self.recover()  # before the first request can read a run left by a killed server
        async with anyio.create_task_group() as group:
            group.start_soon(self.background, name="mcp-tasks background")
            try:
                yield group
            finally:
                group.cancel_scope.cancel()
