"""Running a task's work: started as a task, or undecided first (the inline grace).

The engine owns a task's state; this module owns its *run*: the anyio task that calls the work,
the context variable through which the work knows its task (:func:`current_run`), the undecided
call that may still be answered plainly (:func:`pending_call`), and how the work's outcome ends
the task. Every change it makes goes through the engine's writer (:class:`~.writer.TaskWriter`).
Whether a tool's result fails its task is its dialect's rule (:data:`ResultRule`), which the
services of ``_server`` give the engine: no dialect's codec is read here.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import random
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
import anyio.abc

from ..core._lifecycle import TaskEvent
from ..core._model import JsonRpcError, Progress, Task
from ..dialects import Dialect
from ..errors import INTERNAL_ERROR, TaskStoreError
from .grace import GraceTicket
from .hosting import EngineHost, Work
from .inline import InlineCall, Outcome, RoundTripAnswer
from .inputs import InputRelay
from .records import LiveRecords, RunStop, TaskRecord
from .stores import TaskState
from .writer import TaskWriter

__all__ = [
    "SERVER_STOPPED",
    "ResultRule",
    "TaskRuns",
    "ToolCallFailure",
    "Work",
    "current_run",
    "pending_call",
    "report_status",
]

logger = logging.getLogger("mcp_tasks_compat.engine")


class RunHost(Protocol):
    """What started a run (its engine, :class:`.engine.TaskEngine`), as the run's tool body and
    the helpers it calls use it: the writer of its task, the input relay, the engine's host."""

    @property
    def writer(self) -> TaskWriter: ...

    @property
    def inputs(self) -> InputRelay: ...

    @property
    def host(self) -> EngineHost | None: ...


ResultRule = Callable[[Mapping[str, Any]], bool]
"""``fails(result)``: whether a tool's result ends its task ``failed``. It is the rule of the task's
dialect, which the server layer gives the engine (:attr:`TaskRuns.result_rules`): the engine
judges no result itself."""

SERVER_STOPPED = "the server stopped this task"
"""Status message of a task whose run was stopped with its server (not by ``tasks/cancel``)."""


class ToolCallFailure(Exception):
    """Raised by work to end its task ``failed`` with a specific JSON-RPC error."""

    def __init__(self, error: JsonRpcError) -> None:
        self.error = error
        super().__init__(error.message)


@dataclass(slots=True)
class _Run:
    """What a running work knows of itself: its task, or the undecided call it still is."""

    writer: TaskWriter
    host: RunHost
    """What started the run (its engine: :func:`current_run` hands it to the tool body)."""
    record: TaskRecord | None
    call: InlineCall | None = None

    @property
    def task_record(self) -> TaskRecord | None:
        if self.record is not None:
            return self.record
        return self.call.record if self.call is not None else None


_TASK_HANDLES = hasattr(anyio, "TaskHandle")
"""anyio 4.14 and later give every task a handle with a cancel scope of its own: a run is stopped
through it, not through a second scope (about 0.6 KB per held task). Earlier anyio: the run
enters a scope of ours."""

_NO_SCOPE = contextlib.nullcontext()


class _HandleStop:
    """Stops a run through its anyio task handle; the handle is known once the run is spawned."""

    __slots__ = ("_handle", "cancel_called")

    def __init__(self) -> None:
        self._handle: Any = None
        self.cancel_called = False

    def attach(self, handle: Any) -> None:
        self._handle = handle
        if self.cancel_called:  # stopped before its spawn returned (an eager task factory)
            handle.cancel()

    def cancel(self) -> None:
        self.cancel_called = True
        if self._handle is not None:
            self._handle.cancel()


def _new_stop() -> RunStop:
    return _HandleStop() if _TASK_HANDLES else anyio.CancelScope()


def _spawn(
    task_group: anyio.abc.TaskGroup,
    stop: RunStop,
    func: Callable[..., Coroutine[Any, Any, None]],
    *args: Any,
    name: str,
) -> None:
    """Start ``func(*args, own_scope)``: ``own_scope`` is the scope it enters, when ``stop`` is one."""
    if isinstance(stop, _HandleStop):
        stop.attach(task_group.start_soon(func, *args, None, name=name))
    else:
        task_group.start_soon(func, *args, stop, name=name)


def _entered(own_scope: anyio.CancelScope | None) -> contextlib.AbstractContextManager[Any]:
    return own_scope if own_scope is not None else _NO_SCOPE


_current: contextvars.ContextVar[_Run | None] = contextvars.ContextVar(
    "mcp_tasks_compat_current_run", default=None
)


def _running() -> tuple[_Run, TaskRecord] | None:
    run = _current.get()
    record = run.task_record if run is not None else None
    return None if run is None or record is None else (run, record)


def current_run() -> tuple[RunHost, TaskRecord] | None:
    """What started the task running here (its engine) and the task's record, if any."""
    running = _running()
    return None if running is None else (running[0].host, running[1])


