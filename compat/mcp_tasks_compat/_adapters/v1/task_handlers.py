"""mcp 1.x servers: the request handlers our installation puts on a low-level ``Server``.

``tools/list`` and ``tools/call`` are wrapped (``execution.taskSupport`` declared and enforced;
a task-augmented call runs the original handler in the background, in a copy of the request's
context that keeps nothing of the exchange); ``tasks/get|result|list|cancel`` are served on the
engine. ``tasks/result`` also relays the task's input requests (``elicit`` / ``create_message``
/ ``list_roots`` from the tool body) to the client on its own stream, tagged with the
related-task ``_meta``, and the answers back. What one session owns (:class:`SessionTasks`) is
here too: the handlers read it, :mod:`.server`'s ``run`` makes it.
"""

from __future__ import annotations

import contextvars
import json
import secrets
from collections.abc import Awaitable, Callable, Generator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, NoReturn, cast

import anyio
import anyio.abc
import mcp.types as types
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.lowlevel.server import request_ctx
from mcp.server.session import ServerSession
from mcp.shared.context import RequestContext
from mcp.shared.exceptions import McpError

from ..._engine import InputRefused, TaskPolicy, TaskRecord, ToolCallFailure
from ..._engine.limits import echoed_id, list_page
from ...core import codec_2025 as codec
from ...core.model import JsonRpcError, Task, TaskStatus
from ...dialects import DIALECT_2025_11_25
from ...errors import INTERNAL_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, PeerProtocolError
from ..shared import DetachedHttpRequest, compact_headers
from .messages import WireNotification, WireResult, jsonrpc_error, send_input

__all__ = ["NOTIFY_TIMEOUT_S", "RequestHandler", "SessionTasks", "TaskHandlers", "current_session"]

NOTIFY_TIMEOUT_S = 2.0
"""Longest a status notification may block (a stuck peer must not hold up a run)."""

RequestHandler = Callable[[Any], Awaitable[types.ServerResult]]


@dataclass(eq=False)
class SessionTasks:
    """What one session (one ``Server.run``) owns: its runs, its waiters, its principal."""

    group: anyio.abc.TaskGroup
    stateless: bool
    principal: str = field(default_factory=lambda: f"session:{secrets.token_hex(16)}")
    closed: anyio.Event = field(default_factory=anyio.Event)
    runs: dict[str, TaskRecord] = field(default_factory=lambda: dict[str, TaskRecord]())
    waiters: set[anyio.CancelScope] = field(default_factory=lambda: set[anyio.CancelScope]())

    def transport_closed(self) -> None:
        """The peer is gone: no answer can reach it, so blocked ``tasks/result`` calls stop now."""
        self.closed.set()
        for scope in self.waiters:
            scope.cancel()


current_session: contextvars.ContextVar[SessionTasks | None] = contextvars.ContextVar(
    "mcp_tasks_compat_v1_session", default=None
)


def _abandon_request() -> NoReturn:
    """End a handler without answering: the SDK drops a cancelled request silently.

    Used once the peer is gone: on mcp < 1.27 a late answer to a closed transport raises into
    ``Server.run`` and kills it, and an unanswered handler keeps ``Server.run`` waiting.
    """
    raise anyio.get_cancelled_exc_class()()


def _authenticated_principal(request: object) -> str | None:
    """The authenticated user of an HTTP request (streamable HTTP with auth), if any.

    Read from the request itself rather than ``get_access_token()``: the session's handlers run
    in a context copied from the session's *first* HTTP request.
    """
    scope: object = getattr(request, "scope", None)
    user = cast("dict[str, Any]", scope).get("user") if isinstance(scope, dict) else None
    if not isinstance(user, AuthenticatedUser):
        return None
    token = user.access_token
    claims: object = getattr(token, "claims", None)  # mcp >= 1.27: subject and claims
    issuer = cast("dict[str, Any]", claims).get("iss") if isinstance(claims, dict) else None
    subject: object = getattr(token, "subject", None)
    return "user:" + json.dumps([token.client_id, issuer, subject], default=str)


