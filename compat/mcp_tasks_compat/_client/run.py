"""The entry points: a call run as a task, a started task's handle, a resumed task.

Each runs under a :class:`_Guard` (the overall timeout, and a best-effort ``tasks/cancel`` for
a task that is left unfinished when the call ends early) and hands the task to the follower of
the wire's dialect, picked once by :func:`follower_for`; the followers never ask which dialect
they are on.
"""

from __future__ import annotations

import inspect
import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from datetime import timedelta
from types import TracebackType
from typing import Any, Generic, Literal, NamedTuple, Protocol

import anyio

from .._observe import traces
from ..core.model import Task
from ..dialects import DIALECT_2026_07_28, Dialect
from ..errors import TaskError, TaskTimeoutError
from .follow_2025 import Follower2025
from .follow_2026 import Follower2026
from .lost import lost_connection_error, raising_lost_connection
from .outcomes import lookup_error
from .plan import check_ready, plan_call, refuse
from .poller import Expiry, Poller, Reporter, best_effort_cancel, clamp_poll_seconds
from .protocols import (
    CANCEL_GRACE_SECONDS,
    AnyTaskWire,
    ClientConnection,
    OnProgress,
    OnStatus,
    ProgressSink,
    RemoteError,
    ResultT,
    TaskWire,
    ToolCall,
)

__all__ = [
    "CallDefaults",
    "ProgressRelay",
    "TaskRun",
    "call_tool",
    "call_with_defaults",
    "follow",
    "follower_for",
    "progress_sink",
    "resume",
    "seconds",
    "start_tool",
    "statuses_as_progress",
]

logger = logging.getLogger("mcp_tasks_compat.client")


def follower_for(
    wire: AnyTaskWire[ResultT],
    task: Task,
    reporter: Reporter,
    expiry: Expiry,
    *,
    resumed: bool,
    tool: str | None,
) -> Poller[Any, ResultT]:
    """The one place a dialect picks its follower: the wire's dialect names the wire's interface."""
    if wire.dialect == DIALECT_2026_07_28:
        return Follower2026(wire, task, reporter, expiry, resumed=resumed, tool=tool)
    return Follower2025(wire, task, reporter, expiry, resumed=resumed, tool=tool)


Settle = Callable[[], Awaitable[None]]
"""A connection's :meth:`~.protocols.ClientConnection.settle`: wait until no answer is owed."""


class _Guard:
    """Runs an operation under the overall timeout; ends an unfinished task when the call ends early.

    Caller cancellation (anyio or asyncio), the timeout, and any unexpected error all send a
    shielded ``tasks/cancel`` for a task that is known and not yet terminal, then wait for the
    answers the session still owes to requests the call gave up (``settle``), all within
    ``grace``: a caller that closes its session next (a session per call) then closes it on a
    quiet stream, and sees its own ``CancelledError``.
    """

    def __init__(
        self,
        *,
        timeout: float | None,
        grace: float,
        what: str,
        dialect: str | None = None,
        settle: Settle | None = None,
    ) -> None:
        self.timeout = timeout
        self.grace = grace
        self.what = what
        self.dialect = dialect
        self.settle = settle
        self.wire: TaskWire[Any] | None = None
        self.task_id: str | None = None
        self.reporter: Reporter | None = None

    def attach(self, wire: TaskWire[Any], task_id: str, reporter: Reporter) -> None:
        self.wire, self.task_id, self.reporter = wire, task_id, reporter

    def _unfinished(self) -> bool:
        if self.wire is None or self.task_id is None:
            return False
        last = self.reporter.last if self.reporter is not None else None
        return last is None or not last.is_terminal

    async def _end_task(self) -> None:
        await _end_early(
            self.wire if self._unfinished() else None, self.task_id, self.settle, grace=self.grace
        )

    async def run(self, operation: Callable[[], Awaitable[ResultT]], *, end_on_abort: bool = True) -> ResultT:
        """Run ``operation``; with ``end_on_abort=False`` only the timeout (not cancelling) ends the task."""
        deadline = math.inf if self.timeout is None else anyio.current_time() + self.timeout
        try:
            with anyio.CancelScope(deadline=deadline) as scope:
                return await operation()
        except TaskError:
            raise  # the task ended (or is gone): nothing left to cancel
        except BaseException as error:
            dialect = self.wire.dialect if self.wire is not None else self.dialect
            lost = lost_connection_error(error, task_id=self.task_id, dialect=dialect)
            if lost is not None:  # the server is out of reach: no cancel can be sent either
                raise lost from error
            if end_on_abort:
                await self._end_task()
            raise
        # Only our own deadline gets here (the scope swallowed its cancellation).
        assert scope.cancelled_caught
        await self._end_task()
        if self.task_id is None:
            raise TaskTimeoutError(
                f"{self.what} did not finish within {self.timeout} s (no task had been created yet)",
                task_id=None,
            )
        raise TaskTimeoutError(
            f"{self.what} did not finish within {self.timeout} s; task {self.task_id} was asked to cancel",
            task_id=self.task_id,
        )


