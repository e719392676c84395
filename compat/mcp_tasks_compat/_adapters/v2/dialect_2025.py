"""2025-11-25 experimental tasks served by an mcp 2.x server, through ``Server.middleware``.

The 2.x runner sieves every handler result on a handshake-era connection through the 2025
surface, which turns a nested ``CreateTaskResult`` into -32603. It trusts a middleware that
answers without calling ``call_next`` (the probed private seam ``v2.server_middleware``), so this middleware:

* answers ``tools/call`` with ``params.task`` itself (creates the task, returns ``{"task": ...}``)
  and runs the rest of the chain, without ``params.task``, as the task's work;
* serves ``tasks/get|result|list|cancel`` (not spec methods on 2.x; -32601 stays the answer on
  2026-07-28 for ``tasks/result`` and ``tasks/list`` because nothing else serves them);
  ``tasks/result`` relays the task's input requests (elicitation, sampling, roots from the tool
  body) on its own stream, tagged with the related-task ``_meta``, and their answers back;
* adds ``capabilities.tasks`` to the ``initialize`` result and ``execution.taskSupport`` to
  ``tools/list`` on those connections, by post-processing ``call_next``'s output;
* enforces task support (-32601 for a required tool without a task or a forbidden one with it).

It does so on every handshake-era connection, not only at 2025-11-25: mcp 1.23.0 clients use
this dialect while negotiating 2025-06-18 (their latest version), and a client that does not
know tasks never sends ``params.task`` or ``tasks/*``.

This relies on ``ServerRunner`` composing ``Server.middleware`` around the handler chain and
trusting short-circuit output: the probed private feature ``v2.server_middleware``.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any, Final, cast

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, CallToolRequestParams
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ValidationError, model_serializer

from ..._engine import InputRefused
from ..._engine.limits import echoed_id, list_page
from ...core import codec_2025
from ...core.model import JsonRpcError, Task, TaskStatus
from ...dialects import DIALECT_2025_11_25
from ...errors import PeerProtocolError
from .runtime import TasksRuntime, answering_store_errors, mcp_error, send_input, tool_work, with_request

__all__ = ["Dialect2025Middleware", "require_task_or_refuse"]

TASK_METHODS: Final = frozenset({"tasks/get", "tasks/result", "tasks/list", "tasks/cancel"})
LIST_PAGE_SIZE: Final = 100


class _RawNotification(BaseModel):
    """A notification sent exactly as built: the session dumps with ``exclude_none``, which would
    drop ``"ttl": null`` (required by the 2025-11-25 ``Task``); a plain serializer keeps it."""

    method: str
    params: dict[str, Any]

    @model_serializer
    def _serialize(self) -> dict[str, Any]:
        return {"method": self.method, "params": self.params}


def _as_dict(result: HandlerResult) -> dict[str, Any]:
    if result is None:
        return {}
    if isinstance(result, BaseModel):
        return result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dict(result)


def require_task_or_refuse(tool_name: str, support: str, *, with_task: bool) -> None:
    """2025-11-25 enforcement of ``execution.taskSupport``: -32601 when the call does not fit."""
    tool_name = echoed_id(tool_name)  # a hostile name is echoed as a short prefix only
    if support == "required" and not with_task:
        raise MCPError(
            code=METHOD_NOT_FOUND,
            message=f"Tool {tool_name!r} requires task-augmented invocation "
            "(execution.taskSupport is 'required')",
        )
    if support == "forbidden" and with_task:
        raise MCPError(
            code=METHOD_NOT_FOUND,
            message=f"Tool {tool_name!r} does not support task-augmented invocation "
            "(execution.taskSupport is 'forbidden')",
        )


def _require_session(ctx: ServerRequestContext[Any, Any]) -> None:
    """2025-11-25 tasks belong to a session: -32600 without one (before ``initialize``, or on a
    stateless HTTP server, where every request is a connection of its own)."""
    if ctx.session.client_params is None:
        raise MCPError(
            code=INVALID_REQUEST,
            message="task-augmented requests need an initialized session; a stateless server cannot keep "
            "a 2025-11-25 task (use the 2026-07-28 Tasks extension, or a stateful server)",
        )


def _relay_on(
    ctx: ServerRequestContext[Any, Any], task_id: str
) -> Callable[[str, Mapping[str, Any]], Awaitable[Mapping[str, Any]]]:
    """Send a task's input request on this ``tasks/result`` stream, tagged with the task."""

    async def send(key: str, request: Mapping[str, Any]) -> Mapping[str, Any]:
        del key  # 2025-11-25 matches the answer by JSON-RPC id
        params = dict(cast(Mapping[str, Any], request.get("params") or {}))
        meta = dict(cast(Mapping[str, Any], params.get("_meta") or {}))
        meta.update(codec_2025.related_task_meta(task_id))
        params["_meta"] = meta
        try:
            return await send_input(
                ctx.session, {"method": request["method"], "params": params}, ctx.request_id
            )
        except MCPError as exc:
            raise InputRefused(JsonRpcError(exc.error.code, exc.error.message, exc.error.data)) from exc

    return send


