"""mcp 1.x servers: task-capable tools in the 2025-11-25 dialect, run by our engine.

The SDK's own runtime (``enable_tasks`` / ``run_task`` / ``TaskSupport`` / its in-memory store)
is never used: its crash and hang paths (docs/server.md lists them) cannot be patched from outside.
Instead :func:`install` wraps a few things *on the user's server instance* (never the SDK
classes):

* ``run``, entered once per session on every transport (stdio, in-memory, one per streamable HTTP
  session). Around the SDK's own ``run`` it keeps a per-session task group for the runs (never one
  shared across sessions), the one TTL sweeper, the ``capabilities.tasks`` of ``initialize``, and a
  watch on the read stream so a disconnect releases blocked ``tasks/result`` waiters at once.
  When the session ends, its runs are cancelled with a status message that says so;
* the ``tools/list`` and ``tools/call`` request handlers (``execution.taskSupport`` declared and
  enforced; task-augmented calls run the original handler in the background);
* the ``tasks/get|result|list|cancel`` request handlers. ``tasks/result`` also relays the
  task's input requests (``elicit`` / ``create_message`` / ``list_roots`` from the tool body) to
  the client on its own stream, tagged with the related-task ``_meta``, and the answers back.

The public input functions of :mod:`..server` come here for the 1.x pieces: the ordinary
server-to-client request of a plain call (:func:`plain_input`), the client's declared
capabilities (:func:`undeclared_capability`) and the SDK's result types (:func:`input_result`).

Our results are sent as the exact wire JSON the codec builds (``_WireResult``): the SDK serializes
with ``exclude_none``, which would drop the required ``"ttl": null`` of an unlimited task.
"""

from __future__ import annotations

import contextvars
import json
import secrets
from collections.abc import Awaitable, Callable, Generator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, NoReturn, cast
from weakref import WeakKeyDictionary

import anyio
import anyio.abc
import mcp.types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.fastmcp import FastMCP
from mcp.server.lowlevel.server import Server, request_ctx
from mcp.server.models import InitializationOptions
from mcp.server.session import ServerSession
from mcp.shared.context import RequestContext
from mcp.shared.exceptions import McpError
from mcp.shared.message import ServerMessageMetadata, SessionMessage
from pydantic import ConfigDict, PrivateAttr, ValidationError

from ..._detect import refuse_unsupported, sdk_info
from ..._engine import InputRefused, TaskPolicy, TaskRecord, ToolCallFailure
from ..._engine.limits import echoed_id, list_page
from ...core import codec_2025 as codec
from ...core.model import JsonRpcError, Task, TaskStatus
from ...dialects import DIALECT_2025_11_25
from ...errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PeerProtocolError,
    UnsupportedSdkError,
)

__all__ = [
    "input_result",
    "install",
    "lowlevel_server_of",
    "mcpserver_kwargs",
    "plain_input",
    "undeclared_capability",
]

SESSION_ENDED = "the client session ended"
"""Status message of a task whose session ended while it ran."""

NOTIFY_TIMEOUT_S = 2.0
"""Longest a status notification may block (a stuck peer must not hold up a run)."""

RequestHandler = Callable[[Any], Awaitable[types.ServerResult]]
ReadStream = MemoryObjectReceiveStream[SessionMessage | Exception]
WriteStream = MemoryObjectSendStream[SessionMessage]


class _WireResult(types.ServerResult):
    """A result whose wire JSON is ours, sent unchanged (``"ttl": null`` survives)."""

    _wire: dict[str, Any] = PrivateAttr(default_factory=lambda: dict[str, Any]())

    @classmethod
    def of(cls, wire: Mapping[str, Any]) -> _WireResult:
        result = cls(types.EmptyResult())
        result._wire = dict(wire)
        return result

    def model_dump(self, **_: Any) -> dict[str, Any]:
        return dict(self._wire)


