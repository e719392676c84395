"""The plain hand-off: a long tool served to a client that speaks no task dialect (docs/any-host.md).

With ``plain_handoff_s`` set, a plain ``tools/call`` (no task asked for, no extension declared) of
a task-capable tool starts its run undecided, exactly as the inline grace does
(:meth:`~.._engine.runs.TaskRuns.begin`), and waits for it up to the deadline: done by then, the
call is answered with the tool's own answer; still running, the run goes on, unrestarted, as a
task in the server's store, and the call is answered with an ordinary tool result whose text tells
a model what to call next. A task-required tool hands off at once. The task tools
(``task_status``, ``task_result``, ``task_cancel``, ``task_answer``) are served here for such
clients, under one owner rule on both eras and both SDK majors (:func:`handoff_owner`): a
principal's task is its principal's; unauthenticated, the session's that created it (a handshake
session; on 2026-07-28 the transport connection, or the request's ``Mcp-Session-Id``), unless
``unauthenticated_2025_scope="task_id"``; a request with no session at all (2026-07-28 over HTTP)
has the unguessable id as the capability, as 2026-07-28's own tasks.

Only a client that speaks no task dialect is handed off (``Caller.speaks_tasks``: a 2025-11-25
session that declared ``capabilities.tasks``, a 2026-07-28 request that declares the extension,
see no difference), and only its listings lose the ``outputSchema`` of a tool that may hand off
(:func:`.task_tools.listed`): a hand-off result would fail the SDK client's output check.

While a plain call (or ``task_result``) waits, a heartbeat ``notifications/progress`` goes to a
client that sent a progress token whenever the tool reported none for :data:`HEARTBEAT_S`, so a
host that resets its timeout on progress keeps waiting. The deadline never stops a tool.
"""

from __future__ import annotations

import contextvars
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Any, Final, TypeVar, cast

import anyio

from .._engine import (
    ProgressWatch,
    RoundTripAnswer,
    TaskPolicy,
    TaskRecord,
    ToolCallFailure,
    UnknownTask,
    Work,
)
from .._engine.grace import GraceMemory, GraceTicket
from .._engine.inline import Outcome
from .._engine.limits import echoed_id
from ..core._model import Task, TaskStatus
from ..dialects import DIALECT_2025_11_25, Dialect, TaskSupport
from ..errors import PeerProtocolError
from .caller import Caller, owner_2025, session_owned
from .task_tools import answer_form, question_text, text_result

__all__ = [
    "HEARTBEAT_S",
    "PlainHandoff",
    "SendProgress",
    "handoff_owner",
    "in_handoff",
    "with_heartbeat",
]

T = TypeVar("T")

HEARTBEAT_S: Final = 5.0
"""How long a waiting plain call may go without a progress notification before a heartbeat."""

SendProgress = Callable[[float, "float | None", "str | None"], Awaitable[bool]]
"""``send(progress, total, message)``: a ``notifications/progress`` for the request being served,
``False`` (nothing sent) when it carries no progress token (the adapter's)."""

_handing_off: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "mcp_tasks_compat_handing_off", default=False
)


def in_handoff() -> bool:
    """Whether the run here is a plain call's that may hand off: its questions wait for
    ``task_answer`` rather than for a client capability the plain client never declared."""
    return _handing_off.get()


def plain_answer(outcome: Outcome) -> Mapping[str, Any]:
    """What the ``tools/call`` answers when the call ended within the grace: what it would have.

    A result is answered as the work gave it (an adapter's own lazily dumped result stays so, for
    the adapter to hand the SDK its model back); a round, as the round; a JSON-RPC error raised by
    the SDK's chain is raised again as it was, any other as a :class:`PeerProtocolError`; any
    other exception of the work is raised again.
    """
    error = outcome.error
    if error is None:
        return outcome.result if outcome.result is not None else {}
    if isinstance(error, RoundTripAnswer):
        return error.result
    if isinstance(error, ToolCallFailure):
        if isinstance(error.__cause__, Exception):
            raise error.__cause__
        failure = error.error
        raise PeerProtocolError(failure.message, jsonrpc_code=failure.code, data=failure.data)
    raise error


