"""The one writer of task states: every change judged, saved, stamped, then heard of.

An engine holds one :class:`TaskWriter` (``engine.writer``); the parts that change tasks (the
runs, the input relay, the sweeper, the replica link, the re-runs) hold it too and never change a
record's state themselves. So every change passes here: judged against the latest state (again
when another process wrote first: compare-and-set), saved, time-stamped, and only then announced
to the waiters, the status listeners and the other processes sharing the store. A writer reads
through its :class:`~.reader.TaskReader` (a change starts from the latest state).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import anyio

from .._observe import metrics, traces
from ..core._lifecycle import TaskEvent, next_status
from ..core._model import JsonRpcError, Progress, Task, TaskStatus
from ..errors import PeerProtocolError, TaskStateError, TaskStoreError
from .outage import StoreHealth
from .reader import TaskReader
from .records import RunStop, TaskRecord, adopt, stop_lost_run
from .stores import ActiveLimitReached, StoreConflict, StoreEvent, TaskState, TaskStore

__all__ = ["CANCELLED_BY_CLIENT", "StateChange", "TaskWriter"]

CANCELLED_BY_CLIENT = "cancelled by the client"
"""A cancelled task's status message unless the canceller says why (a session ending, say)."""

logger = logging.getLogger("mcp_tasks_compat.engine")

StateChange = Callable[[TaskState], "TaskState | None"]
"""A change to a task as a function of its current state (``None``: nothing to do).

Applied by :meth:`TaskWriter.mutate`, which runs it again on the state another process wrote
meanwhile, so a transition is always judged against the latest status."""


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


def _observe_transition(record: TaskRecord, old: TaskState, new: TaskState) -> None:
    """A saved status change, told to OpenTelemetry (flag checks only, when nothing listens).

    Counted here, where the compare-and-set succeeded, so each transition counts once whichever
    replica saved it. The run's span (where the run lives) or else the current span (a cancel
    through another replica, in the task's trace) gets the change as an event; a terminal
    status ends the run's span, its error (if any) as the span's status.
    """
    status = new.task.status.value
    ended = new.is_terminal and not old.is_terminal
    metrics.status_changed(new.tool_name, new.dialect, old.task.status.value, status, terminal=ended)
    if ended:
        seconds = (new.task.last_updated_at - new.task.created_at).total_seconds()
        metrics.run_ended(new.tool_name, new.dialect, status, seconds)
    span = record.run_span
    traces.status_event(None, status, new.task.status_message, besides=span)
    if span is None:
        return
    span.status(status, new.task.status_message)
    if ended:
        record.run_span = None
        span.end(status, _failure_reason(new) if new.task.status is TaskStatus.FAILED else None)


def _failure_reason(state: TaskState) -> str:
    """Why a task failed, in a line: its error, else its tool's error text (2025-11-25), else its message."""
    task = state.task
    if task.error is not None:
        return task.error.message
    for block in (task.result or {}).get("content") or ():
        if isinstance(block, Mapping) and block.get("type") == "text":  # pyright: ignore[reportUnknownMemberType]
            return str(block.get("text"))  # pyright: ignore[reportUnknownMemberType,reportUnknownArgumentType]
    return task.status_message or task.status.value