class _WireNotification(types.ServerNotification):
    """A notification whose wire JSON is ours, sent unchanged."""

    _wire: dict[str, Any] = PrivateAttr(default_factory=lambda: dict[str, Any]())

    @classmethod
    def of(cls, wire: Mapping[str, Any]) -> _WireNotification:
        notification = cls(types.TaskStatusNotification.model_validate(wire))
        notification._wire = dict(wire)
        return notification

    def model_dump(self, **_: Any) -> dict[str, Any]:
        return dict(self._wire)


class _WireRequest(types.ServerRequest):
    """A server-to-client request whose wire JSON is ours (params and ``_meta`` exactly as built)."""

    _wire: dict[str, Any] = PrivateAttr(default_factory=lambda: dict[str, Any]())

    @classmethod
    def of(cls, wire: Mapping[str, Any]) -> _WireRequest:
        request = cls(types.PingRequest(method="ping"))
        request._wire = dict(wire)
        return request

    def model_dump(self, **_: Any) -> dict[str, Any]:
        return dict(self._wire)


class _RawAnswer(types.Result):
    """Any result object the client answers; :func:`input_result` gives it the SDK's type."""

    model_config = ConfigDict(extra="allow")


_RESULT_TYPES: Mapping[str, type[types.Result]] = {
    "elicitation/create": types.ElicitResult,
    "sampling/createMessage": types.CreateMessageResult,
    "roots/list": types.ListRootsResult,
}

_CAPABILITIES: Mapping[str, str] = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}


async def _send_input(
    sdk_session: ServerSession, request: Mapping[str, Any], related_request_id: types.RequestId
) -> dict[str, Any]:
    """One input request on the stream of ``related_request_id``; the client's answer as wire JSON."""
    answer = await sdk_session.send_request(
        _WireRequest.of(request),
        _RawAnswer,
        metadata=ServerMessageMetadata(related_request_id=related_request_id),
    )
    return answer.model_dump(by_alias=True, mode="json", exclude_unset=True)


