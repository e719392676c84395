"""What both task dialects share on an mcp 2.x server: lifespan, task groups, owners, work.

One :class:`TasksRuntime` exists per server the tasks are enabled on. It owns no task group
itself: the server lifespan does (the engine's host, ``tasks.engine.hosted()``, which enters the
user's lifespan), because on 2026-07-28 every request gets a fresh connection that closes when the
request ends, so work that outlives the ``tools/call`` request can only live in the lifespan.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from contextvars import Context as ContextVars
from contextvars import ContextVar, copy_context
from dataclasses import replace
from functools import partial
from typing import Any, TypeVar, cast

import anyio.abc
import mcp_types
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.context import HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ConfigDict, ValidationError, model_serializer

from ..._engine import InputRefused, TaskPolicy, ToolCallFailure, ToolRunner
from ..._engine.hosting import Lifespan
from ..._server import Launch, Tasks2026Service, principal_id
from ...core._model import JsonRpcError
from ...dialects import DIALECT_2025_11_25, DIALECT_2026_07_28, TASKS_EXTENSION_ID, Dialect
from ...errors import PeerProtocolError, TaskStoreError
from ..no_session import NoClientSession
from .detached import DetachedRequest, detach_request
from .session_keys import SessionKeys

__all__ = [
    "INPUT_CAPABILITIES",
    "INPUT_RESULT_TYPES",
    "Lifespan",
    "RawNotification",
    "RequestCaller",
    "TasksRuntime",
    "ToolResultWire",
    "current_request",
    "declares_tasks",
    "mcp_error",
    "sdk_errors",
    "send_input",
    "speaks_tasks",
    "tool_result_wire",
    "tool_runner",
    "with_request",
]

T = TypeVar("T")

logger = logging.getLogger("mcp_tasks_compat.server")


Work = Callable[[], Awaitable[Mapping[str, Any]]]


def declares_tasks(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether this request's per-request capabilities declare the Tasks extension."""
    capabilities = ctx.session.client_capabilities
    extensions = capabilities.extensions if capabilities is not None else None
    return bool(extensions) and TASKS_EXTENSION_ID in (extensions or {})


def speaks_tasks(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether the client speaks a task dialect on this request: a 2026-07-28 request that declares
    the Tasks extension, a handshake-era session that declared ``capabilities.tasks``."""
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return declares_tasks(ctx)
    return getattr(ctx.session.client_capabilities, "tasks", None) is not None


def mcp_error(error: JsonRpcError) -> MCPError:
    """The SDK exception that puts ``error`` on the wire (the session lives on): for what a tool
    body raises, where the SDK's tool layer lets only its own error through."""
    return MCPError(code=error.code, message=error.message, data=error.data)


@contextmanager
def sdk_errors() -> Generator[None]:
    """The one mapping of this adapter: a service's refusal (``PeerProtocolError``) and a store that
    cannot serve the request (Redis down: -32603 with the store's message, which names the store
    and the fix, where the SDK would answer a bare "Internal server error") as the SDK's
    ``MCPError``; the session lives on."""
    try:
        yield
    except PeerProtocolError as exc:
        raise MCPError(code=exc.jsonrpc_code, message=exc.message, data=exc.data) from None
    except TaskStoreError as exc:
        raise MCPError(code=INTERNAL_ERROR, message=exc.message) from None


class RawNotification(BaseModel):
    """A notification sent exactly as built: the session dumps with ``exclude_none``, which would
    drop ``"ttl": null`` (2025-11-25) or ``"ttlMs": null`` (2026-07-28); a plain serializer keeps it."""

    method: str
    params: dict[str, Any]

    @model_serializer
    def _serialize(self) -> dict[str, Any]:
        return {"method": self.method, "params": self.params}


class ToolResultWire(Mapping[str, Any]):
    """A tool's result model, dumped to wire JSON only when read as a mapping: a call answered
    within the inline grace hands the SDK its own model back (:attr:`model`), neither dumped here
    nor validated again by the SDK; a task reads (and keeps) the wire form."""

    __slots__ = ("_wire", "model")

    def __init__(self, model: BaseModel) -> None:
        self.model = model
        self._wire: dict[str, Any] | None = None

    def _dumped(self) -> dict[str, Any]:
        if self._wire is None:
            self._wire = self.model.model_dump(by_alias=True, mode="json", exclude_none=True)
        return self._wire

    def __getitem__(self, key: str) -> Any:
        return self._dumped()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._dumped())

    def __len__(self) -> int:
        return len(self._dumped())