class TaskHandlers:
    """The request handlers: ``tools/list`` and ``tools/call`` wrapped, ``tasks/*`` served on the engine."""

    detach_runs: bool = True
    """Internal switch, for the benchmarks only: ``False`` lets a run keep its request's whole
    context (the HTTP request, the stream callbacks), as before runs were detached."""

    def __init__(self, tasks: TaskPolicy) -> None:
        self.tasks = tasks
        self.engine = tasks.engine

    # --- who is asking ----------------------------------------------------------------------------

    def _session(self) -> SessionTasks:
        session = current_session.get()
        if session is None:
            raise jsonrpc_error(
                INTERNAL_ERROR, "mcp-tasks-compat: this request did not arrive through the server's run()"
            )
        return session

    def _caller(self, session: SessionTasks) -> str:
        """The principal tasks are scoped to: the authenticated user, else the session."""
        return _authenticated_principal(request_ctx.get().request) or session.principal

    # --- tools ------------------------------------------------------------------------------------

    def make_list_tools(self, original: RequestHandler) -> RequestHandler:
        async def list_tools(req: types.ListToolsRequest | None) -> types.ServerResult:
            result = await original(req)
            if not isinstance(result.root, types.ListToolsResult):
                return result
            tools = [
                tool.model_copy(
                    update={"execution": types.ToolExecution(taskSupport=self.tasks.support_for(tool.name))}
                )
                for tool in result.root.tools
            ]
            return types.ServerResult(result.root.model_copy(update={"tools": tools}))

        return list_tools

    def make_call_tool(self, original: RequestHandler) -> RequestHandler:
        async def call_tool(req: types.CallToolRequest) -> types.ServerResult:
            name = req.params.name
            support = self.tasks.support_for(name)
            metadata = req.params.task
            if metadata is None:
                if support == "required":
                    raise jsonrpc_error(
                        METHOD_NOT_FOUND,
                        f"Tool '{echoed_id(name)}' requires task-augmented invocation (params.task)",
                    )
                return await original(req)
            if support == "forbidden":
                raise jsonrpc_error(
                    METHOD_NOT_FOUND, f"Tool '{echoed_id(name)}' does not support task-augmented invocation"
                )
            return await self._start_task(original, req, metadata.ttl)

        return call_tool

    async def _start_task(
        self, original: RequestHandler, req: types.CallToolRequest, requested_ttl: int | None
    ) -> types.ServerResult:
        session = self._session()
        if session.stateless:
            raise jsonrpc_error(
                INVALID_REQUEST,
                "task-augmented tools/call needs a stateful session; this server runs stateless, "
                "so nothing could outlive the request",
            )
        context = request_ctx.get()
        with _peer_errors():  # a negative TTL, or the owner's active-task limit reached
            record = await self.engine.create(
                dialect=DIALECT_2025_11_25,
                owner=self._caller(session),
                tool_name=req.params.name,
                ttl_ms=self.engine.effective_ttl(requested_ttl, requested=True),
            )
        record.listeners.append(_status_notifier(context.session, session))
        task_id = record.task.task_id
        session.runs[task_id] = record

        async def work() -> dict[str, Any]:
            try:
                return await _call_original(original, req)
            finally:
                del session.runs[task_id]  # only live runs are kept, for the session's end

        # The run must not inherit this request's context (the SDK's request context, and through
        # it the HTTP request and the stream callbacks of an answer about to be sent): it runs in
        # a copy whose request context is the detached one.
        run_context = contextvars.copy_context()
        run_context.run(request_ctx.set, _detached_request_context(context) if self.detach_runs else context)
        run_context.run(self.engine.start, record, work, session.group)
        return WireResult.of(codec.encode_create_task_result(record.task))

    # --- tasks/* ----------------------------------------------------------------------------------

    async def get_task(self, req: types.GetTaskRequest) -> types.ServerResult:
        session = self._session()
        with _peer_errors():
            task = await self.engine.get(req.params.taskId, self._caller(session))
        return WireResult.of(codec.encode_task(task))

    async def get_task_result(self, req: types.GetTaskPayloadRequest) -> types.ServerResult:
        session = self._session()
        task_id, owner = req.params.taskId, self._caller(session)
        with _peer_errors():
            record = await self.engine.lookup(task_id, owner)
        waiter = anyio.CancelScope()
        session.waiters.add(waiter)
        if session.closed.is_set():
            waiter.cancel()
        context = request_ctx.get()
        send = _relay_on(context.session, context.request_id, task_id)
        try:
            with waiter:
                await self.engine.inputs.relay_until_terminal(record, send)
        finally:
            session.waiters.discard(waiter)
        if waiter.cancelled_caught:
            _abandon_request()
        task = record.task
        if task.status is TaskStatus.FAILED and task.result is None and task.error is not None:
            raise jsonrpc_error(task.error.code, task.error.message, task.error.data)
        return WireResult.of(codec.encode_task_payload(task))

    async def list_tasks(self, req: types.ListTasksRequest) -> types.ServerResult:
        session = self._session()
        cursor = req.params.cursor if req.params is not None else None
        with _peer_errors():  # a cursor this server never issued is -32602, as on mcp 2.x
            page, next_cursor = list_page(await self.engine.owned_by(self._caller(session)), cursor)
        return WireResult.of(codec.encode_list_tasks_result(page, next_cursor=next_cursor))

    async def cancel_task(self, req: types.CancelTaskRequest) -> types.ServerResult:
        session = self._session()
        with _peer_errors():
            task = await self.engine.cancel(req.params.taskId, self._caller(session), strict=True)
        return WireResult.of(codec.encode_task(task))


