"""The task engine: creates a task, starts its run, answers reads, cancels, and serves the background.

:class:`TaskEngine` is the one :class:`~.writer.TaskWriter` of a server (one replica of it): its
runs (:attr:`TaskEngine.runs`), its input relay (:attr:`TaskEngine.inputs`), its sweeper
(:attr:`TaskEngine.expiry`) and its link to other replicas (:attr:`TaskEngine.replicas`) change
tasks through it. With a shared store (SQLite, Redis) the engine also renews the leases of the
runs it holds and follows the store's notifier, so a cancel or an answer given on another
replica reaches the work here.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import anyio
import anyio.abc

from .._observe import metrics, traces
from ..core.lifecycle import TaskEvent, next_status
from ..core.model import Task, TaskStatus, utc_now
from ..dialects import Dialect
from ..errors import INVALID_PARAMS, PeerProtocolError, TaskStateError
from . import runs
from .expiry import Sweeper
from .inputs import InputRelay
from .limits import TaskLimits
from .observed import traced_run
from .polling import PollPolicy
from .records import TaskRecord, new_task_id
from .replicas import ReplicaLink, new_replica_id
from .runs import TaskRuns, Work, pending_call, report_status
from .stores import ActiveLimitReached, InMemoryTaskStore, TaskState, TaskStore, check_store
from .writer import TaskWriter

__all__ = [
    "DEFAULT_LEASE_S",
    "DEFAULT_TTL_FLOOR_MS",
    "PollPolicy",
    "TaskEngine",
    "current_run",
    "pending_call",
    "report_status",
]

DEFAULT_TTL_FLOOR_MS = 3_600_000
"""Real long runs need an hour; a client asking for less gets the floor."""

DEFAULT_LEASE_S = 30.0
"""How long a replica's claim on a run holds without renewal (renewed every third of it)."""

RerunWork = Callable[[str, Mapping[str, Any]], Work | None]
"""The adapter's way to run a tool again without a request: ``(tool_name, arguments)`` to its work,
or ``None`` when that tool cannot be called so here."""

logger = logging.getLogger("mcp_tasks_compat.engine")


def current_run() -> tuple[TaskEngine, TaskRecord] | None:
    """The engine and record of the task whose work is running in this context, if any."""
    run = runs.current_run()
    if run is None:
        return None
    engine, record = run
    assert isinstance(engine, TaskEngine)  # a run's writer is the engine that started it
    return engine, record