def tool_result_wire(result: HandlerResult) -> Mapping[str, Any]:
    """A ``tools/call`` handler's result as wire JSON (dumped when read), to keep as the task's result."""
    if result is None:
        return {"content": []}
    if isinstance(result, BaseModel):
        kind: object = getattr(result, "result_type", None)
        wire: Mapping[str, Any] = ToolResultWire(result)
    else:
        wire = dict(result)
        kind = wire.get("resultType")
    if kind == "input_required":
        # A task's rounds are relayed by the extension's interceptor (_server.relay_rounds); one
        # that reaches here had none to relay it (a re-run, a server serving 2025-11-25 only), so
        # the task ends failed, visibly.
        raise ToolCallFailure(
            JsonRpcError(
                INTERNAL_ERROR, "the tool asked for input (input_required), which this run cannot relay"
            )
        )
    return wire


NO_REQUEST = "this run was started with no request (a re-run or a worker's run)"


def _run_without_request(
    server: MCPServer[Any], tool_name: str, arguments: Mapping[str, Any], lifespan_context: Any
) -> Work:
    """A tool run with no request (a re-run, a worker's run): ``MCPServer.call_tool`` with a
    context of its own, whose ``ctx.request_context.lifespan_context`` is the host's lifespan
    value and whose session refuses by name what cannot cross (:mod:`..no_session`). A tool error
    is answered as the SDK answers it in a request, an error result with its text."""

    async def work() -> Mapping[str, Any]:
        request = ServerRequestContext[Any, Any](
            session=cast(Any, NoClientSession(NO_REQUEST, ToolError)),
            lifespan_context=lifespan_context,
            protocol_version=mcp_types.LATEST_PROTOCOL_VERSION,
            method="tools/call",
            params={"name": tool_name, "arguments": dict(arguments)},
        )
        context = Context[Any, Any](request_context=request, mcp_server=server)
        try:
            result = await server.call_tool(tool_name, dict(arguments), context)
        except MCPError as exc:
            raise ToolCallFailure(JsonRpcError(exc.error.code, exc.error.message, exc.error.data)) from exc
        except Exception as exc:
            logger.warning("task run of tool %r raised", tool_name, exc_info=True)
            result = mcp_types.CallToolResult(
                content=[mcp_types.TextContent(type="text", text=str(exc))], is_error=True
            )
        return tool_result_wire(result)

    return work


def tool_runner(server: object) -> ToolRunner:
    """How a host (a server's lifespan, a worker) runs the tools of ``server`` (an ``MCPServer``)
    with no request (:func:`_run_without_request`)."""
    if not isinstance(server, MCPServer):
        raise TypeError(f"a worker runs the tools of an MCPServer, not of {type(server).__name__}")
    return partial(_run_without_request, cast("MCPServer[Any]", server))


def tool_work(
    call_next: Callable[[ServerRequestContext[Any, Any]], Awaitable[HandlerResult]],
) -> Work:
    """Wrap the rest of the ``tools/call`` chain as task work.

    The chain is called with the run's own request context (:func:`detach_request`, set by
    :meth:`RequestCaller.launch` as the run's :func:`current_request`, so ``call_next`` needs no
    :func:`with_request`), never the request's: the
    work keeps only the chain (the tool and its validated arguments), so the request's objects go
    once the create answer is sent. A JSON-RPC error from the chain ends the task ``failed`` with
    that error (inline in 2026-07-28, from ``tasks/result`` in 2025-11-25); a tool error result is
    a result like any other.
    """

    async def work() -> Mapping[str, Any]:
        ctx = current_request()
        if ctx is None:  # pragma: no cover - launch always sets it
            raise ToolCallFailure(JsonRpcError(INTERNAL_ERROR, "the task's run has no request context"))
        try:
            result = await call_next(ctx)
        except MCPError as exc:
            raise ToolCallFailure(JsonRpcError(exc.error.code, exc.error.message, exc.error.data)) from exc
        except ValidationError as exc:
            raise ToolCallFailure(JsonRpcError(INVALID_PARAMS, "Invalid request parameters")) from exc
        return tool_result_wire(result)

    return work


# --- input requests (elicitation, sampling, roots) --------------------------------------------------

