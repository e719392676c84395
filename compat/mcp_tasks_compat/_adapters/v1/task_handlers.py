"""mcp 1.x servers: routing the SDK's typed requests to the 2025-11-25 task service.

``tools/list`` and ``tools/call`` are wrapped (``execution.taskSupport`` declared and enforced by
:class:`~mcp_tasks_compat._server.Tasks2025Service`; a task-augmented call runs the original
handler in the background, in a copy of the request's context that keeps nothing of the
exchange); ``tasks/get|result|list|cancel`` are answered by the service. This module only turns
typed requests into wire params, presents the request as a :class:`~mcp_tasks_compat._server.Caller`,
starts a run in its session's task group and maps the service's errors to ``McpError``. What one
session owns (:class:`SessionTasks`) is here too: the handlers read it, :mod:`.server`'s ``run``
makes it.
"""

from __future__ import annotations

import contextvars
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
from ..._server import TaskCall, Tasks2025Service, principal_id
from ...core.model import JsonRpcError
from ...dialects import DIALECT_2025_11_25
from ...errors import INTERNAL_ERROR, PeerProtocolError, TaskStoreError
from ..shared import DetachedHttpRequest, compact_headers
from .messages import WireNotification, WireResult, jsonrpc_error, send_input

__all__ = ["RequestHandler", "SessionTasks", "TaskHandlers", "current_session"]

RequestHandler = Callable[[Any], Awaitable[types.ServerResult]]


@dataclass(eq=False)
class SessionTasks:
    """What one session (one ``Server.run``) owns: its runs, its waiters, its key."""

    group: anyio.abc.TaskGroup
    stateless: bool
    key: str = field(default_factory=lambda: f"session:{secrets.token_urlsafe(16)}")
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
    return principal_id(token.client_id, issuer, getattr(token, "subject", None))


@dataclass(frozen=True)
class _Caller:
    """This request as the service sees it (:class:`~mcp_tasks_compat._server.Caller`)."""

    principal: str | None
    session_key: str | None
    sdk_session: ServerSession
    request_id: types.RequestId

    async def relay(self, request: Mapping[str, Any]) -> Mapping[str, Any]:
        try:
            return await send_input(self.sdk_session, request, self.request_id)
        except McpError as exc:
            error = exc.error
            raise InputRefused(JsonRpcError(error.code, error.message, error.data)) from exc


def _params(req: Any) -> dict[str, Any]:
    """A typed request's params as the wire sent them (fields the client left out stay out)."""
    params = getattr(req, "params", None)
    if params is None:
        return {}
    return params.model_dump(by_alias=True, mode="json", exclude_unset=True)


class TaskHandlers:
    """The request handlers: ``tools/list`` and ``tools/call`` wrapped, ``tasks/*`` routed to the service."""

    detach_runs: bool = True
    """Internal switch, for the benchmarks only: ``False`` lets a run keep its request's whole
    context (the HTTP request, the stream callbacks), as before runs were detached."""

    def __init__(self, tasks: TaskPolicy) -> None:
        self.tasks = tasks
        self.engine = tasks.engine
        self.service = Tasks2025Service(tasks)

    # --- who is asking ----------------------------------------------------------------------------

    def _session(self) -> SessionTasks:
        session = current_session.get()
        if session is None:
            raise jsonrpc_error(
                INTERNAL_ERROR, "mcp-tasks-compat: this request did not arrive through the server's run()"
            )
        return session

    def _caller(self) -> _Caller:
        session = self._session()
        context = request_ctx.get()
        return _Caller(
            principal=_authenticated_principal(context.request),
            session_key=None if session.stateless else session.key,
            sdk_session=context.session,
            request_id=context.request_id,
        )

    # --- tools ------------------------------------------------------------------------------------

    def make_list_tools(self, original: RequestHandler) -> RequestHandler:
        async def list_tools(req: types.ListToolsRequest | None) -> types.ServerResult:
            result = await original(req)
            if not isinstance(result.root, types.ListToolsResult):
                return result
            tools: list[types.Tool] = []
            for tool in result.root.tools:
                declared = None if tool.execution is None else tool.execution.model_dump(exclude_none=True)
                execution = self.service.tool_execution(tool.name, declared)
                if execution is not None:
                    tool = tool.model_copy(
                        update={"execution": types.ToolExecution.model_validate(execution)}
                    )
                tools.append(tool)
            return types.ServerResult(result.root.model_copy(update={"tools": tools}))

        return list_tools

    def make_call_tool(self, original: RequestHandler) -> RequestHandler:
        async def call_tool(req: types.CallToolRequest) -> types.ServerResult:
            with _service_errors():
                plan = self.service.plan_call(_params(req), self._caller())
            if plan is None:
                return await original(req)
            return await self._start_task(original, req, plan)

        return call_tool

    async def _start_task(
        self, original: RequestHandler, req: types.CallToolRequest, plan: TaskCall
    ) -> types.ServerResult:
        session = self._session()
        context = request_ctx.get()
        with _service_errors():  # the owner's active-task limit reached
            record = await self.engine.create(
                dialect=DIALECT_2025_11_25, owner=plan.owner, tool_name=plan.tool_name, ttl_ms=plan.ttl_ms
            )
        sdk_session = context.session

        async def send(wire: Mapping[str, Any]) -> None:
            if not session.closed.is_set():
                await sdk_session.send_notification(WireNotification.of(wire))

        record.listeners.append(self.service.status_listener(send))
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
        return WireResult.of(self.service.created(record.task))

    # --- tasks/* ----------------------------------------------------------------------------------

    async def _serve(self, method: str, req: Any) -> types.ServerResult:
        with _service_errors():
            return WireResult.of(await self.service.serve(method, _params(req), self._caller()))

    async def get_task(self, req: types.GetTaskRequest) -> types.ServerResult:
        return await self._serve("tasks/get", req)

    async def list_tasks(self, req: types.ListTasksRequest) -> types.ServerResult:
        return await self._serve("tasks/list", req)

    async def cancel_task(self, req: types.CancelTaskRequest) -> types.ServerResult:
        return await self._serve("tasks/cancel", req)

    async def get_task_result(self, req: types.GetTaskPayloadRequest) -> types.ServerResult:
        """``tasks/result``, stopped without an answer when the peer goes away."""
        session = self._session()
        waiter = anyio.CancelScope()
        session.waiters.add(waiter)
        if session.closed.is_set():
            waiter.cancel()
        try:
            with waiter:
                return await self._serve("tasks/result", req)
        finally:
            session.waiters.discard(waiter)
        _abandon_request()  # reached only when the waiter was cancelled: the peer is gone


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


@contextmanager
def _service_errors() -> Generator[None]:
    """The service's refusals (and a store that cannot answer) as JSON-RPC errors; the session lives on."""
    try:
        yield
    except PeerProtocolError as exc:
        raise jsonrpc_error(exc.jsonrpc_code, exc.message, exc.data) from None
    except TaskStoreError as exc:
        raise jsonrpc_error(INTERNAL_ERROR, exc.message) from None