async def _end_early(
    wire: TaskWire[Any] | None, task_id: str | None, settle: Settle | None, *, grace: float
) -> None:
    """A call that ends before its task: ``tasks/cancel`` (with a ``wire``), then the owed answers
    awaited; shielded, within ``grace`` in all, never raising."""
    with anyio.CancelScope(shield=True), anyio.move_on_after(grace):
        if wire is not None and task_id is not None:
            await best_effort_cancel(wire, task_id, grace=grace)
        if settle is not None:
            await settle()


def progress_sink(on_progress: OnProgress | None) -> ProgressSink | None:
    """``on_progress`` (sync or async) as the async ``progress_callback`` the SDK calls."""
    if on_progress is None:
        return None

    async def sink(progress: float, total: float | None, message: str | None) -> None:
        outcome = on_progress(progress, total, message)
        if inspect.isawaitable(outcome):
            await outcome

    return sink


_Reported = tuple[float, "float | None", "str | None"]


class ProgressRelay:
    """One progress callback fed by a call's ``notifications/progress`` and its task's statuses.

    A status carrying the tool's own numbers (``Task.progress``, this library's ``_meta``) is
    handed on with them; one without counts on by one from the last value handed on (a plain
    call's progress before the call became a task included), so progress never goes back. The
    same (progress, total, message) is never handed on twice in a row (a task ending with the
    message of its last step adds no callback), nor a status without a message.
    """

    def __init__(self, on_progress: OnProgress) -> None:
        self._on_progress = on_progress
        self._last: dict[str | None, _Reported] = {}
        """What was last handed on, per task (``None``: the plain call's own notifications)."""

    async def report(self, progress: float, total: float | None, message: str | None) -> None:
        """A plain call's ``notifications/progress`` (the SDK's ``progress_callback``)."""
        await self._hand_on(None, (progress, total, message))

    async def on_status(self, task: Task) -> None:
        """A task's status, as ``on_status`` receives it."""
        last = self._last.get(task.task_id) or self._last.get(None)
        if task.status_message is not None:
            if task.progress is not None:
                reported = (task.progress.progress, task.progress.total, task.status_message)
            elif last is not None and last[2] == task.status_message:
                reported = last  # the same step again (e.g. the terminal status): not a new one
            else:
                reported = ((last[0] if last is not None else 0.0) + 1.0, None, task.status_message)
            await self._hand_on(task.task_id, reported)
        if task.is_terminal:
            self._last.pop(task.task_id, None)

    async def _hand_on(self, key: str | None, reported: _Reported) -> None:
        last = self._last.get(key) or (self._last.get(None) if key is not None else None)
        self._last[key] = reported
        if reported == last:
            return
        outcome = self._on_progress(*reported)
        if inspect.isawaitable(outcome):
            await outcome


def statuses_as_progress(on_status: OnStatus | None, on_progress: OnProgress) -> OnStatus:
    """The ``on_status`` a session's call uses: ``on_status`` when there is one, else the task's
    statuses handed to ``on_progress`` as ``(progress, total, message)`` (:class:`ProgressRelay`).

    For callers that only know the SDK's ``progress_callback`` (agent frameworks). With an
    ``on_status`` (the call's or the session's), statuses go there only, so none arrives twice
    (docs/client.md).
    """
    if on_status is not None:
        return on_status
    return ProgressRelay(on_progress).on_status


class CallDefaults(Protocol):
    """The defaults a task-running session keeps for its calls (``mode=``, ``on_status=``)."""

    @property
    def task_mode(self) -> str: ...

    @property
    def task_on_status(self) -> OnStatus | None: ...