INPUT_RESULT_TYPES: Mapping[str, type[mcp_types.Result]] = {
    "elicitation/create": mcp_types.ElicitResult,
    "sampling/createMessage": mcp_types.CreateMessageResult,
    "roots/list": mcp_types.ListRootsResult,
}
"""The SDK's result type for each kind of input request."""

INPUT_CAPABILITIES: Mapping[str, str] = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}
"""The client capability each kind of input request needs."""

_request: ContextVar[ServerRequestContext[Any, Any] | None] = ContextVar(
    "mcp_tasks_compat_v2_request", default=None
)


async def with_request(ctx: ServerRequestContext[Any, Any], call: Callable[[], Awaitable[T]]) -> T:
    """Run ``call`` (the rest of a ``tools/call`` chain) knowing its request: input requests need it."""
    token = _request.set(ctx)
    try:
        return await call()
    finally:
        _request.reset(token)


def current_request() -> ServerRequestContext[Any, Any] | None:
    """The ``tools/call`` request whose tool body runs in this context (set by :func:`with_request`)."""
    return _request.get()


class _RawRequest(BaseModel):
    """A server-to-client request sent exactly as built (params and ``_meta`` untouched)."""

    method: str
    params: dict[str, Any] | None = None

    @model_serializer
    def _serialize(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"method": self.method}
        if self.params is not None:
            wire["params"] = self.params
        return wire


class _RawAnswer(mcp_types.Result):
    """Any result object the client answers; the SDK's own type is given to it later."""

    model_config = ConfigDict(extra="allow")


async def send_input(
    session: ServerSession, request: Mapping[str, Any], related_request_id: Any
) -> dict[str, Any]:
    """One input request on the stream of ``related_request_id``; the client's answer as wire JSON.

    A JSON-RPC error answer raises the SDK's ``MCPError``; an answer the SDK's result check rejects
    raises :class:`InputRefused` with -32602 (asking again would get the same answer).
    """
    raw = _RawRequest(method=str(request["method"]), params=request.get("params"))
    try:
        answer = await session.send_request(
            cast(Any, raw), _RawAnswer, metadata=ServerMessageMetadata(related_request_id=related_request_id)
        )
    except ValidationError as exc:
        message = f"the answer to {raw.method} is not a valid result: {exc.error_count()} validation error(s)"
        raise InputRefused(JsonRpcError(INVALID_PARAMS, message)) from exc
    return answer.model_dump(by_alias=True, mode="json", exclude_unset=True)


