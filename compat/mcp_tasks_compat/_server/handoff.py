"""The plain hand-off: a long tool served to a client that speaks no task dialect (docs/any-host.md).

With ``plain_handoff_s`` set, a plain ``tools/call`` (no task asked for, no extension declared) of
a task-capable tool starts its run undecided, exactly as the inline grace does
(:meth:`~.._engine.runs.TaskRuns.begin`), and waits for it up to the deadline: done by then, the
call is answered with the tool's own answer; still running, the run goes on, unrestarted, as a
task in the server's store, and the call is answered with an ordinary tool result whose text tells
a model what to call next. A task-required tool hands off at once. The task tools
(``task_status``, ``task_result``, ``task_cancel``, ``task_answer``) are served here for such
clients, under the owner rule of the connection's dialect: a principal's task is its principal's;
unauthenticated, a handshake-era (2025-11-25) session's task is that session's (unless
``unauthenticated_2025_scope="task_id"``), and on 2026-07-28 the unguessable id is the capability.

While a plain call (or ``task_result``) waits, a heartbeat ``notifications/progress`` goes to a
client that sent a progress token whenever the tool reported none for :data:`HEARTBEAT_S`, so a
host that resets its timeout on progress keeps waiting. The deadline never stops a tool.
"""

from __future__ import annotations

import contextvars
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, cast

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
from .._engine.grace import GraceTicket
from .._engine.inline import Outcome
from .._engine.inputs import InputRelay
from .._engine.limits import echoed_id
from ..core._model import Task, TaskStatus
from ..dialects import DIALECT_2025_11_25, Dialect
from ..errors import PeerProtocolError
from .caller import Caller, owner_2025, session_owned

__all__ = [
    "HEARTBEAT_S",
    "TASK_TOOLS",
    "PlainHandoff",
    "SendProgress",
    "form_problem",
    "in_handoff",
    "register_task_tools",
]

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


def _text(
    text: str, *, structured: Mapping[str, Any] | None = None, is_error: bool = False
) -> dict[str, Any]:
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if structured is not None:
        result["structuredContent"] = dict(structured)
    if is_error:
        result["isError"] = True
    return result


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


class PlainHandoff:
    """The hand-off of one server's plain calls, and its task tools (see the module docstring)."""

    def __init__(self, tasks: TaskPolicy) -> None:
        self.tasks = tasks
        self.engine = tasks.engine

    # --- what is handed off ------------------------------------------------------------------------

    @property
    def deadline_s(self) -> float | None:
        return self.tasks.plain_handoff_s

    def is_task_tool(self, tool_name: str) -> bool:
        return self.deadline_s is not None and tool_name in self.tasks.task_tool_names.values()

    def hands_off(self, tool_name: str) -> bool:
        """Whether a plain call of ``tool_name`` waits for it, then hands off to a task."""
        return (
            self.deadline_s is not None
            and not self.is_task_tool(tool_name)
            and self.tasks.support_for(tool_name) != "forbidden"
        )

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
        required = self.tasks.support_for(tool_name) == "required"  # handed off at once
        answer: Outcome | Task | None = None
        with caller.launch(tool_name) as launch:
            watch.watch_in(launch.context)
            launch.context.run(_handing_off.set, True)
            async with anyio.create_task_group() as beats:
                if progress is not None:
                    beats.start_soon(self._heartbeat, watch, progress, None)
                try:
                    answer = await engine.runs.begin(
                        work,
                        launch.group,
                        ticket=GraceTicket.fixed(0.0 if required else deadline),
                        create=create,
                        context=launch.context,
                    )
                finally:
                    beats.cancel_scope.cancel()
        assert answer is not None
        return self.still_running(answer) if isinstance(answer, Task) else answer

    async def _waited(
        self, record: TaskRecord, wait_s: float, progress: SendProgress | None, watch: ProgressWatch
    ) -> dict[str, Any]:
        """Wait up to ``wait_s`` for the task to end or ask a question; what a model is answered."""
        record = await self.engine.reader.watch_current(record)
        try:
            async with anyio.create_task_group() as beats:
                if progress is not None:
                    beats.start_soon(self._heartbeat, watch, progress, record)
                with anyio.move_on_after(wait_s):
                    while not record.task.is_terminal and not record.task.input_requests:
                        await record.changed.wait()
                beats.cancel_scope.cancel()
            return self.shown(record.task)
        finally:
            self.engine.unwatch(record)

    @staticmethod
    async def _heartbeat(watch: ProgressWatch, send: SendProgress, record: TaskRecord | None) -> None:
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
        return _text(text, structured=self._structured(task))

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
            return _text(f"Task {task_id} failed: {reason}", structured=self._structured(task), is_error=True)
        if task.status is TaskStatus.CANCELLED:
            reason = f": {task.status_message}" if task.status_message else ""
            return _text(
                f"Task {task_id} was cancelled{reason}.", structured=self._structured(task), is_error=True
            )
        if task.input_requests:
            return _text(_question(task, self._names()), structured=self._structured(task))
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
            return _text(f"`{tool_name}` needs a string argument task_id.", is_error=True)
        try:
            record = await self.engine.lookup(task_id, owner, also_of=also_of)
        except UnknownTask:
            return _text(
                f"Task not found: {echoed_id(task_id)} (unknown, expired, or not yours).", is_error=True
            )
        if verb == "status":
            task = record.task
            if task.is_terminal:
                return _text(
                    f"Task {task_id} is {task.status.value}; `{self._names()['result']}` gives its result.",
                    structured=self._structured(task),
                )
            return self.shown(task)
        if verb == "result":
            return await self._waited(record, cast(float, self.deadline_s), progress, ProgressWatch())
        if verb == "cancel":
            task = await self.engine.cancel_record(record, strict=False)
            return _text(f"Task {task_id} is {task.status.value}.", structured=self._structured(task))
        return await _answer(self.engine.inputs, record, args.get("answer"), self._names())


