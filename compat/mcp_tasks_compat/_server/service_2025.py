"""2025-11-25 experimental tasks (SEP-1686), served once for both SDK majors, on wire JSON.

An adapter routes each request here and maps :class:`~mcp_tasks_compat.errors.PeerProtocolError`
to its SDK's error type; everything the peer sees (capabilities, ``execution.taskSupport``, the
refusals, the owner of a task, the poll hint, the pages of ``tasks/list``) is decided here, and
a ``tools/call`` is served here from plan to answer (:meth:`Tasks2025Service.call_tool`): the
adapter gives the work (the SDK's tool chain) and the run primitive (:meth:`.caller.Caller.launch`:
where the run lives, in which detached request context, how a notification is sent).
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Final, TypeVar, cast

import anyio

from .._engine import TaskPolicy, TaskRecord, UnknownTask, Work
from .._engine.limits import echoed_id
from .._engine.observed import note_read
from ..core import _codec_2025 as codec
from ..core._model import JsonRpcError, Task, TaskStatus
from ..dialects import DIALECT_2025_11_25
from ..errors import INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PeerProtocolError
from .caller import Caller, owner_2025, session_owned
from .handoff import PlainHandoff, SendProgress, plain_2025

__all__ = [
    "NOTIFY_TIMEOUT_S",
    "NO_SESSION",
    "REQUIRED_TOOL_CALLED_PLAINLY",
    "TASK_METHODS_2025",
    "TOOL_FORBIDS_TASKS",
    "TaskCall",
    "Tasks2025Service",
    "fails_task_2025",
    "refuse_plain_call",
    "task_not_found",
]

TASK_METHODS_2025: Final = frozenset({"tasks/get", "tasks/result", "tasks/list", "tasks/cancel"})

REQUIRED_TOOL_CALLED_PLAINLY: Final = (
    "Tool {name!r} requires task-augmented invocation (execution.taskSupport is 'required')"
)
TOOL_FORBIDS_TASKS: Final = (
    "Tool {name!r} does not support task-augmented invocation (execution.taskSupport is 'forbidden')"
)
NO_SESSION: Final = (
    "2025-11-25 tasks need an initialized, stateful session; a stateless server cannot keep one "
    "(use the 2026-07-28 Tasks extension, or a stateful server)"
)
INVALID_CALL_PARAMS: Final = "Invalid request parameters"
"""What both SDK majors answer (-32602, ``data: ""``) to a malformed ``tools/call``: a
task-augmented one is refused with the same words, before any task exists."""

T = TypeVar("T")

NOTIFY_TIMEOUT_S: Final = 2.0
"""Longest a status notification may block (a stuck peer must not hold up a run)."""


@dataclass(frozen=True, slots=True)
class TaskCall:
    """A ``tools/call`` that runs as a task: for whom, which tool, for how long."""

    owner: str | None
    tool_name: str
    ttl_ms: int | None


def fails_task_2025(result: Mapping[str, Any]) -> bool:
    """2025-11-25's result rule (the engine's :data:`~.._engine.runs.ResultRule`): a tool result
    with ``isError: true`` fails its task (its result still served from ``tasks/result``)."""
    return codec.status_for_tool_result(result) is TaskStatus.FAILED


def task_not_found(unknown: UnknownTask) -> PeerProtocolError:
    """-32602 "Task not found: <id>" (an id too long to be ours says so), the same for an unknown,
    expired or another owner's task, so ids cannot be probed."""
    detail = f" ({unknown.detail})" if unknown.detail else ""
    return PeerProtocolError(
        f"Task not found: {echoed_id(unknown.task_id)}{detail}", jsonrpc_code=INVALID_PARAMS
    )


def refuse_plain_call(tool_name: str, support: str) -> None:
    """-32601 for a plain call of a task-required tool (any handshake-era call, on either major)."""
    if support == "required":
        raise PeerProtocolError(
            REQUIRED_TOOL_CALLED_PLAINLY.format(name=echoed_id(tool_name)), jsonrpc_code=METHOD_NOT_FOUND
        )


def _malformed_call() -> PeerProtocolError:
    return PeerProtocolError(INVALID_CALL_PARAMS, jsonrpc_code=INVALID_PARAMS, data="")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _call_shape(params: object) -> tuple[str, Mapping[str, Any] | None]:
    """``tools/call`` params checked as the SDK checks them: the tool name and ``params.task``."""
    if not isinstance(params, Mapping):
        raise _malformed_call()
    fields = cast(Mapping[str, Any], params)
    name = fields.get("name")
    arguments = fields.get("arguments")
    meta = fields.get("_meta")
    task = fields.get("task")
    if not isinstance(name, str) or not (arguments is None or isinstance(arguments, Mapping)):
        raise _malformed_call()
    if not (meta is None or isinstance(meta, Mapping)):
        raise _malformed_call()
    if task is None:
        return name, None
    if not isinstance(task, Mapping):
        raise _malformed_call()
    ttl = cast(Mapping[str, Any], task).get("ttl")
    if not (ttl is None or _is_int(ttl)):
        raise _malformed_call()
    return name, cast(Mapping[str, Any], task)


