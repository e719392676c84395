"""The entry points: a call run as a task, a task this client just created, a started task's
handle, a resumed task.

A call (:func:`call_tool`, :func:`follow`) runs under a :class:`~.following.Guard` (the overall
timeout, and a best-effort ``tasks/cancel`` for a task left unfinished when the call ends early)
and hands the task to the follower of the wire's dialect; :func:`start_tool` and :func:`resume`
give a :class:`~.task_run.TaskRun` instead of waiting.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._observe import traces
from ..core._model import Task
from ..dialects import TASK_AT_ONCE_META_KEY
from .call_options import CallOptions
from .following import Guard, end_early, follower_for
from .journal import CallRecord
from .lost import lost_connection_error, raising_lost_connection
from .outcomes import lookup_error
from .plan import check_ready, plan_call, refuse
from .poller import Expiry, Reporter
from .progress import call_progress
from .protocols import AnyTaskWire, ClientConnection, OnProgress, OnStatus, RemoteError, ResultT, ToolCall
from .task_run import TaskRun

__all__ = ["call_tool", "follow", "resume", "start_tool"]


def _hinted(
    connection: ClientConnection[Any], options: CallOptions, meta: dict[str, Any] | None
) -> dict[str, Any] | None:
    """``meta`` with the task-at-once hint when the caller wants the task at once and the
    connection's class sends the hint (a server that decides per call: 2026-07-28 on mcp 2.x)."""
    if options.at_once and connection.sends_task_at_once:
        return {**(meta or {}), TASK_AT_ONCE_META_KEY: True}
    return meta


async def call_tool(
    connection: ClientConnection[ResultT],
    name: str,
    arguments: dict[str, Any] | None,
    options: CallOptions,
    *,
    mode: str,
    on_status: OnStatus | None,
    meta: dict[str, Any] | None,
    on_progress: OnProgress | None = None,
    sdk_options: Mapping[str, Any] | None = None,
    journal: CallRecord | None = None,
) -> ResultT:
    """A tool call followed to its result under a :class:`~.following.Guard`; a task the call makes
    carries the task-at-once hint where ``options.at_once`` asks for it, as :func:`start_tool`'s does.
    ``journal`` records the task once acknowledged, and its outcome once read."""
    as_task = await plan_call(connection, name, mode)
    if as_task:
        meta = _hinted(connection, options, meta)
    guard = Guard(
        timeout=options.timeout_s,
        grace=options.cancel_grace_s,
        what=f"tools/call {name!r}",
        dialect=connection.negotiated.dialect,
        settle=connection.settle,
    )
    on_status, progress = call_progress(on_status, on_progress)  # on_progress hears the task's too
    reporter = Reporter(on_status)
    span = traces.client_call(name, connection.negotiated.dialect)  # a no-op unless tracing

    async def operation() -> ResultT:
        started = await connection.call(
            ToolCall(
                name,
                arguments,
                as_task,
                options.ttl_ms,
                traces.with_trace_context(meta),
                progress=progress,
                read_timeout=options.read_timeout_s,
                sdk_options=dict(sdk_options or {}),
            )
        )
        if not isinstance(started, Task):
            return started
        # A server may hand back a task even on a "plain" call (2026-07-28: the server decides);
        # it is resolved here rather than dropped.
        span.task(started.task_id)
        wire = connection.wire()
        guard.attach(wire, started.task_id, reporter)  # a failed record ends the task too
        if journal is not None:  # on disk before anything else: this process may die next
            await journal.acknowledged(started, wire.dialect)
        expiry = Expiry(started, resumed=False)
        return await follower_for(wire, started, reporter, expiry, resumed=False, tool=name).run()

    with span:  # the whole follow: creation, polls or push, input rounds, result
        if journal is None:
            return await guard.run(operation)
        try:
            result = await guard.run(operation)
        except BaseException as error:
            await journal.ended(error)
            raise
        await journal.ended(None)
        return result


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
    guard = Guard(timeout=overall_timeout, grace=cancel_grace, what=f"task {task.task_id}")
    guard.attach(wire, task.task_id, reporter)
    follower = follower_for(wire, task, reporter, Expiry(task, resumed=False), resumed=False, tool=tool)
    return await guard.run(follower.run)


async def start_tool(
    connection: ClientConnection[ResultT],
    name: str,
    arguments: dict[str, Any] | None,
    options: CallOptions,
    *,
    on_status: OnStatus | None,
    meta: dict[str, Any] | None,
    journal: CallRecord | None = None,
) -> TaskRun[ResultT]:
    """One ``tools/call`` and a handle: nothing else is sent (no listen stream, no ``tasks/get``)
    until someone follows the task, and with no tracer set nothing is built for tracing; what a
    batch submitter pays per task beyond the SDK's own call (issue 27 §4).

    ``options.at_once``: the caller wants the handle, not the result, so even a quick tool should
    be a task; the call then carries the task-at-once hint where the connection's class sends it.
    """
    await plan_call(connection, name, "task")
    meta = _hinted(connection, options, meta)
    dialect = connection.negotiated.dialect
    assert dialect is not None
    span = traces.client_call(name, dialect)  # to the task's outcome, as the handle learns it
    try:
        with span.current():
            if span is not traces.NO_SPAN:  # tracing: the call carries this span's context
                meta = traces.with_trace_context(meta)
            started = await connection.call(
                ToolCall(name, arguments, as_task=True, ttl_ms=options.ttl_ms, meta=meta)
            )
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
        return TaskRun(
            wire=None, task=None, immediate=started, dialect=dialect, cancel_grace=options.cancel_grace_s
        )
    span.task(started.task_id)
    if journal is not None:
        try:
            await journal.acknowledged(started, dialect)
        except BaseException:  # a task no journal holds is not left running
            await end_early(
                connection.wire(), started.task_id, connection.settle, grace=options.cancel_grace_s
            )
            raise
    run = TaskRun(
        wire=connection.wire(),
        task=started,
        tool=name,
        journal=journal,
        dialect=dialect,
        on_status=on_status,
        cancel_grace=options.cancel_grace_s,
        settle=connection.settle,
        span=span,
    )
    await run._reporter.report(started)  # pyright: ignore[reportPrivateUsage]
    return run


async def resume(
    connection: ClientConnection[ResultT],
    task_id: str,
    options: CallOptions,
    *,
    on_status: OnStatus | None,
    journal: CallRecord | None = None,
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
        not_found = lookup_error(error, task_id, wire.dialect, method="tasks/get", resumed=True)
        if journal is not None:
            await journal.ended(not_found)
        raise not_found from None
    run = TaskRun(
        wire=wire,
        task=task,
        journal=journal,
        dialect=negotiated.dialect,
        on_status=on_status,
        resumed=True,
        cancel_grace=options.cancel_grace_s,
        settle=connection.settle,
    )
    await run._reporter.report(task)  # pyright: ignore[reportPrivateUsage]
    return run