async def plain_2025(
    handoff: PlainHandoff, params: object, caller: Caller, work: Work, progress: SendProgress | None
) -> Mapping[str, Any] | None:
    """A handshake-era plain call served here (a task tool, or a task-capable tool waited for
    up to the deadline), else ``None``: run plainly, as without the hand-off (off, or a stateless
    server: no session to own a task). The owner rule is 2025-11-25's."""
    if handoff.deadline_s is None:
        return None
    fields = cast(Mapping[str, Any], params)
    name, arguments = str(fields["name"]), fields.get("arguments")
    arguments = cast(Mapping[str, Any], arguments) if isinstance(arguments, Mapping) else None
    owner = owner_2025(caller)
    if owner is None:
        return None
    if handoff.is_task_tool(name):
        by_id = handoff.tasks.unauthenticated_2025_scope == "task_id" and caller.principal is None
        also_of = session_owned if by_id else None
        return await handoff.serve_tool(name, arguments, owner=owner, also_of=also_of, progress=progress)
    if not handoff.hands_off(name):
        return None
    handed = await handoff.call(
        name, arguments, caller, dialect=DIALECT_2025_11_25, owner=owner, work=work, progress=progress
    )
    return handed if isinstance(handed, dict) else plain_answer(handed)


def _question(task: Task, names: Mapping[str, str]) -> str:
    """What a model reads of the question a task waits for."""
    key, request = next(iter(task.input_requests.items()))
    params = cast(Mapping[str, Any], request.get("params") or {})
    if request.get("method") != "elicitation/create":
        return (
            f"Task {task.task_id} waits for input ({request.get('method')}, {key}) that only a "
            f"task-aware client can give; `{names['cancel']}` stops it."
        )
    schema = json.dumps(params.get("requestedSchema", {}), separators=(",", ":"))
    return (
        f"Task {task.task_id} asks: {params.get('message', '')} "
        f'Call `{names["answer"]}` with {{"task_id": "{task.task_id}", "answer": {{...}}}}, '
        f"the answer an object matching this JSON schema: {schema}"
    )