class SessionCall(NamedTuple):
    """The arguments of a session's SDK-shaped ``call_tool(...)``, in its order."""

    name: str
    arguments: dict[str, Any] | None
    read_timeout_seconds: Any
    progress_callback: OnProgress | None
    meta: Mapping[str, Any] | None
    mode: str | None
    on_status: OnStatus | None
    timeout: Any
    ttl: Any
    sdk_options: Mapping[str, Any] | None = None


async def call_with_defaults(
    call_tool: Callable[..., Awaitable[Any]], session: object, defaults: CallDefaults, call: SessionCall
) -> Any:
    """A session's SDK-shaped ``call_tool(...)`` as the public ``call_tool`` (passed in: this layer
    cannot import it): the session's defaults applied, and ``progress_callback`` hearing a task's
    status messages where no ``on_status`` is given (:func:`statuses_as_progress`), and the SDK's
    own ``call_tool`` keywords (``sdk_options``) passed on for the adapter to honour.

    The one body of ``TaskClientSession.call_tool`` and ``TaskSessionWrapper.call_tool``.
    """
    status = call.on_status if call.on_status is not None else defaults.task_on_status
    on_progress = call.progress_callback
    if on_progress is not None:
        relay = ProgressRelay(on_progress)  # one per call: its plain progress, then its task's
        on_progress = relay.report
        status = status if status is not None else relay.on_status
    return await call_tool(
        session,
        call.name,
        call.arguments,
        mode=call.mode or defaults.task_mode,
        on_status=status,
        on_progress=on_progress,
        read_timeout_seconds=call.read_timeout_seconds,
        timeout=call.timeout,
        ttl=call.ttl,
        meta=dict(call.meta) if call.meta else None,
        **(call.sdk_options or {}),
    )


async def call_tool(
    connection: ClientConnection[ResultT],
    name: str,
    arguments: dict[str, Any] | None,
    *,
    mode: str,
    on_status: OnStatus | None,
    overall_timeout: float | None,
    ttl_ms: int | None,
    meta: dict[str, Any] | None,
    cancel_grace: float,
    on_progress: OnProgress | None = None,
    read_timeout: float | None = None,
    sdk_options: Mapping[str, Any] | None = None,
) -> ResultT:
    as_task = await plan_call(connection, name, mode)
    guard = _Guard(
        timeout=overall_timeout,
        grace=cancel_grace,
        what=f"tools/call {name!r}",
        dialect=connection.negotiated.dialect,
        settle=connection.settle,
    )
    reporter = Reporter(on_status)
    progress = progress_sink(on_progress)
    span = traces.client_call(name, connection.negotiated.dialect)  # a no-op unless tracing

    async def operation() -> ResultT:
        started = await connection.call(
            ToolCall(
                name,
                arguments,
                as_task,
                ttl_ms,
                traces.with_trace_context(meta),
                progress=progress,
                read_timeout=read_timeout,
                sdk_options=dict(sdk_options or {}),
            )
        )
        if not isinstance(started, Task):
            return started
        # A server may hand back a task even on a "plain" call (2026-07-28: the server decides);
        # it is resolved here rather than dropped.
        span.task(started.task_id)
        wire = connection.wire()
        guard.attach(wire, started.task_id, reporter)
        expiry = Expiry(started, resumed=False)
        return await follower_for(wire, started, reporter, expiry, resumed=False, tool=name).run()

    with span:  # the whole follow: creation, polls or push, input rounds, result
        return await guard.run(operation)


async def follow(
    wire: AnyTaskWire[ResultT],
    task: Task,
    *,
    on_status: OnStatus | None,
    overall_timeout: float | None,
    cancel_grace: float,
    tool: str | None = None,
) -> ResultT:
    """Follow a task this client just created (e.g. from a ``ResultClaim.resolve`` hook) to its result.

    ``tool`` checks the result against that tool's output schema (``None``: the caller checks).
    """
    reporter = Reporter(on_status)
    guard = _Guard(timeout=overall_timeout, grace=cancel_grace, what=f"task {task.task_id}")
    guard.attach(wire, task.task_id, reporter)
    follower = follower_for(wire, task, reporter, Expiry(task, resumed=False), resumed=False, tool=tool)
    return await guard.run(follower.run)