class _Waits:
    """The wait of each plain call: the deadline, never skipped (a plain client is always waited
    for), and whether the tool's recent calls all ended within it (``likely_quick``: the call
    starts without detaching its request, which a quick call would pay for nothing; the bench's
    section 10)."""

    def __init__(self, tasks: TaskPolicy) -> None:
        self.tasks = tasks
        self.memory: GraceMemory | None = None

    def ticket(self, tool_name: str, deadline: float) -> GraceTicket:
        if self.tasks.support_for(tool_name) == "required":
            return GraceTicket.fixed(0.0)  # handed off at once
        if self.memory is None or self.memory.grace_s != deadline:
            self.memory = GraceMemory(deadline, long_streak=sys.maxsize)
        return self.memory.ticket(tool_name)


class PlainHandoff:
    """The hand-off of one server's plain calls, and its task tools (see the module docstring)."""

    def __init__(self, tasks: TaskPolicy) -> None:
        self.tasks = tasks
        self.engine = tasks.engine
        self.waits = _Waits(tasks)

    # --- what is handed off ------------------------------------------------------------------------

    @property
    def deadline_s(self) -> float | None:
        return self.tasks.plain_handoff_s

    def is_task_tool(self, tool_name: str) -> bool:
        return self.deadline_s is not None and tool_name in self.tasks.task_tool_names.values()

    def hands_off(self, tool_name: str, *, speaks_tasks: bool = False) -> bool:
        """Whether a plain call of ``tool_name`` waits for it, then hands off to a task: never for a
        client that speaks a task dialect (``speaks_tasks``), which asks for a task itself."""
        return (
            self.deadline_s is not None
            and not speaks_tasks
            and not self.is_task_tool(tool_name)
            and self.tasks.support_for(tool_name) != "forbidden"
        )

    def support_for(self, tool_name: str) -> TaskSupport:
        """A tool's task support, a task tool's ``"forbidden"`` (it never runs as a task, whatever
        ``default_support`` says: on the ``install`` form it is no registered tool)."""
        return "forbidden" if self.is_task_tool(tool_name) else self.tasks.support_for(tool_name)

    async def call(
        self,
        tool_name: str,
        arguments: Mapping[str, Any] | None,
        caller: Caller,
        *,
        dialect: Dialect,
        owner: str | None,
        work: Work,
        progress: SendProgress | None,
    ) -> Outcome | dict[str, Any]:
        """Run a plain call of ``tool_name`` until the deadline: its :class:`Outcome` if it ended
        (the caller answers it as a plain call would), else the hand-off result of its task."""
        deadline = cast(float, self.deadline_s)
        engine = self.engine
        ttl_ms = engine.effective_ttl(None, requested=False)
        watch = ProgressWatch()

        async def create(status_message: str | None) -> TaskRecord:
            return await engine.create(
                dialect=dialect,
                owner=owner,
                tool_name=tool_name,
                ttl_ms=ttl_ms,
                status_message=status_message,
                arguments=arguments,
                run_on=self.tasks.runs_on(tool_name),
            )

        if self.tasks.runs_on(tool_name) == "workers":  # queued: waited for in the store
            record = await create(None)
            return await self._waited(record, deadline, progress, watch)
        ticket = self.waits.ticket(tool_name, deadline)
        with caller.launch(tool_name, detach=not ticket.likely_quick) as launch:
            watch.watch_in(launch.context)
            launch.context.run(_handing_off.set, True)
            begun = partial(
                engine.runs.begin, work, launch.group, ticket=ticket, create=create, context=launch.context
            )
            answer = await with_heartbeat(begun, watch, progress, None)
        return self.still_running(answer) if isinstance(answer, Task) else answer

    async def _waited(
        self, record: TaskRecord, wait_s: float, progress: SendProgress | None, watch: ProgressWatch
    ) -> dict[str, Any]:
        """Wait up to ``wait_s`` for the task to end or ask a question; what a model is answered."""
        record = await self.engine.reader.watch_current(record)

        async def until_it_moves() -> None:
            with anyio.move_on_after(wait_s):
                while not record.task.is_terminal and not record.task.input_requests:
                    await record.changed.wait()

        try:
            await with_heartbeat(until_it_moves, watch, progress, record)
            return self.shown(record.task)
        finally:
            self.engine.unwatch(record)

    @staticmethod
    async def heartbeat(watch: ProgressWatch, send: SendProgress, record: TaskRecord | None) -> None:
        """A ``notifications/progress`` whenever nothing was sent for :data:`HEARTBEAT_S`."""
        started = time.monotonic()
        while True:
            await anyio.sleep(max(0.05, watch.at + HEARTBEAT_S - time.monotonic()))
            if time.monotonic() - watch.at < HEARTBEAT_S:
                continue  # the tool reported meanwhile
            value = watch.last + 0.001  # on from the tool's own values: progress must increase
            status = record.task.status_message if record is not None else None
            message = status or f"still running ({time.monotonic() - started:.0f} s)"
            watch.sent(value)
            await send(value, None, message)

    # --- what a model reads ------------------------------------------------------------------------

    def _names(self) -> dict[str, str]:
        return self.tasks.task_tool_names

    def still_running(self, task: Task) -> dict[str, Any]:
        """The hand-off answer: an ordinary result telling a model what to call next."""
        names = self._names()
        status = f" ({task.status_message})" if task.status_message else ""
        text = (
            f"The tool is still running as task {task.task_id}{status}. "
            f'Call `{names["result"]}` with {{"task_id": "{task.task_id}"}} to wait for its result '
            f"(`{names['cancel']}` stops it)."
        )
        return text_result(text, structured=self._structured(task))

    def _structured(self, task: Task) -> dict[str, Any]:
        shown = self.engine.shown(task)
        structured: dict[str, Any] = {"taskId": task.task_id, "status": task.status.value}
        if shown.status_message:
            structured["statusMessage"] = shown.status_message
        if shown.poll_interval_ms is not None:
            structured["pollIntervalMs"] = shown.poll_interval_ms
        if task.input_requests:
            structured["inputRequests"] = {key: dict(value) for key, value in task.input_requests.items()}
        return structured

    def shown(self, task: Task) -> dict[str, Any]:
        """A task as ``task_result`` answers it: the tool's own result once it ended, its question
        while it waits for one, else the still-running text."""
        task_id = task.task_id
        if task.status in (TaskStatus.COMPLETED, TaskStatus.FAILED) and task.result is not None:
            return {key: value for key, value in task.result.items() if key != "_meta"}
        if task.status is TaskStatus.FAILED:
            reason = (
                task.error.message if task.error is not None else (task.status_message or "no reason given")
            )
            return text_result(
                f"Task {task_id} failed: {reason}", structured=self._structured(task), is_error=True
            )
        if task.status is TaskStatus.CANCELLED:
            reason = f": {task.status_message}" if task.status_message else ""
            return text_result(
                f"Task {task_id} was cancelled{reason}.", structured=self._structured(task), is_error=True
            )
        if task.input_requests:
            return text_result(question_text(task, self._names()), structured=self._structured(task))
        return self.still_running(task)

    # --- the task tools ----------------------------------------------------------------------------

    async def serve_tool(
        self,
        tool_name: str,
        arguments: Mapping[str, Any] | None,
        *,
        owner: str | None,
        also_of: Callable[[str], bool] | None,
        progress: SendProgress | None,
    ) -> dict[str, Any]:
        """A call of one of the task tools, answered as a tool result (a model reads it)."""
        verb = next(verb for verb, name in self._names().items() if name == tool_name)
        args = dict(arguments or {})
        task_id = args.get("task_id")
        if not isinstance(task_id, str):
            return text_result(f"`{tool_name}` needs a string argument task_id.", is_error=True)
        try:
            record = await self.engine.lookup(task_id, owner, also_of=also_of)
        except UnknownTask:
            return text_result(
                f"Task not found: {echoed_id(task_id)} (unknown, expired, or not yours).", is_error=True
            )
        if verb == "status":
            task = record.task
            if task.is_terminal:
                return text_result(
                    f"Task {task_id} is {task.status.value}; `{self._names()['result']}` gives its result.",
                    structured=self._structured(task),
                )
            return self.shown(task)
        if verb == "result":
            return await self._waited(record, cast(float, self.deadline_s), progress, ProgressWatch())
        if verb == "cancel":
            task = await self.engine.cancel_record(record, strict=False)
            return text_result(f"Task {task_id} is {task.status.value}.", structured=self._structured(task))
        return await answer_form(self.engine.inputs, record, args.get("answer"), self._names())