class Tasks2025Service:
    """The 2025-11-25 task protocol of one server, whichever SDK major runs it."""

    def __init__(self, tasks: TaskPolicy) -> None:
        self.tasks = tasks
        self.engine = tasks.engine
        self.engine.runs.result_rules[DIALECT_2025_11_25] = fails_task_2025  # re-runs and workers too
        self.handoff = PlainHandoff(tasks)  # plain calls handed off to tasks, the task tools (when on)

    # --- what the handshake and tools/list say -----------------------------------------------------

    def offers_tasks(self) -> bool:
        """Whether any tool may run as a task (then ``initialize`` advertises ``tasks``)."""
        tasks = self.tasks
        return tasks.default_support != "forbidden" or any(s != "forbidden" for s in tasks.tools.values())

    def capability(self) -> dict[str, Any] | None:
        """The server's ``capabilities.tasks``, or ``None`` when no tool may run as a task."""
        return copy.deepcopy(dict(codec.SERVER_TASKS_CAPABILITY)) if self.offers_tasks() else None

    def tool_execution(self, tool_name: str, declared: object = None) -> dict[str, Any] | None:
        """A listed tool's ``execution`` (its ``taskSupport`` merged over what it declared), or
        ``None`` to leave the tool as it is (a forbidden tool that declared nothing)."""
        support = self.handoff.support_for(tool_name)
        if support == "forbidden" and not isinstance(declared, Mapping):
            return None
        merged = dict(cast(Mapping[str, Any], declared)) if isinstance(declared, Mapping) else {}
        merged.update(codec.encode_tool_execution(support))
        return merged

    # --- tools/call ------------------------------------------------------------------------------

    def plan_call(self, params: object, caller: Caller) -> TaskCall | None:
        """Refuse the call (``PeerProtocolError``), run it plainly (``None``), or run it as a task.

        Malformed params are refused as the SDK refuses them; a tool's ``taskSupport`` is enforced
        (-32601); a task needs a session (-32600); a negative TTL is -32602.
        """
        name, task = _call_shape(params)
        support = self.handoff.support_for(name)
        if task is not None and not self.offers_tasks():
            # No capabilities.tasks was declared, so the spec has the call processed normally,
            # its task metadata ignored (a "forbidden" tool of a server that offers tasks is -32601).
            task = None
        if task is None:
            if not self.handoff.hands_off(name, speaks_tasks=caller.speaks_tasks):
                refuse_plain_call(name, support)  # a plain call that may hand off is never refused
            return None
        if support == "forbidden":
            raise PeerProtocolError(
                TOOL_FORBIDS_TASKS.format(name=echoed_id(name)), jsonrpc_code=METHOD_NOT_FOUND
            )
        self.require_session(caller)
        ttl_ms = self.engine.effective_ttl(task.get("ttl"), requested="ttl" in task)
        return TaskCall(owner=owner_2025(caller), tool_name=name, ttl_ms=ttl_ms)

    async def call_tool(
        self,
        params: object,
        caller: Caller,
        *,
        work: Work,
        plain: Callable[[], Awaitable[T]],
        answer: Callable[[Mapping[str, Any]], T],
        progress: SendProgress | None = None,
    ) -> T:
        """A ``tools/call``, from plan to answer: refused, run plainly (``plain()``, or the plain
        hand-off's), or made a task whose run is ``work`` (the SDK's chain without ``params.task``)
        and answered ``{"task": {...}}`` (through ``answer``), readable before the answer leaves;
        statuses go out on the caller's session (:meth:`status_listener`), a run lives where
        ``caller.launch`` says; a workers' tool is queued (:meth:`follow_elsewhere`).
        """
        plan = self.plan_call(params, caller)
        if plan is None:
            handed = await plain_2025(self.handoff, params, caller, work, progress)  # None when off
            return answer(handed) if handed is not None else await plain()
        arguments = cast(Mapping[str, Any], params).get("arguments")
        create = partial(
            self.engine.create,
            dialect=DIALECT_2025_11_25,
            owner=plan.owner,
            tool_name=plan.tool_name,
            ttl_ms=plan.ttl_ms,
            arguments=cast(Mapping[str, Any], arguments) if isinstance(arguments, Mapping) else None,
        )
        if self.tasks.runs_on(plan.tool_name) == "workers":  # queued: a worker runs it
            with caller.launch(plan.tool_name) as launch:
                record = await create(run_on="workers")
                self.follow_elsewhere(record, launch.notify)
                return answer(self.created(record.task))
        with caller.launch(plan.tool_name) as launch:
            record = await create()
            record.listeners.append(self.status_listener(launch.notify))
            launch.context.run(self.engine.start, record, work, launch.group)
            return answer(self.created(record.task))

    def follow_elsewhere(
        self, record: TaskRecord, send: Callable[[Mapping[str, Any]], Awaitable[None]]
    ) -> None:
        """Statuses of a task that runs in another process (a worker) as notifications on the
        caller's session: the record is held here until it ends, so the store's changes reach
        it (the notifier; SQLite: a re-read every 0.25 s) and its listener."""
        held = self.engine.watch(record)
        notify = self.status_listener(send)

        async def listener(task: Task) -> None:
            await notify(task)
            if task.is_terminal and listener in held.listeners:  # once: the last status is sent
                held.listeners.remove(listener)
                self.engine.unwatch(held)

        held.listeners.append(listener)

    @staticmethod
    def require_session(caller: Caller) -> None:
        if caller.session_key is None:
            raise PeerProtocolError(NO_SESSION, jsonrpc_code=INVALID_REQUEST)

    @staticmethod
    def created(task: Task) -> dict[str, Any]:
        """The answer to a task-augmented ``tools/call``: ``{"task": {...}}``."""
        return codec.encode_create_task_result(task)

    @staticmethod
    def status_listener(
        send: Callable[[Mapping[str, Any]], Awaitable[None]],
    ) -> Callable[[Task], Awaitable[None]]:
        """A task's change listener sending ``notifications/tasks/status`` through ``send``
        (the notification as wire JSON), best effort and bounded in time."""

        async def notify(task: Task) -> None:
            with anyio.move_on_after(NOTIFY_TIMEOUT_S):
                await send(codec.encode_status_notification(task))

        return notify

    # --- tasks/* ---------------------------------------------------------------------------------

    async def serve(self, method: str, params: object, caller: Caller) -> dict[str, Any]:
        """Answer one of :data:`TASK_METHODS_2025` as wire JSON."""
        self.require_session(caller)
        if method == "tasks/list":
            return await self.list(params, caller)
        if method == "tasks/get":
            return await self.get(params, caller)
        if method == "tasks/cancel":
            return await self.cancel(params, caller)
        if method == "tasks/result":
            return await self.result(params, caller)
        raise PeerProtocolError(f"Method not found: {echoed_id(method)}", jsonrpc_code=METHOD_NOT_FOUND)

    async def _record(self, params: object, caller: Caller) -> TaskRecord:
        """The caller's 2025-11-25 task named by ``params.taskId``, else -32602."""
        task_id = codec.decode_task_id_params(params)
        by_id = self.tasks.unauthenticated_2025_scope == "task_id" and caller.principal is None
        try:
            record = await self.engine.lookup(
                task_id, owner_2025(caller), also_of=session_owned if by_id else None
            )
        except UnknownTask as unknown:
            raise task_not_found(unknown) from None
        if record.dialect != DIALECT_2025_11_25:
            raise task_not_found(UnknownTask(task_id))
        return record

    async def get(self, params: object, caller: Caller) -> dict[str, Any]:
        record = await self._record(params, caller)
        note_read(record, poll=True)  # a flag check unless metering
        return codec.encode_task(self.engine.shown(record.task))

    async def cancel(self, params: object, caller: Caller) -> dict[str, Any]:
        record = await self._record(params, caller)
        return codec.encode_task(await self.engine.cancel_record(record, strict=True))

    async def list(self, params: object, caller: Caller) -> dict[str, Any]:
        cursor = cast(Mapping[str, Any], params).get("cursor") if isinstance(params, Mapping) else None
        page, next_cursor = await self.engine.list_page(owner_2025(caller), cursor)
        return codec.encode_list_tasks_result(page, next_cursor=next_cursor)

    async def result(self, params: object, caller: Caller) -> dict[str, Any]:
        """Block until the task ends (any number of callers may wait), relaying its input requests
        to the client on this request's stream meanwhile; a task failed with a JSON-RPC error
        answers with that error."""
        record = await self._record(params, caller)
        task_id = record.task.task_id

        async def send(key: str, request: Mapping[str, Any]) -> Mapping[str, Any]:
            del key  # 2025-11-25 matches the answer by JSON-RPC id
            request_params = dict(cast(Mapping[str, Any], request.get("params") or {}))
            meta = dict(cast(Mapping[str, Any], request_params.get("_meta") or {}))
            meta.update(codec.related_task_meta(task_id))
            request_params["_meta"] = meta
            return await caller.relay({"method": request["method"], "params": request_params})

        task = await self.engine.inputs.relay_until_terminal(record, send)
        note_read(record, poll=False)
        if task.status is TaskStatus.FAILED and task.result is None and task.error is not None:
            error: JsonRpcError = task.error
            raise PeerProtocolError(error.message, jsonrpc_code=error.code, data=error.data)
        return codec.encode_task_payload(task)