async def _answer(
    inputs: InputRelay, record: TaskRecord, answer: object, names: Mapping[str, str]
) -> dict[str, Any]:
    """``task_answer``: the answer to the task's form, checked against its schema."""
    task = record.task
    forms = [
        (key, request)
        for key, request in task.input_requests.items()
        if request.get("method") == "elicitation/create"
    ]
    if not forms:
        return _text(
            f"Task {task.task_id} is not waiting for an answer ({task.status.value}).", is_error=True
        )
    key, request = forms[0]
    schema = cast(
        Mapping[str, Any],
        cast(Mapping[str, Any], request.get("params") or {}).get("requestedSchema") or {},
    )
    problem = form_problem(answer, schema)
    if problem is not None:
        return _text(
            f"The answer does not fit the question's schema: {problem}. Nothing was sent.", is_error=True
        )
    taken = await inputs.deliver(
        record, {key: {"action": "accept", "content": dict(cast(Mapping[str, Any], answer))}}
    )
    if not taken:
        return _text(f"Task {task.task_id} no longer waits for that answer.", is_error=True)
    call = f'Call `{names["result"]}` with {{"task_id": "{task.task_id}"}}'
    return _text(f"Answer given to task {task.task_id}. {call} to wait for its result.")


_JSON_TYPES: Final[Mapping[str, tuple[type, ...]]] = {
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
}


def form_problem(answer: object, schema: Mapping[str, Any]) -> str | None:
    """Why ``answer`` is not a form answer to ``schema`` (an elicitation's flat object of primitive
    properties: their types, ``enum`` and ``required``), else ``None``."""
    if not isinstance(answer, Mapping):
        return "the answer must be a JSON object"
    fields = cast(Mapping[str, Any], answer)
    properties = cast(Mapping[str, Any], schema.get("properties") or {})
    missing = [name for name in cast(list[str], schema.get("required") or []) if name not in fields]
    if missing:
        return f"missing {', '.join(missing)}"
    for name, value in fields.items():
        spec = properties.get(name)
        if not isinstance(spec, Mapping):
            return f"{name!r} is not a field of the form"
        spec = cast(Mapping[str, Any], spec)
        kinds = _JSON_TYPES.get(str(spec.get("type")))
        wrong_bool = isinstance(value, bool) and spec.get("type") in ("number", "integer")
        if kinds is not None and (not isinstance(value, kinds) or wrong_bool):
            return f"{name!r} must be a {spec.get('type')}"
        enum = spec.get("enum")
        if isinstance(enum, list) and value not in enum:
            return f"{name!r} must be one of {enum}"
    return None


_NOT_HERE: Final = (
    "the task tools are served by the plain hand-off of a task-capable server (plain_handoff_s=); "
    "this connection reached the tool itself"
)


async def _task_status(task_id: str) -> str:
    raise RuntimeError(_NOT_HERE)


async def _task_result(task_id: str) -> str:
    raise RuntimeError(_NOT_HERE)


async def _task_cancel(task_id: str) -> str:
    raise RuntimeError(_NOT_HERE)


async def _task_answer(task_id: str, answer: dict[str, Any]) -> str:
    raise RuntimeError(_NOT_HERE)


TASK_TOOLS: Final[Mapping[str, tuple[Callable[..., Awaitable[str]], str]]] = {
    "status": (
        _task_status,
        "Check on a task that a tool handed off: its status, and its question if it asks one.",
    ),
    "result": (
        _task_result,
        "Wait for a handed-off task's result: the tool's own result once it is done, else where it stands.",
    ),
    "cancel": (_task_cancel, "Stop a handed-off task."),
    "answer": (
        _task_answer,
        "Answer the question a handed-off task asks (task_status or task_result shows it and its form).",
    ),
}
"""What a server registers as each task tool (listed only with the hand-off on): a body the hand-off
answers before it is reached (the SDK makes the input schema from it), and its description."""


def register_task_tools(tasks: TaskPolicy, add_tool: Callable[[Any, Mapping[str, Any]], object]) -> None:
    """Register the task tools (with the hand-off on) through the SDK's ``add_tool(body, kwargs)``:
    listed as any tool, never run as tasks themselves."""
    for verb, tool_name in tasks.task_tool_names.items():
        body, description = TASK_TOOLS[verb]
        add_tool(body, {"name": tool_name, "description": description, "structured_output": False})
        tasks.tools[tool_name] = "forbidden"