def handoff_owner(handoff: PlainHandoff, caller: Caller) -> tuple[str | None, Callable[[str], bool] | None]:
    """Whom a hand-off's task belongs to, and whose other tasks a task tool may read (the engine's
    ``lookup(owner, also_of=)``), the same on both eras and majors: the principal's; else the
    session's that created it (``Caller.session_key``: a handshake session, a 2026-07-28 transport
    connection or ``Mcp-Session-Id``), any session's with ``unauthenticated_2025_scope="task_id"``
    (the id is the capability); with no session at all (``None``), the unguessable id is the
    capability, as for 2026-07-28's own tasks."""
    by_id = handoff.tasks.unauthenticated_2025_scope == "task_id" and caller.principal is None
    return owner_2025(caller), session_owned if by_id else None


async def with_heartbeat(
    waited: Callable[[], Awaitable[T]],
    watch: ProgressWatch,
    progress: SendProgress | None,
    record: TaskRecord | None,
) -> T:
    """``waited()``, with a heartbeat meanwhile when the request sent a progress token (none
    otherwise: no task group for a quick call to pay for)."""
    if progress is None:
        return await waited()
    answers: list[T] = []
    async with anyio.create_task_group() as beats:
        beats.start_soon(PlainHandoff.heartbeat, watch, progress, record)
        try:
            answers.append(await waited())
        finally:
            beats.cancel_scope.cancel()
    return answers[0]