def _detached_request_context(context: RequestContext[Any, Any, Any]) -> RequestContext[Any, Any, Any]:
    """The request context a task's tool sees (``ctx`` of a FastMCP tool): the request's, minus
    what ends with the exchange (the HTTP request object, the SSE stream-close callbacks).

    Kept: request id and ``_meta`` (progress token), the session (the tool's back channel), the
    lifespan value, the SDK's ``experimental`` data, and the HTTP headers.
    """
    headers = compact_headers(getattr(context.request, "headers", None))
    return replace(
        context,
        request=None if headers is None else DetachedHttpRequest(headers),
        close_sse_stream=None,
        close_standalone_sse_stream=None,
    )


async def _call_original(original: RequestHandler, req: types.CallToolRequest) -> dict[str, Any]:
    """The work of a task: the tool's own handler; its CallToolResult as wire JSON."""
    try:
        result = await original(req)
    except McpError as exc:
        error = exc.error
        raise ToolCallFailure(JsonRpcError(error.code, error.message, error.data)) from exc
    if not isinstance(result.root, types.CallToolResult):
        kind = type(result.root).__name__
        raise ToolCallFailure(
            JsonRpcError(INTERNAL_ERROR, f"the tool handler answered {kind}, not CallToolResult")
        )
    return result.root.model_dump(by_alias=True, mode="json", exclude_none=True)


def _relay_on(
    sdk_session: ServerSession, request_id: types.RequestId, task_id: str
) -> Callable[[str, Mapping[str, Any]], Awaitable[Mapping[str, Any]]]:
    """Send a task's input request on the ``tasks/result`` stream ``request_id``, tagged with the task."""

    async def send(key: str, request: Mapping[str, Any]) -> Mapping[str, Any]:
        del key  # 2025-11-25 matches the answer by JSON-RPC id
        params = dict(cast("Mapping[str, Any]", request.get("params") or {}))
        meta = dict(cast("Mapping[str, Any]", params.get("_meta") or {}))
        meta.update(codec.related_task_meta(task_id))
        params["_meta"] = meta
        try:
            return await send_input(sdk_session, {"method": request["method"], "params": params}, request_id)
        except McpError as exc:
            error = exc.error
            raise InputRefused(JsonRpcError(error.code, error.message, error.data)) from exc

    return send


def _status_notifier(sdk_session: ServerSession, session: SessionTasks) -> Callable[[Task], Awaitable[None]]:
    """Best-effort ``notifications/tasks/status`` to the session that created the task."""

    async def notify(task: Task) -> None:
        if session.closed.is_set():
            return
        with anyio.move_on_after(NOTIFY_TIMEOUT_S):
            await sdk_session.send_notification(WireNotification.of(codec.encode_status_notification(task)))

    return notify


@contextmanager
def _peer_errors() -> Generator[None]:
    """Answer the engine's ``PeerProtocolError`` (-32602 unknown task, terminal cancel) as JSON-RPC."""
    try:
        yield
    except PeerProtocolError as exc:
        raise jsonrpc_error(exc.jsonrpc_code, exc.message, exc.data) from None