class TaskRun(Generic[ResultT]):
    """A handle on one remote task: poll it, wait for it, cancel it.

    ``async with`` cancels the task on exit unless it already ended. Cancelling a pending
    :meth:`result` does not cancel the remote task (the handle stays usable); leave the
    ``async with`` block or call :meth:`cancel` for that. ``task_id`` is ``None`` only when a
    2026-07-28 server chose to answer the call directly instead of creating a task (its result
    is then available at once). ``tool`` is the tool the task runs (its output schema checks the
    result), ``None`` for a resumed task.
    """

    def __init__(
        self,
        *,
        wire: AnyTaskWire[ResultT] | None,
        task: Task | None,
        tool: str | None = None,
        immediate: ResultT | None = None,
        dialect: Dialect,
        on_status: OnStatus | None = None,
        resumed: bool = False,
        cancel_grace: float = CANCEL_GRACE_SECONDS,
        settle: Settle | None = None,
        span: traces.CallSpan | traces.NoSpan = traces.NO_SPAN,
    ) -> None:
        self._span = span  # start_tool's, ended with the task's outcome as this handle learns it
        self._wire = wire
        self._settle = settle
        self._first = task
        self._tool = tool
        self._immediate = immediate
        self._dialect: Dialect = dialect
        self._reporter = Reporter(on_status)
        self._resumed = resumed
        self._grace = cancel_grace
        self._expiry = Expiry(task, resumed=resumed) if task is not None else None
        self._lock: anyio.Lock | None = None  # made by the first result(): most handles never wait
        self._outcome: tuple[Literal["ok"], ResultT] | tuple[Literal["error"], BaseException] | None = None
        if immediate is not None:
            self._outcome = ("ok", immediate)

    def __repr__(self) -> str:
        last = self.last_status
        state = last.status.value if last is not None else ("answered directly" if self._immediate else "?")
        return f"<TaskRun {self.task_id} dialect={self.dialect} status={state}>"

    @property
    def dialect(self) -> Dialect:
        """The task dialect of the connection the task runs on (``"2025-11-25"`` or ``"2026-07-28"``)."""
        return self._dialect

    @property
    def task_id(self) -> str | None:
        return self._first.task_id if self._first is not None else None

    @property
    def last_status(self) -> Task | None:
        """The newest state observed so far, without a round trip."""
        return self._reporter.last or self._first

    @property
    def done(self) -> bool:
        """Whether the task is known to have ended (or there never was one)."""
        last = self.last_status
        return self._outcome is not None or last is None or last.is_terminal

    async def status(self) -> Task | None:
        """A fresh ``tasks/get`` (also reported to ``on_status``); ``None`` when there is no task."""
        if self._wire is None or self._first is None:
            return None
        try:
            with raising_lost_connection(task_id=self._first.task_id, dialect=self._wire.dialect):
                task = await self._wire.get(self._first.task_id)
        except RemoteError as error:
            raise lookup_error(
                error, self._first.task_id, self._wire.dialect, method="tasks/get", resumed=self._resumed
            ) from None
        await self._reporter.report(task)
        return task

    # The timeout also cancels the remote task, which a caller-side fail_after cannot do.
    async def result(self, *, timeout: float | timedelta | None = None) -> ResultT:  # noqa: ASYNC109
        """Wait for the task's result; raises the ``Task*Error`` that says how it ended otherwise.

        ``timeout`` bounds this wait; when it passes, the task is cancelled and
        :class:`~mcp_tasks_compat.errors.TaskTimeoutError` raised.
        """
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            if self._outcome is None:
                assert self._wire is not None
                assert self._first is not None
                assert self._expiry is not None
                wire, first = self._wire, self._first
                guard = _Guard(
                    timeout=seconds(timeout),
                    grace=self._grace,
                    what=f"task {first.task_id}",
                    settle=self._settle,
                )
                guard.attach(wire, first.task_id, self._reporter)
                start = self._reporter.last or first
                follower = follower_for(
                    wire, start, self._reporter, self._expiry, resumed=self._resumed, tool=self._tool
                )
                try:
                    with self._span.current():
                        value = await guard.run(follower.run, end_on_abort=False)
                except TaskError as error:
                    self._outcome = ("error", error)
                    self._span.close(error)
                    raise
                self._outcome = ("ok", value)
                self._span.close()
            if self._outcome[0] == "error":
                raise self._outcome[1]
            return self._outcome[1]

    async def cancel(self, *, wait: float = 5.0) -> Task | None:
        """Send ``tasks/cancel`` and report the state it leads to.

        Cancellation is cooperative (2026-07-28 servers only acknowledge it), so this polls up to
        ``wait`` seconds for a terminal status and returns the newest state seen.
        """
        if self._wire is None or self._first is None:
            return None
        wire, task_id = self._wire, self._first.task_id
        last = self.last_status
        if last is not None and last.is_terminal:
            return last
        try:
            with self._span.current():
                answered = await wire.cancel(task_id)
        except RemoteError as error:
            logger.debug("tasks/cancel for %s answered %s; reading the state instead", task_id, error)
            answered = None
        if answered is not None:
            await self._reporter.report(answered)
        current = self.last_status
        deadline = anyio.current_time() + wait
        # The deadline is checked between requests, never by cancelling one (see Poller).
        while (current is None or not current.is_terminal) and anyio.current_time() < deadline:
            fetched = await self.status()
            if fetched is None:
                break
            current = fetched
            if not fetched.is_terminal:
                pause = clamp_poll_seconds(fetched.poll_interval_ms)
                await anyio.sleep(max(0.0, min(pause, deadline - anyio.current_time())))
        if current is not None and current.is_terminal:
            self._span.close()
        return current or self.last_status

    async def __aenter__(self) -> TaskRun[ResultT]:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._wire is None or self._first is None or self.done:
            return
        await _end_early(self._wire, self._first.task_id, self._settle, grace=self._grace)