async def plain_2025(
    handoff: PlainHandoff, params: object, caller: Caller, work: Work, progress: SendProgress | None
) -> Mapping[str, Any] | None:
    """A handshake-era plain call served here (a task tool, or a task-capable tool of a client
    that speaks no task dialect, waited for up to the deadline), else ``None``: run plainly, as
    without the hand-off (off, a client that speaks 2025-11-25, or a stateless server: no
    session to own a task). The owner rule is :func:`handoff_owner`'s."""
    if handoff.deadline_s is None:
        return None
    fields = cast(Mapping[str, Any], params)
    name, arguments = str(fields["name"]), fields.get("arguments")
    arguments = cast(Mapping[str, Any], arguments) if isinstance(arguments, Mapping) else None
    owner, also_of = handoff_owner(handoff, caller)
    if owner is None:
        return None
    if handoff.is_task_tool(name):
        return await handoff.serve_tool(name, arguments, owner=owner, also_of=also_of, progress=progress)
    if not handoff.hands_off(name, speaks_tasks=caller.speaks_tasks):
        return None
    handed = await handoff.call(
        name, arguments, caller, dialect=DIALECT_2025_11_25, owner=owner, work=work, progress=progress
    )
    return handed if isinstance(handed, dict) else plain_answer(handed)