async def plain_input(method: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """A plain call's input: the ordinary request, on the stream of the current ``tools/call``."""
    try:
        context = request_ctx.get()
    except LookupError:
        raise RuntimeError(
            f"mcp_tasks_compat.server: {method} can only be asked from inside a tool call"
        ) from None
    request: dict[str, Any] = {"method": method}
    if params:
        request["params"] = dict(params)
    return await _send_input(context.session, request, context.request_id)


def undeclared_capability(method: str) -> str | None:
    """The client capability ``method`` needs when the session's client did not declare it."""
    try:
        context = request_ctx.get()
    except LookupError:
        return None
    client = context.session.client_params
    if client is None:
        return None
    name = _CAPABILITIES.get(method)
    if name is None:
        return None
    return name if getattr(client.capabilities, name, None) is None else None


def input_result(method: str, answer: Mapping[str, Any]) -> Any:
    """The client's answer as the SDK's result type (``ElicitResult``, ...)."""
    model = _RESULT_TYPES.get(method)
    if model is None:
        return dict(answer)
    try:
        return model.model_validate(dict(answer))
    except ValidationError as exc:
        raise _jsonrpc_error(
            INVALID_PARAMS, f"the client's answer to {method} is not a valid {model.__name__}: {exc}"
        ) from None


@dataclass(eq=False)
class _SessionTasks:
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


_current_session: contextvars.ContextVar[_SessionTasks | None] = contextvars.ContextVar(
    "mcp_tasks_compat_v1_session", default=None
)

_installed: WeakKeyDictionary[Server[Any, Any], _Installation] = WeakKeyDictionary()


def install(policy: TaskPolicy, server: Any) -> None:
    """Enable task-capable tools on an mcp 1.x low-level ``Server`` or ``FastMCP``.

    Call it once, before the server runs; tools may be registered before or after.
    """
    lowlevel = lowlevel_server_of(server)
    if lowlevel in _installed:
        raise ValueError(f"tasks are already installed on server {lowlevel.name!r}")
    installation = _Installation(policy, lowlevel)
    _installed[lowlevel] = installation
    installation.wrap_handlers()
    lowlevel.run = installation.run


def mcpserver_kwargs(policy: TaskPolicy, **user_kwargs: Any) -> dict[str, Any]:
    """mcp 1.x has no ``MCPServer``: refused as ``ServerTasks.mcpserver_kwargs`` refuses it."""
    del policy, user_kwargs
    refuse_unsupported(["MCPServer"], side="server")
    raise UnsupportedSdkError(f"mcp {sdk_info().mcp_version} has no MCPServer; fix: pip install 'mcp>=2,<3'")


def lowlevel_server_of(server: object) -> Server[Any, Any]:
    if isinstance(server, Server):
        return cast("Server[Any, Any]", server)
    if isinstance(server, FastMCP):
        lowlevel: object = getattr(cast("FastMCP[Any]", server), "_mcp_server", None)
        if not isinstance(lowlevel, Server):
            raise UnsupportedSdkError(
                "mcp-tasks-compat needs FastMCP._mcp_server (the low-level Server a FastMCP wraps), "
                f"which mcp {sdk_info().mcp_version} does not have; "
                "fix: pip install 'mcp>=1.23,<=1.30' or install tasks on the low-level Server"
            )
        return cast("Server[Any, Any]", lowlevel)
    raise TypeError(
        "ServerTasks.install() on mcp 1.x takes a mcp.server.lowlevel.Server or a "
        f"mcp.server.fastmcp.FastMCP, not {type(server).__name__}"
    )


def _jsonrpc_error(code: int, message: str, data: Any = None) -> McpError:
    return McpError(types.ErrorData(code=code, message=message, data=data))


def _abandon_request() -> NoReturn:
    """End a handler without answering: the SDK drops a cancelled request silently.

    Used once the peer is gone: on mcp < 1.27 a late answer to a closed transport raises into
    ``Server.run`` and kills it, and an unanswered handler keeps ``Server.run`` waiting.
    """
    raise anyio.get_cancelled_exc_class()()


def _with_tasks_capability(options: InitializationOptions) -> InitializationOptions:
    tasks_capability = types.ServerTasksCapability.model_validate(dict(codec.SERVER_TASKS_CAPABILITY))
    capabilities = options.capabilities.model_copy(update={"tasks": tasks_capability})
    return options.model_copy(update={"capabilities": capabilities})


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


def _discover_refusal(message: SessionMessage | Exception) -> SessionMessage | None:
    """The -32601 answer to a ``server/discover`` request (a 2026-07-28 method 1.x does not serve)."""
    if not isinstance(message, SessionMessage):
        return None
    request = message.message.root
    if not isinstance(request, types.JSONRPCRequest) or request.method != "server/discover":
        return None
    error = types.ErrorData(code=METHOD_NOT_FOUND, message="Method not found: server/discover")
    return SessionMessage(types.JSONRPCMessage(types.JSONRPCError(jsonrpc="2.0", id=request.id, error=error)))


class _Installation:
    """Our handlers in place on one low-level server, and its ``run`` owning each session's runs."""

    def __init__(self, tasks: TaskPolicy, server: Server[Any, Any]) -> None:
        self.handlers = _TaskHandlers(tasks)
        self.engine = tasks.engine
        self.server = server
        self.original_run = server.run
        self.ours: dict[type, RequestHandler] = {}
        self.sweeper_lock = anyio.Lock()
        # Expiry is noticed within a tenth of the TTL floor, between 50 ms and 1 s.
        self.sweep_interval_s = max(0.05, min(1.0, self.engine.ttl_floor_ms / 10_000))

    # --- wiring ---------------------------------------------------------------------------------

    def wrap_handlers(self) -> None:
        """Put our handlers in place; idempotent, and run again per session for late registrations."""
        handlers = self.server.request_handlers
        for request_type, make in (
            (types.CallToolRequest, self.handlers.make_call_tool),
            (types.ListToolsRequest, self.handlers.make_list_tools),
        ):
            current = handlers.get(request_type)
            if current is not None and current is not self.ours.get(request_type):
                self.ours[request_type] = handlers[request_type] = make(current)
        for request_type, handler in (
            (types.GetTaskRequest, self.handlers.get_task),
            (types.GetTaskPayloadRequest, self.handlers.get_task_result),
            (types.ListTasksRequest, self.handlers.list_tasks),
            (types.CancelTaskRequest, self.handlers.cancel_task),
        ):
            handlers[request_type] = handler

    async def run(
        self,
        read_stream: ReadStream,
        write_stream: WriteStream,
        initialization_options: InitializationOptions,
        raise_exceptions: bool = False,
        stateless: bool = False,
    ) -> None:
        """The SDK's ``Server.run`` inside a session that owns its task runs."""
        self.wrap_handlers()
        if not stateless:
            initialization_options = _with_tasks_capability(initialization_options)
        # The runs a killed server left are failed before this session's first request can read
        # them (the sweeper below would do it too, but concurrently with the requests).
        await self.engine.open()
        await self.engine.recover()
        inner_send, inner_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        async with anyio.create_task_group() as group:
            session = _SessionTasks(group=group, stateless=stateless)
            group.start_soon(self._sweep_while_serving, name="mcp-tasks sweeper")
            group.start_soon(
                self._watch_read_stream,
                read_stream,
                inner_send,
                session,
                write_stream,
                name="mcp-tasks reader",
            )
            token = _current_session.set(session)
            try:
                await self.original_run(
                    inner_receive, write_stream, initialization_options, raise_exceptions, stateless
                )
            finally:
                _current_session.reset(token)
                inner_receive.close()
                session.transport_closed()  # whatever ended the run, nothing more reaches this peer
                with anyio.CancelScope(shield=True):
                    await self._end_session(session)
                group.cancel_scope.cancel()

    async def _watch_read_stream(
        self,
        source: ReadStream,
        sink: MemoryObjectSendStream[SessionMessage | Exception],
        session: _SessionTasks,
        answers: WriteStream,
    ) -> None:
        """Forward the transport's messages to the SDK and notice when the peer goes away.

        ``server/discover`` (the first thing every mcp 2.x client sends) is answered here with a
        clean -32601: the SDK would fail to validate it against its request union, log about a
        hundred lines of validation errors per connection, and answer -32602.
        """
        try:
            async for message in source:
                refusal = _discover_refusal(message)
                if refusal is not None:
                    await answers.send(refusal)
                    continue
                await sink.send(message)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass  # the SDK closed its end first: the session is ending anyway
        finally:
            session.transport_closed()
            sink.close()
            source.close()

    async def _sweep_while_serving(self) -> None:
        """One TTL sweeper per server: the first session runs it, the next takes over."""
        async with self.sweeper_lock:
            await self.engine.background(max_sleep_s=self.sweep_interval_s)

    async def _end_session(self, session: _SessionTasks) -> None:
        """Cancel what still runs (saying why) and forget tasks nobody can reach any more."""
        for record in list(session.runs.values()):
            if not record.task.is_terminal:
                try:
                    await self.engine.cancel(
                        record.task.task_id, record.owner, strict=False, reason=SESSION_ENDED
                    )
                except PeerProtocolError:
                    continue  # already swept away
        for task in await self.engine.owned_by(session.principal):
            await self.engine.forget(task.task_id)


class _TaskHandlers:
    """The request handlers: ``tools/list`` and ``tools/call`` wrapped, ``tasks/*`` served on the engine."""

    detach_runs: bool = True
    """Internal switch, for the benchmarks only: ``False`` lets a run keep its request's whole
    context (the HTTP request, the stream callbacks), as before runs were detached."""

    def __init__(self, tasks: TaskPolicy) -> None:
        self.tasks = tasks
        self.engine = tasks.engine

    # --- who is asking ----------------------------------------------------------------------------

    def _session(self) -> _SessionTasks:
        session = _current_session.get()
        if session is None:
            raise _jsonrpc_error(
                INTERNAL_ERROR, "mcp-tasks-compat: this request did not arrive through the server's run()"
            )
        return session

    def _caller(self, session: _SessionTasks) -> str:
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
                    raise _jsonrpc_error(
                        METHOD_NOT_FOUND,
                        f"Tool '{echoed_id(name)}' requires task-augmented invocation (params.task)",
                    )
                return await original(req)
            if support == "forbidden":
                raise _jsonrpc_error(
                    METHOD_NOT_FOUND, f"Tool '{echoed_id(name)}' does not support task-augmented invocation"
                )
            return await self._start_task(original, req, metadata.ttl)

        return call_tool

    async def _start_task(
        self, original: RequestHandler, req: types.CallToolRequest, requested_ttl: int | None
    ) -> types.ServerResult:
        session = self._session()
        if session.stateless:
            raise _jsonrpc_error(
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
        return _WireResult.of(codec.encode_create_task_result(record.task))

    # --- tasks/* ----------------------------------------------------------------------------------

    async def get_task(self, req: types.GetTaskRequest) -> types.ServerResult:
        session = self._session()
        with _peer_errors():
            task = await self.engine.get(req.params.taskId, self._caller(session))
        return _WireResult.of(codec.encode_task(task))

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
            raise _jsonrpc_error(task.error.code, task.error.message, task.error.data)
        return _WireResult.of(codec.encode_task_payload(task))

    async def list_tasks(self, req: types.ListTasksRequest) -> types.ServerResult:
        session = self._session()
        cursor = req.params.cursor if req.params is not None else None
        with _peer_errors():  # a cursor this server never issued is -32602, as on mcp 2.x
            page, next_cursor = list_page(await self.engine.owned_by(self._caller(session)), cursor)
        return _WireResult.of(codec.encode_list_tasks_result(page, next_cursor=next_cursor))

    async def cancel_task(self, req: types.CancelTaskRequest) -> types.ServerResult:
        session = self._session()
        with _peer_errors():
            task = await self.engine.cancel(req.params.taskId, self._caller(session), strict=True)
        return _WireResult.of(codec.encode_task(task))


class _DetachedHttpRequest:
    """What a task's run keeps of the HTTP request that created it: its headers, nothing else."""

    __slots__ = ("headers",)

    def __init__(self, headers: Any) -> None:
        self.headers = headers


def _detached_request_context(context: RequestContext[Any, Any, Any]) -> RequestContext[Any, Any, Any]:
    """The request context a task's tool sees (``ctx`` of a FastMCP tool): the request's, minus
    what ends with the exchange (the HTTP request object, the SSE stream-close callbacks).

    Kept: request id and ``_meta`` (progress token), the session (the tool's back channel), the
    lifespan value, the SDK's ``experimental`` data, and the HTTP headers.
    """
    headers = getattr(context.request, "headers", None)
    return replace(
        context,
        request=None if headers is None else _DetachedHttpRequest(headers),
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
            return await _send_input(sdk_session, {"method": request["method"], "params": params}, request_id)
        except McpError as exc:
            error = exc.error
            raise InputRefused(JsonRpcError(error.code, error.message, error.data)) from exc

    return send


def _status_notifier(sdk_session: ServerSession, session: _SessionTasks) -> Callable[[Task], Awaitable[None]]:
    """Best-effort ``notifications/tasks/status`` to the session that created the task."""

    async def notify(task: Task) -> None:
        if session.closed.is_set():
            return
        with anyio.move_on_after(NOTIFY_TIMEOUT_S):
            await sdk_session.send_notification(_WireNotification.of(codec.encode_status_notification(task)))

    return notify


@contextmanager
def _peer_errors() -> Generator[None]:
    """Answer the engine's ``PeerProtocolError`` (-32602 unknown task, terminal cancel) as JSON-RPC."""
    try:
        yield
    except PeerProtocolError as exc:
        raise _jsonrpc_error(exc.jsonrpc_code, exc.message, exc.data) from None