async def start_tool(
    connection: ClientConnection[ResultT],
    name: str,
    arguments: dict[str, Any] | None,
    *,
    on_status: OnStatus | None,
    ttl_ms: int | None,
    meta: dict[str, Any] | None,
    cancel_grace: float,
) -> TaskRun[ResultT]:
    """One ``tools/call`` and a handle: nothing else is sent (no listen stream, no ``tasks/get``)
    until someone follows the task, and with no tracer set nothing is built for tracing; what a
    batch submitter pays per task beyond the SDK's own call (issue 27 §4)."""
    await plan_call(connection, name, "task")
    dialect = connection.negotiated.dialect
    assert dialect is not None
    span = traces.client_call(name, dialect)  # to the task's outcome, as the handle learns it
    try:
        with span.current():
            if span is not traces.NO_SPAN:  # tracing: the call carries this span's context
                meta = traces.with_trace_context(meta)
            started = await connection.call(ToolCall(name, arguments, as_task=True, ttl_ms=ttl_ms, meta=meta))
    except BaseException as error:
        # A transport failure becomes ServerConnectionLostError (raising_lost_connection, inline).
        lost = None
        if isinstance(error, Exception):
            lost = lost_connection_error(error, task_id=None, dialect=dialect)
        span.close(lost or error)
        if lost is not None:
            raise lost from error
        raise
    if not isinstance(started, Task):
        span.close()
        return TaskRun(wire=None, task=None, immediate=started, dialect=dialect, cancel_grace=cancel_grace)
    span.task(started.task_id)
    run = TaskRun(
        wire=connection.wire(),
        task=started,
        tool=name,
        dialect=dialect,
        on_status=on_status,
        cancel_grace=cancel_grace,
        settle=connection.settle,
        span=span,
    )
    await run._reporter.report(started)  # pyright: ignore[reportPrivateUsage]
    return run


async def resume(
    connection: ClientConnection[ResultT],
    task_id: str,
    *,
    on_status: OnStatus | None,
    cancel_grace: float,
) -> TaskRun[ResultT]:
    if not isinstance(task_id, str) or not task_id:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"task_id must be a non-empty string, not {task_id!r}")
    negotiated = connection.negotiated
    if negotiated.dialect is None:
        raise refuse(
            connection,
            f"resume({task_id!r})",
            f"a connection whose server offers tasks ({negotiated.reason or 'this one does not'})",
            "resume on a connection to the server that created the task",
        )
    check_ready(connection)
    wire = connection.wire()
    try:
        with raising_lost_connection(task_id=task_id, dialect=wire.dialect):
            task = await wire.get(task_id)
    except RemoteError as error:
        raise lookup_error(error, task_id, wire.dialect, method="tasks/get", resumed=True) from None
    run = TaskRun(
        wire=wire,
        task=task,
        dialect=negotiated.dialect,
        on_status=on_status,
        resumed=True,
        cancel_grace=cancel_grace,
        settle=connection.settle,
    )
    await run._reporter.report(task)  # pyright: ignore[reportPrivateUsage]
    return run


def seconds(value: float | timedelta | None) -> float | None:
    """Accept seconds or a ``timedelta`` for every duration option."""
    if value is None:
        return None
    if isinstance(value, timedelta):
        return value.total_seconds()
    return float(value)
