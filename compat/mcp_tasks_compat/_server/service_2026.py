"""The Tasks extension (SEP-2663, 2026-07-28), served on wire JSON, SDK-free.

Only mcp 2.x speaks this dialect today, but its semantics live here beside the 2025-11-25
service so that both are read, tested and changed the same way: ``tools/call`` from plan to
answer (plain, or started undecided for the inline grace and answered inline, as the SDK would
have, or as a task, with multi-round-trip input before any task: :mod:`.rounds_2026`) and
``tasks/get|update|cancel``, with every refusal's words. 2026-07-28 has no sessions: a task
belongs to the authenticated principal, else to nobody in particular (its unguessable id is the
capability; :func:`.caller.owner_2026`). The adapter keeps what only the SDK can do: the tool
chain as work, reading the ``Mcp-Name`` header, and validating an answer against the SDK's result
type of the request it answers (``check_response``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeVar

from .._engine import RoundTripAnswer, TaskPolicy, TaskRecord, UnknownTask, Work
from .._engine.limits import echoed_id
from .._engine.observed import joined, note_read, traced_inline
from .._engine.runs import current_run
from ..core import _codec_2026 as codec
from ..core._model import JsonRpcError, Task, TaskStatus
from ..dialects import DIALECT_2026_07_28, TASK_AT_ONCE_META_KEY, TASKS_EXTENSION_ID
from ..errors import HEADER_MISMATCH, INTERNAL_ERROR, INVALID_PARAMS, PeerProtocolError
from .caller import Caller, owner_2026
from .handoff import PlainHandoff, SendProgress, handoff_owner, plain_answer
from .rounds_2026 import RoundTrips, plain_with_rounds, work_with_rounds

__all__ = [
    "MCP_NAME_MISMATCH",
    "CallMode",
    "InvalidAnswer",
    "ResponseCheck",
    "Tasks2026Service",
    "ToolCall2026",
    "fails_task_2026",
    "invalid_answer",
    "missing_extension",
    "no_input_channel",
    "plain_answer",
]

T = TypeVar("T")

CallMode = Literal["plain", "maybe_task", "task", "handoff"]
"""How a ``tools/call`` runs: plainly, as a task if it outlives the inline grace, as a task, or
plainly until the plain hand-off's deadline, then as a task (:mod:`.handoff`)."""

TASK_NOT_FOUND: Final = "Failed to retrieve task: Task not found"
MCP_NAME_MISMATCH: Final = "Mcp-Name header does not match the request body's 'taskId' parameter"


@dataclass(frozen=True, slots=True)
class InvalidAnswer:
    """The SDK's verdict on an answer that is not the result type of the request it answers."""

    result_type: str
    """The SDK's name of the type the answer should have (``ElicitResult``, ...)."""
    error_count: int


ResponseCheck = Callable[[str, Mapping[str, Any]], "InvalidAnswer | None"]
"""``check(method, response)``: why ``response`` is not a valid answer to an input request of
``method`` (the SDK validates it against that request's result type), else ``None``."""


@dataclass(frozen=True, slots=True)
class ToolCall2026:
    """What the service reads of a 2026-07-28 ``tools/call`` (the adapter's typed params, as wire)."""

    name: str
    arguments: Mapping[str, Any] | None
    meta: Mapping[str, Any] | None
    declares_tasks: bool
    """Whether the request's per-request capabilities declare the Tasks extension."""
    input_responses: Mapping[str, Any] | None = None
    """The answers to the call's earlier ``input_required`` round, if it is a retry (wire JSON)."""
    request_state: str | None = None
    """The ``requestState`` the earlier round gave and the client echoes."""

    @property
    def asks_task_at_once(self) -> bool:
        """The caller asked for a task (this library's ``start_tool``): it gets one, no grace."""
        return self.meta is not None and self.meta.get(TASK_AT_ONCE_META_KEY) is True


def _run_record() -> TaskRecord | None:
    """The task the running work has become, if it has (inside a run)."""
    run = current_run()
    return None if run is None else run[1]


def fails_task_2026(result: Mapping[str, Any]) -> bool:
    """2026-07-28's result rule (the engine's :data:`~.._engine.runs.ResultRule`): no tool result
    fails its task, ``isError`` or not; ``failed`` is for a JSON-RPC error only."""
    return codec.status_for_tool_result(result) is TaskStatus.FAILED


def missing_extension() -> PeerProtocolError:
    """-32021: the request does not declare the Tasks extension, which it needs."""
    error = codec.missing_capability_error()
    return PeerProtocolError(error.message, jsonrpc_code=error.code, data=error.data)


def invalid_answer(key: str, method: str, invalid: InvalidAnswer) -> PeerProtocolError:
    """-32602 for an answer to an outstanding request that is not that request's result type."""
    return PeerProtocolError(
        f"inputResponses[{key!r}] is not a valid {invalid.result_type} (the answer to {method}): "
        f"{invalid.error_count} validation error(s)",
        jsonrpc_code=INVALID_PARAMS,
    )