class Dialect2025Middleware:
    """The ``Server.middleware`` entry that speaks 2025-11-25 tasks on handshake-era connections."""

    def __init__(self, runtime: TasksRuntime) -> None:
        self._runtime = runtime

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        with answering_store_errors():
            return await self._dispatch(ctx, call_next)

    async def _dispatch(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.request_id is None:  # a notification
            return await call_next(ctx)
        method = ctx.method
        if method == "tools/call":
            # The tool body may ask for input; it needs to know its request (plain or task).
            return await with_request(ctx, lambda: self._any_tools_call(ctx, call_next))
        if method == "initialize":
            return self._advertise(await call_next(ctx))
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return await call_next(ctx)
        if method == "tools/list":
            return self._annotate_tools(await call_next(ctx))
        if method in TASK_METHODS:
            _require_session(ctx)
            try:
                return await self._serve_tasks_method(method, ctx)
            except PeerProtocolError as exc:
                raise mcp_error(exc) from None
        return await call_next(ctx)

    async def _any_tools_call(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return await call_next(ctx)
        return await self._tools_call(ctx, call_next)

    # --- what the handshake and tools/list say ---------------------------------------------------

    def _any_task_tool(self) -> bool:
        tasks = self._runtime.tasks
        return tasks.default_support != "forbidden" or any(s != "forbidden" for s in tasks.tools.values())

    def _advertise(self, result: HandlerResult) -> HandlerResult:
        wire = _as_dict(result)
        if wire.get("protocolVersion") not in HANDSHAKE_PROTOCOL_VERSIONS or not self._any_task_tool():
            return result
        capabilities = dict(cast(Mapping[str, Any], wire.get("capabilities") or {}))
        capabilities["tasks"] = copy.deepcopy(dict(codec_2025.SERVER_TASKS_CAPABILITY))
        wire["capabilities"] = capabilities
        return wire

    def _annotate_tools(self, result: HandlerResult) -> HandlerResult:
        wire = _as_dict(result)
        tools = wire.get("tools")
        if not isinstance(tools, list):
            return result
        annotated: list[Any] = []
        for tool in cast(list[Any], tools):
            if isinstance(tool, Mapping) and isinstance(
                name := cast(Mapping[str, Any], tool).get("name"), str
            ):
                entry = dict(cast(Mapping[str, Any], tool))
                support = self._runtime.tasks.support_for(name)
                execution = entry.get("execution")
                if support != "forbidden" or isinstance(execution, Mapping):
                    merged = (
                        dict(cast(Mapping[str, Any], execution)) if isinstance(execution, Mapping) else {}
                    )
                    merged.update(codec_2025.encode_tool_execution(support))
                    entry["execution"] = merged
                annotated.append(entry)
            else:
                annotated.append(tool)
        wire["tools"] = annotated
        return wire

    # --- tools/call ------------------------------------------------------------------------------

    async def _tools_call(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        params = ctx.params
        name = params.get("name") if isinstance(params, Mapping) else None
        if params is None or not isinstance(name, str):
            return await call_next(ctx)  # the SDK's own validation answers
        support = self._runtime.tasks.support_for(name)
        raw_task = params.get("task")
        with_task = raw_task is not None
        require_task_or_refuse(name, support, with_task=with_task)
        if not with_task:
            return await call_next(ctx)
        _check_call_params(params)
        _require_session(ctx)
        try:
            requested = codec_2025.decode_task_params(params)
        except PeerProtocolError as exc:
            raise mcp_error(exc) from None
        assert requested is not None
        asked_ttl = isinstance(raw_task, Mapping) and "ttl" in raw_task
        engine = self._runtime.tasks.engine
        try:
            ttl_ms = engine.effective_ttl(requested["ttl"], requested=asked_ttl)
        except PeerProtocolError as exc:
            raise mcp_error(exc) from None
        plain = replace(ctx, params={key: value for key, value in params.items() if key != "task"})
        task = await self._runtime.start_task(
            ctx,
            dialect=DIALECT_2025_11_25,
            owner=self._runtime.owner_2025(ctx),
            tool_name=name,
            ttl_ms=ttl_ms,
            work=tool_work(call_next),
            run_as=plain,
            listener=self._status_listener,
        )
        return codec_2025.encode_create_task_result(task)

    @staticmethod
    def _status_listener(session: ServerSession) -> Callable[[Task], Awaitable[None]]:
        """``notifications/tasks/status`` on the connection's standalone channel (best effort)."""

        async def notify(task: Task) -> None:
            wire = codec_2025.encode_status_notification(task)
            notification = _RawNotification(method=wire["method"], params=wire["params"])
            await session.send_notification(cast(Any, notification))

        return notify

    # --- tasks/* ---------------------------------------------------------------------------------

    async def _serve_tasks_method(self, method: str, ctx: ServerRequestContext[Any, Any]) -> HandlerResult:
        runtime = self._runtime
        engine = runtime.tasks.engine
        owner = runtime.owner_2025(ctx)
        if method == "tasks/list":
            return await self._list(owner, ctx.params)
        task_id = codec_2025.decode_task_id_params(ctx.params)
        record = await runtime.lookup(task_id, owner, DIALECT_2025_11_25)
        if method == "tasks/get":
            return codec_2025.encode_task(runtime.with_poll_hint(record.task))
        if method == "tasks/cancel":
            return codec_2025.encode_task(await engine.cancel(task_id, owner, strict=True))
        # tasks/result blocks until the task is terminal (any number of callers may wait) and
        # carries the task's input requests to the client meanwhile.
        task = await engine.inputs.relay_until_terminal(record, _relay_on(ctx, task_id))
        if task.status is TaskStatus.FAILED and task.result is None and task.error is not None:
            raise mcp_error(task.error)
        return codec_2025.encode_task_payload(task)

    async def _list(self, owner: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
        cursor = params.get("cursor") if params is not None else None
        try:
            page, next_cursor = list_page(
                await self._runtime.tasks.engine.owned_by(owner), cursor, size=LIST_PAGE_SIZE
            )
        except PeerProtocolError as exc:
            raise mcp_error(exc) from None
        return codec_2025.encode_list_tasks_result(
            [self._runtime.with_poll_hint(task) for task in page], next_cursor=next_cursor
        )


def _check_call_params(params: Mapping[str, Any]) -> None:
    """A task-augmented ``tools/call`` is validated as a plain one would be, before any task exists.

    Otherwise malformed ``arguments`` would create a task that only fails on ``tasks/result``,
    while the same call without ``params.task`` is refused at once (-32602) by the SDK.
    """
    try:
        CallToolRequestParams.model_validate({key: value for key, value in params.items() if key != "task"})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "params"
        raise MCPError(
            code=INVALID_PARAMS, message=f"tools/call: invalid params.{where}: {first['msg']}"
        ) from None