class TaskWriter:
    """Writes every change to a task back to the store, then tells whoever follows the task.

    ``shared`` (the store's own word): other processes may use the store, so a change is also
    published on its notifier, for them to re-read the task.
    """

    def __init__(
        self,
        reader: TaskReader,
        *,
        status_interval_s: float,
        replica_id: str,
        health: StoreHealth | None = None,
    ) -> None:
        self.reader = reader
        """Where a change starts from: the latest state, and this process's records."""
        self.store: TaskStore = reader.store
        self._records = reader.records
        self.shared = self.store.shared
        """Other processes may use the store: leases, the notifier and re-reads matter."""
        self.status_interval_s = status_interval_s
        self.replica_id = replica_id
        """Who this process is in a task's ``runner`` and a :class:`StoreEvent`'s ``origin``."""
        self.health = health if health is not None else StoreHealth(self.store.describe)
        """Where the parts that reach the store through this writer report its failures (:mod:`.outage`)."""

    # --- changing a task ---------------------------------------------------------------------

    async def create(self, state: TaskState) -> TaskRecord:
        """Store a new task, refused (``PeerProtocolError``) when its owner already has its maximum
        of active tasks: the store counts them, in one step with the insert."""
        limits = self.reader.limits
        try:
            with anyio.CancelScope(shield=True):  # a write cut off by cancellation may still land
                await self.store.create(state, active_limit=limits.max_active_tasks_per_owner)
        except ActiveLimitReached as reached:
            metrics.limit_refused(state.dialect)
            raise limits.refusal(state.owner, reached.active) from None
        record = TaskRecord(state)
        self._records.add(record)
        metrics.task_created(state.tool_name, state.dialect)
        return record

    async def mutate(
        self,
        record: TaskRecord,
        change: StateChange,
        *,
        force_notify: bool,
        stop: RunStop | None = None,
        announce: bool = True,
        fence: int | None = None,
    ) -> bool:
        """Apply ``change`` to the latest state and save it (compare-and-set, retried on conflict).

        Then ``stop`` the run if asked, and (with ``announce``) wake the waiters, tell the listeners
        (rate-bounded unless ``force_notify``) and the other processes. ``False``: nothing to do,
        or the task is gone, or (``fence``: a write of a run, the claim it was started under) that
        claim is no longer the task's: the store refuses it, and the run held here is stopped
        (``records.stop_lost_run``).
        """
        while True:
            before = record.state
            if fence is not None and before.claim != fence:
                if record.run_claim == fence:  # the run held here: stopped, said once
                    stop_lost_run(record, before)
                return False
            proposed = change(before)
            if proposed is None:
                return False
            proposed = self.reader.stamped(before, proposed)
            try:
                saved = await self.store.save(proposed, fence=fence)
            except StoreConflict as conflict:
                if conflict.current is None:
                    self._records.drop(record.task.task_id)
                    return False
                # Another process wrote first: take its state (and stop the run here if it ended
                # the task there), then judge the change again against it.
                adopt(record, conflict.current)
                continue
            break
        record.state = saved
        if saved.task.status is not before.task.status:
            _observe_transition(record, before, saved)
        if stop is not None:
            stop.cancel()
        if announce:
            await self._announce(record, force_notify=force_notify)
        return True

    async def finish(
        self,
        record: TaskRecord,
        event: TaskEvent,
        *,
        result: Mapping[str, Any] | None = None,
        error: JsonRpcError | None = None,
        message: str | None = None,
        stop_work: bool = False,
        fence: int | None = None,
    ) -> bool:
        """Apply a terminal event; a task that is already terminal keeps its status (sticky).
        ``fence``: a run's own outcome, written only while the claim it was started under is the
        task's (``False`` otherwise, as when the task had already ended).

        ``stop_work`` stops the run here once the status is saved and before anyone hears of it,
        so work waiting on the task (for input, say) is cancelled rather than woken to find its
        task ended. A run on another replica stops when that replica reads the ended task (it
        re-reads on the notifier's event, or at its next lease renewal: ``records.adopt``).
        """

        def end(state: TaskState) -> TaskState | None:
            if state.is_terminal:
                return None
            status = next_status(state.task.status, event)
            changes = _ending_changes(status, result=result, error=error, message=message)
            return state.evolve(task=state.task.evolve(**changes), runner=None, lease_until=None)

        stop = record.scope if stop_work else None
        return await self.mutate(record, end, force_notify=True, stop=stop, fence=fence)

    async def cancel(self, record: TaskRecord, *, strict: bool, reason: str = CANCELLED_BY_CLIENT) -> Task:
        """Cancel: the status becomes ``cancelled`` (``reason`` its message) before this returns,
        then the work is stopped (:meth:`finish`); the span of the cancel joins the task's trace.

        ``strict`` (2025-11-25) raises -32602 for a terminal task; otherwise (2026-07-28) a
        terminal task is left alone and the call is an acknowledgement.
        """
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

    async def set_status_message(
        self, task: TaskRecord | str, message: str, progress: Progress | None = None
    ) -> None:
        """Record a progress message (listeners hear it at most every ``status_interval_s``), with
        the tool's own ``progress`` numbers when it gave them (``None`` clears the last ones).

        ``task`` is the record (a run reporting on itself) or a task id, whose record is the one
        held here or else one for its stored state; an unknown id is ignored.
        """
        record = task if isinstance(task, TaskRecord) else await self.reader.record_for(task)
        if record is None:
            return

        def say(state: TaskState) -> TaskState | None:
            if state.is_terminal:
                return None
            return state.evolve(task=state.task.evolve(status_message=message, progress=progress))

        try:
            await self.mutate(record, say, force_notify=False, fence=record.run_claim)  # the run's word
        except TaskStoreError as exc:
            # Bookkeeping must never fail the work: a status the store cannot take now is dropped
            # (the next one, or the outcome, says more anyway).
            self.health.failed(exc, f"saving a status message of task {record.task.task_id} (dropped)")

    async def forget(self, task_id: str) -> None:
        """Delete the task from the store and this process."""
        await self.store.delete(task_id)
        self._records.drop(task_id)

    async def _announce(self, record: TaskRecord, *, force_notify: bool) -> None:
        """Wake the waiters here, tell the other processes the task changed, tell the listeners."""
        record.wake_waiters()
        if self.shared:
            try:
                await self.store.notifier.publish(StoreEvent(record.task.task_id, self.replica_id))
            except TaskStoreError as exc:
                self.health.failed(
                    exc, f"telling other replicas of task {record.task.task_id}", writing=False
                )
        mono = self.reader.clock()
        if force_notify or mono - record.last_notified >= self.status_interval_s:
            record.last_notified = mono
            await record.tell_listeners()