def pending_call() -> InlineCall | None:
    """The call this work belongs to while it is not (yet) a task: answered plainly if it ends now."""
    run = _current.get()
    if run is None or run.call is None or run.task_record is not None:
        return None
    return run.call


async def report_status(message: str, progress: Progress | None = None) -> bool:
    """Set the running task's status message (and the tool's own ``progress`` numbers for it);
    ``False`` (and nothing happens) outside a task."""
    run = current_run()
    if run is None:
        call = pending_call()
        if call is not None:
            call.status_message = message  # kept for the task this call may still become
        return False
    engine, record = run
    await engine.writer.set_status_message(record, message, progress)
    return True


async def _outcome_of(work: Work) -> Outcome:
    """Run the work; any exception but cancellation is its outcome, never the session's."""
    try:
        return Outcome(result=await work())
    except anyio.get_cancelled_exc_class():
        raise
    except Exception as exc:
        return Outcome(error=exc)


END_RETRY_FIRST_S = 0.05
END_RETRY_MAX_S = 2.0
"""Between tries of a run's terminal write while the store is down: doubling, jittered, capped."""


class TaskRuns:
    """Starts the runs of one engine's tasks and ends each task with its run's outcome.

    A run never raises into its task group (the server's lifespan or a session's). Its writes are
    fenced by the claim it started under (``TaskRecord.run_claim``): an outcome the store cannot
    take now is written again, however long the outage lasts, until it lands or a newer claim
    (another replica's re-run, once this one's lease ran out) makes the store refuse it; a run
    whose claim was taken is stopped and writes nothing more.
    """

    def __init__(
        self,
        writer: TaskWriter,
        records: LiveRecords,
        *,
        host: RunHost,
        left_for_rerun: Callable[[TaskState], bool] = lambda state: False,
        result_rules: dict[Dialect, ResultRule] | None = None,
    ) -> None:
        self._writer = writer
        self._host = host
        self._records = records
        self._left_for_rerun = left_for_rerun
        self.result_rules: dict[Dialect, ResultRule] = result_rules if result_rules is not None else {}
        """Dialect to whether a tool's result fails its task (its service's; none: it completes)."""

    def start(self, record: TaskRecord, work: Work, task_group: anyio.abc.TaskGroup) -> None:
        """Run ``work`` in ``task_group``; its outcome ends the task (unless already terminal, or
        its claim was taken meanwhile)."""
        record.scope = stop = _new_stop()
        record.run_claim = record.state.claim
        _spawn(task_group, stop, self._run, record, work, name=f"mcp-task {record.task.task_id[:8]}")

    async def _run(self, record: TaskRecord, work: Work, own_scope: anyio.CancelScope | None) -> None:
        run = _Run(self._writer, self._host, record)
        stop = record.scope
        token = _current.set(run)
        try:
            with _entered(own_scope):
                await self._end_durably(record, await _outcome_of(work))
        finally:
            await self._run_ended(record, stop)
            _current.reset(token)

    async def _end_durably(self, record: TaskRecord, outcome: Outcome) -> None:
        """Write the outcome, through a store outage of any length: retried (doubling, jittered)
        until it lands, or until the store refuses it for a newer claim (then nothing is written:
        the run that replaced this one owns the task); never raised into the task group."""
        delay = END_RETRY_FIRST_S
        while True:
            try:
                await self._apply(record, outcome)
                return
            except TaskStoreError as exc:
                self._writer.health.failed(
                    exc, f"saving the outcome of task {record.task.task_id} (trying again in {delay:.2f} s)"
                )
            await anyio.sleep(delay * random.uniform(0.5, 1.0))  # a back-off, not a synchronisation
            delay = min(delay * 2, END_RETRY_MAX_S)

    async def begin(
        self,
        work: Work,
        task_group: anyio.abc.TaskGroup,
        *,
        ticket: GraceTicket,
        create: Callable[[str | None], Awaitable[TaskRecord]],
        always_task: bool = False,
        context: contextvars.Context | None = None,
    ) -> Outcome | Task:
        """Start ``work`` undecided; the plain outcome if it ends within its grace, else its task
        as created (``working``: a task begins so, even one whose outcome is already known).

        ``create(status_message)`` makes the task when one is needed (the grace ran out, or the
        work asked for input only a task can carry); the run goes on as its work, unrestarted.
        ``always_task`` (a task-required tool): an outcome within the grace still becomes a task,
        already ended, except an input round (:class:`~.inline.RoundTripAnswer`), which a
        multi-round-trip call answers before any task exists. ``context``: the contextvars the run
        starts in (a copy of it), where the adapter has swapped the request for its detached copy;
        by default a copy of the caller's, which would keep the whole request for the task's life.
        ``ticket``: the call's grace as the tool's recent calls decide it (:mod:`.grace`), told
        whether this one outlived it (``GraceTicket.fixed(s)``: a grace that teaches nothing). With
        no grace (0 s: off, or skipped for a tool known to be long) the task is created before the
        work starts, as ``start`` does, so a refused create runs nothing.
        """
        call = InlineCall(_new_stop())
        spawn_in = (context or contextvars.copy_context()).run
        if ticket.seconds <= 0:  # no grace: the task first, so a create refused runs nothing
            call.escalate()
            record = await create(None)
            call.attach(record)
            spawn_in(_spawn, task_group, call.scope, self._run_inline, call, work, ticket, name="mcp-task")
            return record.task
        spawn_in(
            _spawn, task_group, call.scope, self._run_inline, call, work, ticket, name="mcp-call (undecided)"
        )
        try:
            if ticket.seconds > 0:
                await call.wait(ticket.seconds)
            undecided = call.is_open  # neither answered nor asking for its task
            outcome = call.outcome if not call.escalate() else None
            if outcome is not None and (outcome.is_round_trip or not always_task):
                return outcome
            if undecided and ticket.seconds > 0:
                ticket.outlived()  # waited it out: not a quick answer, not a question
            record = await create(call.status_message)
        except BaseException:
            call.drop()
            raise
        created = record.task
        if outcome is None:
            call.attach(record)
            return created
        await self._apply(record, outcome)  # a required tool that ended within the grace
        self._records.release_if_idle(record)
        return created

    async def _run_inline(
        self, call: InlineCall, work: Work, ticket: GraceTicket, own_scope: anyio.CancelScope | None
    ) -> None:
        run = _Run(self._writer, self._host, None, call)
        token = _current.set(run)
        try:
            with _entered(own_scope):
                outcome = await _outcome_of(work)
                ticket.ended(asked_first=outcome.is_round_trip)
                if call.answer(outcome):
                    return  # the caller answers it plainly, or makes it a task itself
                await self._end_durably(await call.task(), outcome)
        finally:
            if call.record is not None:
                await self._run_ended(call.record, call.scope)
            _current.reset(token)

    async def _apply(self, record: TaskRecord, outcome: Outcome) -> None:
        """End the task with the work's outcome (a task already ended keeps its status)."""
        error = outcome.error
        if error is None:
            result = dict(outcome.result or {})  # a lazily dumped result is dumped (and kept) here
            rule = self.result_rules.get(record.dialect)
            failed = rule is not None and rule(result)  # the dialect's rule, given by its service
            event = TaskEvent.FAIL if failed else TaskEvent.COMPLETE
            await self._writer.finish(record, event, result=result, fence=record.run_claim)
            return
        if isinstance(error, ToolCallFailure):
            await self._writer.finish(record, TaskEvent.FAIL, error=error.error, fence=record.run_claim)
            return
        if isinstance(error, RoundTripAnswer):
            message = "the tool asked for input as a round trip after the call had become a task"
            failure = JsonRpcError(INTERNAL_ERROR, message)
            await self._writer.finish(record, TaskEvent.FAIL, error=failure, fence=record.run_claim)
            return
        logger.debug("task %s work raised", record.task.task_id, exc_info=error)
        failure = JsonRpcError(INTERNAL_ERROR, str(error) or type(error).__name__)
        await self._writer.finish(record, TaskEvent.FAIL, error=failure, fence=record.run_claim)

    async def _run_ended(self, record: TaskRecord, stop: RunStop | None) -> None:
        """The run ``stop`` stopped here is over: the task is left as its outcome left it, or left
        for a re-run, or ended as stopped with the server, unless its claim was taken meanwhile
        (the run that replaced it owns the task now: nothing is written)."""
        if record.scope is not stop:
            return  # a newer run of the task holds the record now
        claim, record.scope, record.run_claim = record.run_claim, None, None
        lost = claim is not None and record.state.claim != claim
        if lost or record.task.is_terminal:
            pass
        elif self._left_for_rerun(record.state):
            # Stopped with its server: left ``working``, claimed by a process about to be gone, so
            # the next start here (or another replica, once the lease runs out) runs it again.
            logger.info("task %s: stopped with the server; left to be run again", record.task.task_id)
        else:
            # Stopped from outside (the session or the server shutting down: the cancellation
            # comes from an enclosing scope, not from ``record.scope``), not by tasks/cancel.
            # The task must still end rather than stay "working" for its pollers.
            with anyio.CancelScope(shield=True):
                await self._finish_quietly(record, claim, TaskEvent.CANCEL, SERVER_STOPPED)
        self._records.release_if_idle(record)  # ended: the store has it

    async def _finish_quietly(
        self, record: TaskRecord, claim: int | None, event: TaskEvent, message: str
    ) -> None:
        """End a task while shutting down, if ``claim`` is still the task's: a store that is gone by
        now must not mask the shutdown."""
        try:
            await self._writer.finish(record, event, message=message, fence=claim)
        except TaskStoreError as exc:
            self._writer.health.failed(exc, f"ending task {record.task.task_id} as the server stops")