class TaskEngine(TaskWriter):
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
        super().__init__(
            check_store(store) if store is not None else InMemoryTaskStore(),
            poll_policy=poll_policy or PollPolicy(),
            limits=limits or TaskLimits(),
            status_interval_s=status_interval_s,
            replica_id=new_replica_id(),
            clock=clock,
        )
        self.ttl_floor_ms = ttl_floor_ms
        self.default_ttl_ms = default_ttl_ms if default_ttl_ms is not None else ttl_floor_ms
        self.lease_s = lease_s
        self._opened = False
        self.reruns: dict[str, int] = {}
        """Tool name to how many times a run of it lost to a stopped replica is started again."""
        self.rerun_work: RerunWork | None = None
        """Set by the server adapter that can call a tool without a request (else nothing re-runs)."""
        self._rerun_group: anyio.abc.TaskGroup | None = None
        self.runs = TaskRuns(
            self, self._records, give_up_after_s=lease_s, left_for_rerun=self.leaves_for_rerun
        )
        self.inputs = InputRelay(self)
        self.expiry = Sweeper(self, self.store, rerun=self.rerun_lost)
        self.replicas = ReplicaLink(self, self.store, self._records, self.expiry, lease_s=lease_s)

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
        arguments: Mapping[str, Any] | None = None,
    ) -> TaskRecord:
        """Create a ``working`` task, durably stored (readable by any replica) before this returns.

        ``arguments`` (the call's) are kept only for a tool declared safe to run again
        (:attr:`reruns`), for that run. Refused (``PeerProtocolError``) when ``owner`` already has
        its maximum of active tasks.
        """
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
        state = TaskState(
            task,
            dialect,
            owner,
            tool_name,
            expires_at=self.deadline(ttl_ms),
            trace_context=traces.current_carrier(),  # the trace its run and a cancel anywhere join
        )
        if self.reruns.get(tool_name, 0) > 0 and arguments is not None:
            state = state.evolve(rerun=True, arguments=dict(arguments))
        if self.shared:
            state = self.replicas.claim(state)
        try:
            with anyio.CancelScope(shield=True):  # a write cut off by cancellation may still land
                # the per-owner limit is counted by the store, in one step with the insert
                await self.store.create(state, active_limit=self.limits.max_active_tasks_per_owner)
        except ActiveLimitReached as reached:
            metrics.limit_refused(dialect)
            raise self.limits.refusal(owner, reached.active) from None
        record = TaskRecord(state)
        self._records.add(record)
        metrics.task_created(tool_name, dialect)
        self.expiry.wake_for(state.expires_at)  # only a deadline before its next round
        return record

    def start(self, record: TaskRecord, work: Work, task_group: anyio.abc.TaskGroup) -> None:
        """Run ``work`` in ``task_group`` as the task's run (:meth:`.runs.TaskRuns.start`)."""
        self.runs.start(record, traced_run(record, work), task_group)

    # --- re-running a run lost to a stopped replica ------------------------------------------------

    def _may_rerun(self, state: TaskState) -> bool:
        """Whether ``state``'s run, if lost, is started again here rather than failed."""
        return (
            state.rerun
            and state.arguments is not None
            and self.rerun_work is not None
            and state.attempt <= self.reruns.get(state.tool_name, 0)
        )

    def leaves_for_rerun(self, state: TaskState) -> bool:
        """A run stopped by its server's stop (not by ``tasks/cancel``) is left ``working`` for a
        re-run, on a shared store, when its tool may run again: a stop is not a cancel."""
        return self.shared and self._may_rerun(state)

    async def rerun_lost(self, state: TaskState, why: str) -> bool:
        """Start again here the run of ``state``, lost to a stopped replica; ``False``: fail it.

        The claim is a compare-and-set on the lost runner and attempt, so of several replicas
        sweeping the same lease only one runs it. Before this engine serves (no task group yet)
        the task is left as it is, for :meth:`background`'s own pass.
        """
        if not self._may_rerun(state) or self.rerun_work is None or state.arguments is None:
            return False
        group = self._rerun_group
        if group is None:
            return True
        work = self.rerun_work(state.tool_name, state.arguments)
        if work is None:
            return False
        attempt = state.attempt + 1
        message = f"attempt {attempt} of {self.reruns[state.tool_name] + 1}: started again after {why}"

        def claim(current: TaskState) -> TaskState | None:
            if current.is_terminal or current.runner != state.runner or current.attempt != state.attempt:
                return None  # ended meanwhile, or another replica took it first
            task = current.task.evolve(status_message=message)
            return self.replicas.claim(current).evolve(task=task, attempt=attempt)

        record = self.record_of(state)
        if await self.mutate(record, claim, force_notify=True):
            logger.info("task %s: %s", state.task_id, message)
            self._records.add(record)
            metrics.rerun(state.tool_name)
            self.start(record, work, group)  # its span joins the trace that created the task
        return True

    # --- cancelling --------------------------------------------------------------------------

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
        state = record.state
        with traces.joined_span(
            "tasks/cancel",
            state.trace_context,
            task_id=state.task_id,
            tool=state.tool_name,
            dialect=state.dialect,
        ):
            await self.finish(record, TaskEvent.CANCEL, message=reason, stop_work=True)
        return record.task

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
        group: anyio.abc.TaskGroup | None = None
        try:
            async with anyio.create_task_group() as group:
                if self.shared and self.reruns:
                    self._rerun_group = group  # re-runs live as long as the background serving them
                    await self.replicas.rerun_dead_runs()
                group.start_soon(partial(self.expiry.run, max_sleep_s=max_sleep_s), name="mcp-tasks sweeper")
                if self.shared:
                    group.start_soon(self.replicas.renew_leases, name="mcp-tasks leases")
                    group.start_soon(self.replicas.follow_other_replicas, name="mcp-tasks notifier")
        finally:
            if self._rerun_group is group:  # another background (a second lifespan) keeps its own
                self._rerun_group = None

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