class TasksRuntime:
    """The state one 2.x server's task support needs, shared by the extension and the middleware."""

    detach_runs: bool = True
    """Internal switch, for the benchmarks only: ``False`` lets a run keep its request's whole
    context (the HTTP request, the stream callbacks), as before runs were detached."""

    def __init__(self, tasks: TaskPolicy, dialects: tuple[Dialect, ...]) -> None:
        self.tasks = tasks
        self.dialects = dialects
        self.service_2026 = Tasks2026Service(tasks)
        """The 2026-07-28 semantics, shared by the extension and the push stream."""
        self._live: list[tuple[object, anyio.abc.TaskGroup]] = []
        self._sessions = SessionKeys()

    @property
    def serves_2025(self) -> bool:
        return DIALECT_2025_11_25 in self.dialects

    @property
    def serves_2026(self) -> bool:
        return DIALECT_2026_07_28 in self.dialects

    # --- lifespan -------------------------------------------------------------------------------

    def compose_lifespan(self, user_lifespan: Lifespan | None) -> Lifespan:
        """The engine's host (:meth:`~mcp_tasks_compat._engine.TaskEngine.hosted`), which enters
        the user's lifespan outside its task group: their resources are up before any task can
        start and are closed only after every task still running was cancelled (and marked so).
        Their lifespan value is what we yield, so it reaches their tools unchanged; where a host
        serves the whole process already (a worker, the CLI), the lifespan joins it.
        """

        @asynccontextmanager
        async def lifespan(server: Any) -> AsyncGenerator[Any, None]:
            entered = None if user_lifespan is None else partial(user_lifespan, server)
            runner = tool_runner(cast(object, server)) if isinstance(server, MCPServer) else None
            async with self.tasks.engine.hosted(tools=runner, lifespan=entered) as host:
                entry = (cast(object, host.lifespan_context), host.runs)
                self._live.append(entry)
                try:
                    yield host.lifespan_context
                finally:
                    self._live[:] = [live for live in self._live if live is not entry]

        return lifespan

    def _group_for(self, lifespan_value: object) -> anyio.abc.TaskGroup | None:
        """The task group of the lifespan serving this request (matched by its value)."""
        for value, group in reversed(self._live):
            if value is lifespan_value:
                return group
        return self._live[-1][1] if self._live else None

    # --- the run primitive ------------------------------------------------------------------------

    def caller(self, ctx: ServerRequestContext[Any, Any], *, without_task: bool = False) -> RequestCaller:
        """This request as a service sees it; ``without_task``: a task's run is the rest of the
        chain without ``params.task`` (a 2025-11-25 task-augmented call)."""
        return RequestCaller(self, ctx, without_task)

    def run_context(
        self, ctx: ServerRequestContext[Any, Any], *, detach: bool = True
    ) -> tuple[ContextVars, DetachedRequest]:
        """A copy of this context where the current request is the detached copy of ``ctx``.

        A run started from inside the request would otherwise inherit the request's own context,
        and with it the whole request, for as long as the task runs. The caller ends the detached
        request's exchange once it answers.
        """
        run_context = copy_context()
        detached = detach_request(ctx) if self.detach_runs and detach else DetachedRequest(ctx, None)
        run_context.run(_request.set, detached.context)
        return run_context, detached

    def run_group(self, ctx: ServerRequestContext[Any, Any]) -> anyio.abc.TaskGroup:
        group = self._group_for(ctx.lifespan_context)
        if group is None:
            raise PeerProtocolError(
                "mcp-tasks-compat: the server lifespan that runs tasks is not active; build the "
                "server with MCPServer(name, **tasks.mcpserver_kwargs(...)) or tasks.install(server)",
                jsonrpc_code=INTERNAL_ERROR,
            )
        return group

    # --- principals -----------------------------------------------------------------------------

    @staticmethod
    def principal() -> str | None:
        """The authenticated principal of this request (client, issuer, subject), or ``None``."""
        token = get_access_token()
        if token is None:
            return None
        return principal_id(token.client_id, (token.claims or {}).get("iss"), token.subject)

    def session_key(self, ctx: ServerRequestContext[Any, Any]) -> str | None:
        """This request's session key (:meth:`.session_keys.SessionKeys.of`)."""
        return self._sessions.of(ctx)


class RequestCaller:
    """A request as a service sees it (:class:`~mcp_tasks_compat._server.Caller`), with mcp 2.x's
    run primitive: the lifespan's task group, the request detached for the run, and notifications
    on the run's own session. The principal and the session key are read only when asked for."""

    __slots__ = ("_ctx", "_runtime", "_without_task")

    def __init__(
        self, runtime: TasksRuntime, ctx: ServerRequestContext[Any, Any], without_task: bool
    ) -> None:
        self._runtime = runtime
        self._ctx = ctx
        self._without_task = without_task

    @property
    def principal(self) -> str | None:
        return self._runtime.principal()

    @property
    def session_key(self) -> str | None:
        return self._runtime.session_key(self._ctx)

    @property
    def speaks_tasks(self) -> bool:
        return speaks_tasks(self._ctx)

    async def relay(self, request: Mapping[str, Any]) -> Mapping[str, Any]:
        ctx = self._ctx
        try:
            return await send_input(ctx.session, request, ctx.request_id)
        except MCPError as exc:
            raise InputRefused(JsonRpcError(exc.error.code, exc.error.message, exc.error.data)) from exc

    @contextmanager
    def launch(self, tool_name: str, *, detach: bool = True) -> Generator[Launch]:
        del tool_name  # mcp 2.x opens the request's span itself
        runtime, ctx = self._runtime, self._ctx
        group = runtime.run_group(ctx)
        if self._without_task:
            params = cast("Mapping[str, Any]", ctx.params)
            ctx = replace(ctx, params={key: value for key, value in params.items() if key != "task"})
        run_context, detached = runtime.run_context(ctx, detach=detach)
        session = detached.context.session  # the run's own: the request's would keep the request alive

        async def notify(wire: Mapping[str, Any]) -> None:
            await session.send_notification(
                cast(Any, RawNotification(method=wire["method"], params=wire["params"]))
            )

        try:
            yield Launch(group, run_context, notify)
        finally:
            detached.end()  # the answer goes out now: the exchange is over for the run