def no_input_channel(method: str, *, declares_tasks: bool) -> JsonRpcError:
    """Why a plain 2026-07-28 call cannot ask the client ``method``: such a request has no channel
    for a server-to-client request, so the input must come through a task, which this call is not
    (its tool does not run as one, or the request did not declare the extension)."""
    if declares_tasks:
        return JsonRpcError(
            INTERNAL_ERROR,
            f"the tool asked for input ({method}) in a plain 2026-07-28 call, which has no channel "
            "for it, and the tool does not run as a task; declare it 'optional' or 'required' in "
            "ServerTasks(tools=...)",
        )
    error = codec.missing_capability_error()
    return JsonRpcError(
        error.code,
        f"{error.message}: the tool asks for input ({method}), which a 2026-07-28 call can only give "
        f"as a task; declare the {TASKS_EXTENSION_ID} extension",
        error.data,
    )


class Tasks2026Service:
    """The 2026-07-28 task protocol of one server."""

    def __init__(self, tasks: TaskPolicy) -> None:
        self.tasks = tasks
        self.engine = tasks.engine
        self.engine.runs.result_rules[DIALECT_2026_07_28] = fails_task_2026  # re-runs and workers too
        self.handoff = PlainHandoff(tasks)
        """Plain calls of task-capable tools handed off to tasks, and the task tools (when on)."""

    def plan_call(self, tool_name: str, *, declares_tasks: bool) -> CallMode:
        """A forbidden tool, or a request without the extension, runs plainly (a required tool
        without it is refused, -32021); a required tool is always a task; an optional one becomes
        a task if it outlives the inline grace (the adapter's; with the grace off, at once)."""
        support = self.handoff.support_for(tool_name)
        if support == "forbidden":
            return "plain"
        if not declares_tasks:
            if self.handoff.hands_off(tool_name):
                return "handoff"
            if support == "required":
                raise missing_extension()
            return "plain"
        return "task" if support == "required" else "maybe_task"

    async def call_tool(
        self,
        call: ToolCall2026,
        caller: Caller,
        *,
        work: Work,
        plain: Callable[[], Awaitable[T]],
        ends_round: Callable[[Mapping[str, Any]], Exception] = RoundTripAnswer,
        progress: SendProgress | None = None,
    ) -> T | Mapping[str, Any]:
        """A ``tools/call``, from plan to answer: ``plain()``'s answer, or an ``input_required``
        round; the call's own answer when it ended within the inline grace (:func:`plain_answer`);
        or the created task as the flat ``resultType: "task"`` answer.

        ``work`` is the rest of the SDK's chain, started undecided in the run primitive
        (``caller.launch``) and never restarted. Both it and ``plain`` run with the call's
        multi-round-trip state (:class:`~.rounds_2026.RoundTrips`), whose ``before_task`` question
        raises ``ends_round(round)``: an exception the SDK's tool layer lets through. The grace is
        the tool's (:class:`~.._engine.grace.GraceMemory`): none for a tool whose recent calls
        outlived it, or when the caller asked for a task. A tool that runs on the workers has none:
        its call is queued and answered with its task at once.
        """
        mode = self.plan_call(call.name, declares_tasks=call.declares_tasks)
        rounds = RoundTrips(call.input_responses, call.request_state, error=ends_round)
        if mode == "handoff" or (mode == "plain" and self.handoff.is_task_tool(call.name)):
            return await self._handed_off(call, caller, work_with_rounds(work, rounds), progress)
        if mode == "plain":
            return await plain_with_rounds(plain, rounds)
        engine = self.engine
        tool_name, at_once = call.name, call.asks_task_at_once

        async def create(status_message: str | None) -> TaskRecord:
            # owner and TTL read only for a task: a call answered within the grace needs neither
            return await engine.create(
                dialect=DIALECT_2026_07_28,
                owner=owner_2026(caller),
                tool_name=tool_name,
                ttl_ms=self.ttl_ms(),
                status_message=status_message,
                arguments=call.arguments,
            )

        if self.tasks.runs_on(tool_name) == "workers":  # queued, at once: a worker runs it
            queued = await engine.create(
                dialect=DIALECT_2026_07_28,
                owner=owner_2026(caller),
                tool_name=tool_name,
                ttl_ms=self.ttl_ms(),
                arguments=call.arguments,
                run_on="workers",
            )
            return codec.encode_create_task_result(queued.task)
        traced = traced_inline(
            work_with_rounds(work, rounds),
            tool_name=tool_name,
            dialect=DIALECT_2026_07_28,
            record_of=_run_record,
        )
        ticket = self.tasks.grace.ticket(tool_name, at_once=at_once)
        # A tool whose recent calls all ended within the grace starts undetached: this call will
        # most likely be answered plainly, and detaching the request is paid on every quick call
        # (measured by `python -m benchmarks.profile_call raw auto`).
        with caller.launch(tool_name, detach=not ticket.likely_quick) as launch:
            answer = await engine.runs.begin(
                traced,
                launch.group,
                ticket=ticket,
                create=create,
                # A caller that asked for a task gets one at once, as a required tool does: a
                # quick outcome still ends a task.
                always_task=mode == "task" or at_once,
                context=launch.context,
            )
        if isinstance(answer, Task):
            return codec.encode_create_task_result(answer)
        return plain_answer(answer)

    async def _handed_off(
        self, call: ToolCall2026, caller: Caller, work: Work, progress: SendProgress | None
    ) -> Mapping[str, Any]:
        """A plain call served by the hand-off: a task tool, or a task-capable tool waited for up
        to the deadline; the owner rule is the hand-off's (:func:`.handoff.handoff_owner`)."""
        owner, also_of = handoff_owner(self.handoff, caller)
        if self.handoff.is_task_tool(call.name):
            served = await self.handoff.serve_tool(
                call.name, call.arguments, owner=owner, also_of=also_of, progress=progress
            )
            return {"resultType": "complete", **served}
        handed = await self.handoff.call(
            call.name,
            call.arguments,
            caller,
            dialect=DIALECT_2026_07_28,
            owner=owner,
            work=work,
            progress=progress,
        )
        return {"resultType": "complete", **handed} if isinstance(handed, dict) else plain_answer(handed)

    def ttl_ms(self) -> int | None:
        """2026-07-28 clients cannot ask for a TTL: the server's default."""
        return self.engine.effective_ttl(None, requested=False)

    @staticmethod
    def task_id(params: object, *, declares_tasks: bool) -> str:
        """``params.taskId`` of ``tasks/get|update|cancel`` (-32021 without the extension)."""
        if not declares_tasks:
            raise missing_extension()
        return codec.decode_task_id_params(params)

    @staticmethod
    def check_mcp_name(task_id: str, mcp_name: str | None) -> None:
        """-32020 when the request's ``Mcp-Name`` header (decoded) names another task than its
        ``taskId``. Some clients omit the header for ``tasks/*``, so a missing one is accepted."""
        if mcp_name is not None and mcp_name != task_id:
            raise PeerProtocolError(MCP_NAME_MISMATCH, jsonrpc_code=HEADER_MISMATCH)

    async def record(self, task_id: str, caller: Caller) -> TaskRecord:
        """The caller's 2026-07-28 task, else -32602 naming the id (unknown, expired, another's)."""
        try:
            record = await self.engine.lookup(task_id, owner_2026(caller))
        except UnknownTask:
            record = None
        if record is None or record.dialect != DIALECT_2026_07_28:
            raise PeerProtocolError(
                TASK_NOT_FOUND, jsonrpc_code=INVALID_PARAMS, data={"taskId": echoed_id(task_id)}
            )
        return record

    async def get(self, task_id: str, caller: Caller) -> dict[str, Any]:
        """``tasks/get``: the task as read now, with its result or error inline once it ended."""
        record = await self.record(task_id, caller)
        note_read(record, poll=True)  # a flag check unless metering
        return codec.encode_get_task_result(self.engine.shown(record.task))

    async def cancel(self, task_id: str, caller: Caller) -> dict[str, Any]:
        """``tasks/cancel``: an acknowledgement; a task that already ended is left as it is."""
        await self.engine.cancel_record(await self.record(task_id, caller), strict=False)
        return {}

    @staticmethod
    def update_params(params: object, *, declares_tasks: bool) -> tuple[str, dict[str, Mapping[str, Any]]]:
        """``tasks/update`` params: the task id and its ``inputResponses`` (-32021 without the extension)."""
        if not declares_tasks:
            raise missing_extension()
        return codec.decode_update_params(params)

    async def update(
        self,
        task_id: str,
        responses: Mapping[str, Mapping[str, Any]],
        caller: Caller,
        check_response: ResponseCheck,
    ) -> dict[str, Any]:
        """``tasks/update``: answers to the task's outstanding input requests, each checked against
        the request it answers (-32602, :func:`invalid_answer`; an answer to no outstanding
        request is ignored)."""
        record = await self.record(task_id, caller)
        for key, response in responses.items():
            request = record.task.input_requests.get(key)
            if request is None:
                continue
            method = str(request.get("method"))
            invalid = check_response(method, response)
            if invalid is not None:
                raise invalid_answer(key, method, invalid)
        with joined(record, "tasks/update"):  # in the task's trace, whichever replica serves it
            await self.engine.inputs.deliver(record, responses)  # the record read above: one store read
        return {}
