"""What both task dialects share on an mcp 2.x server: lifespan, task groups, owners, work.

One :class:`TasksRuntime` exists per server the tasks are enabled on. It owns no task group itself:
the server lifespan does (``tasks.engine.running()`` composed with the user's lifespan), because
on 2026-07-28 every request gets a fresh connection that closes when the request ends, so work
that outlives the ``tools/call`` request can only live in the lifespan.
"""

from __future__ import annotations

import logging
import secrets
import weakref
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager, contextmanager
from contextvars import Context as ContextVars
from contextvars import ContextVar, copy_context
from functools import partial
from typing import Any, TypeVar, cast

import anyio.abc
import mcp_types
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.context import HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS
from pydantic import BaseModel, ConfigDict, ValidationError, model_serializer

from ..._engine import InputRefused, Outcome, RoundTrips, TaskPolicy, TaskRecord, ToolCallFailure
from ..._engine.observed import traced_inline
from ..._engine.runs import current_run
from ..._server import Tasks2026Service, principal_id
from ...core.model import JsonRpcError, Task
from ...dialects import DIALECT_2025_11_25, DIALECT_2026_07_28, Dialect
from ...errors import PeerProtocolError, TaskStoreError
from .detached import DetachedRequest, detach_request

__all__ = [
    "INPUT_CAPABILITIES",
    "INPUT_RESULT_TYPES",
    "Lifespan",
    "TasksRuntime",
    "answering_store_errors",
    "current_request",
    "mcp_error",
    "send_input",
    "tool_result_wire",
    "with_request",
]

T = TypeVar("T")

logger = logging.getLogger("mcp_tasks_compat.server")

Lifespan = Callable[[Any], AbstractAsyncContextManager[Any]]
"""``lifespan(server) -> async context manager``, as both ``MCPServer`` and ``Server`` take it."""

Work = Callable[[], Awaitable[Mapping[str, Any]]]


def mcp_error(error: PeerProtocolError | JsonRpcError) -> MCPError:
    """The SDK exception that puts ``error`` on the wire (the session lives on)."""
    if isinstance(error, PeerProtocolError):
        return MCPError(code=error.jsonrpc_code, message=error.message, data=error.data)
    return MCPError(code=error.code, message=error.message, data=error.data)


@contextmanager
def answering_store_errors() -> Generator[None]:
    """A request the store cannot serve (Redis down) is answered -32603 with the store's message,
    which names the store and the fix; the SDK would answer a bare "Internal server error"."""
    try:
        yield
    except TaskStoreError as exc:
        raise MCPError(code=INTERNAL_ERROR, message=exc.message) from None


def tool_result_wire(result: HandlerResult) -> dict[str, Any]:
    """A ``tools/call`` handler's result as wire JSON, to keep as the task's result."""
    if result is None:
        return {"content": []}
    if isinstance(result, BaseModel):
        wire = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    else:
        wire = dict(result)
    if wire.get("resultType") == "input_required":
        # Multi-round-trip input inside a task is the input feature's job (tasks/update answers
        # inputRequests); until then a tool asking for input ends its task failed, visibly.
        raise ToolCallFailure(
            JsonRpcError(
                INTERNAL_ERROR, "the tool asked for client input (input_required), which a task cannot relay"
            )
        )
    return wire


def _rerun_work(server: MCPServer[Any], tool_name: str, arguments: Mapping[str, Any]) -> Work:
    """A lost run of ``tool_name`` started again: ``MCPServer.call_tool`` without a request (the
    tool's ``ctx`` then has no request: the library's ``report_status`` still works). A tool error
    is answered as the SDK answers it in a request, an error result with its text."""

    async def work() -> Mapping[str, Any]:
        try:
            result = await server.call_tool(tool_name, dict(arguments))
        except MCPError as exc:
            raise ToolCallFailure(JsonRpcError(exc.error.code, exc.error.message, exc.error.data)) from exc
        except Exception as exc:
            logger.warning("task run of tool %r raised", tool_name, exc_info=True)
            result = mcp_types.CallToolResult(
                content=[mcp_types.TextContent(type="text", text=str(exc))], is_error=True
            )
        return tool_result_wire(result)

    return work


def _run_record() -> TaskRecord | None:
    """The task the running work has become, if it has (inside a run)."""
    run = current_run()
    return None if run is None else run[1]


def tool_work(
    call_next: Callable[[ServerRequestContext[Any, Any]], Awaitable[HandlerResult]],
) -> Work:
    """Wrap the rest of the ``tools/call`` chain as task work.

    The chain is called with the run's own request context (:func:`detach_request`, set by
    :meth:`TasksRuntime.start_task` and :meth:`TasksRuntime.begin_call` as the run's
    :func:`current_request`, so ``call_next`` needs no :func:`with_request`), never the request's: the
    work keeps only the chain (the tool and its validated arguments), so the request's objects go
    once the create answer is sent. A JSON-RPC error from the chain ends the task ``failed`` with
    that error (inline in 2026-07-28, from ``tasks/result`` in 2025-11-25); a tool error result is
    a result like any other.
    """

    async def work() -> Mapping[str, Any]:
        ctx = current_request()
        if ctx is None:  # pragma: no cover - start_task always sets it
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


class _SessionKeys:
    """A fresh random key per live 2025-11-25 connection, never reused.

    The connection is recognised by the identity of its ``initialize`` params object (what
    ``ctx.session.client_params`` returns for every request of that connection); the key is
    forgotten when that object is collected, so a new connection never inherits an old key.
    """

    def __init__(self) -> None:
        self._keys: dict[int, tuple[weakref.ref[object], str]] = {}

    def key_for(self, anchor: object) -> str:
        ident = id(anchor)
        entry = self._keys.get(ident)
        if entry is not None and entry[0]() is anchor:
            return entry[1]
        key = secrets.token_urlsafe(16)

        def forget(ref: weakref.ref[object]) -> None:
            current = self._keys.get(ident)
            if current is not None and current[0] is ref:
                del self._keys[ident]

        self._keys[ident] = (weakref.ref(anchor, forget), key)
        return key


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
        self._sessions = _SessionKeys()

    @property
    def serves_2025(self) -> bool:
        return DIALECT_2025_11_25 in self.dialects

    @property
    def serves_2026(self) -> bool:
        return DIALECT_2026_07_28 in self.dialects

    # --- lifespan -------------------------------------------------------------------------------

    def compose_lifespan(self, user_lifespan: Lifespan | None) -> Lifespan:
        """The user's lifespan outside, the engine's task group inside.

        Their resources are up before any task can start and are closed only after every task
        still running was cancelled (and marked so). Their lifespan value is what we yield, so it
        reaches their tools unchanged.
        """

        @asynccontextmanager
        async def lifespan(server: Any) -> AsyncGenerator[Any, None]:
            async with AsyncExitStack() as stack:
                value: Any = {}
                if user_lifespan is not None:
                    value = await stack.enter_async_context(user_lifespan(server))
                if isinstance(server, MCPServer):
                    self.tasks.engine.rerun_work = partial(_rerun_work, cast("MCPServer[Any]", server))
                group = await stack.enter_async_context(self.tasks.engine.running())
                entry = (cast(object, value), group)
                self._live.append(entry)
                try:
                    yield value
                finally:
                    self._live[:] = [live for live in self._live if live is not entry]

        return lifespan

    def _group_for(self, lifespan_value: object) -> anyio.abc.TaskGroup | None:
        """The task group of the lifespan serving this request (matched by its value)."""
        for value, group in reversed(self._live):
            if value is lifespan_value:
                return group
        return self._live[-1][1] if self._live else None

    # --- tasks ----------------------------------------------------------------------------------

    async def start_task(
        self,
        ctx: ServerRequestContext[Any, Any],
        *,
        dialect: Dialect,
        owner: str | None,
        tool_name: str,
        ttl_ms: int | None,
        work: Work,
        listener: Callable[[ServerSession], Callable[[Task], Awaitable[None]]] | None = None,
        run_as: ServerRequestContext[Any, Any] | None = None,
        arguments: Mapping[str, Any] | None = None,
    ) -> Task:
        """Create the task (readable before this returns) and start its work in the lifespan group.

        The work runs under :func:`~.detached.detach_request` of ``run_as`` (default ``ctx``), in
        a copy of this context where that is the current request, and the request's exchange is
        ended for it as this returns (the create answer is what the caller sends next).
        ``listener(session)``: the task's change listener, given the run's own session (the
        request's would keep the request alive for the task's life).
        """
        group = self._run_group(ctx)
        try:  # the owner's active-task limit reached: a JSON-RPC error, the session lives on
            record: TaskRecord = await self.tasks.engine.create(
                dialect=dialect, owner=owner, tool_name=tool_name, ttl_ms=ttl_ms, arguments=arguments
            )
        except PeerProtocolError as exc:
            raise mcp_error(exc) from None
        run_context, detached = self._run_context(run_as or ctx)
        if listener is not None:
            record.listeners.append(listener(detached.context.session))
        try:
            run_context.run(self.tasks.engine.start, record, work, group)
        finally:
            detached.end()
        return record.task

    def _run_context(self, ctx: ServerRequestContext[Any, Any]) -> tuple[ContextVars, DetachedRequest]:
        """A copy of this context where the current request is the detached copy of ``ctx``.

        A run started from inside the request would otherwise inherit the request's own context,
        and with it the whole request, for as long as the task runs. The caller ends the detached
        request's exchange once it answers.
        """
        run_context = copy_context()
        detached = detach_request(ctx) if self.detach_runs else DetachedRequest(ctx, None)
        run_context.run(_request.set, detached.context)
        return run_context, detached

    async def begin_call(
        self,
        ctx: ServerRequestContext[Any, Any],
        *,
        dialect: Dialect,
        owner: str | None,
        tool_name: str,
        ttl_ms: int | None,
        work: Work,
        always_task: bool,
        rounds: RoundTrips | None,
        arguments: Mapping[str, Any] | None = None,
        at_once: bool = False,
    ) -> Outcome | Task:
        """Start the work undecided (the inline grace): its plain outcome, or the task it became.

        The grace is the tool's (:class:`~..._engine.grace.GraceMemory`): none for a tool whose
        recent calls outlived it, or when the caller asked for a task (``at_once``)."""
        engine = self.tasks.engine

        async def create(status_message: str | None) -> TaskRecord:
            try:  # the owner's active-task limit reached: a JSON-RPC error, the run is dropped
                return await engine.create(
                    dialect=dialect,
                    owner=owner,
                    tool_name=tool_name,
                    ttl_ms=ttl_ms,
                    status_message=status_message,
                    arguments=arguments,
                )
            except PeerProtocolError as exc:
                raise mcp_error(exc) from None

        run_context, detached = self._run_context(ctx)
        work = traced_inline(work, tool_name=tool_name, dialect=dialect, record_of=_run_record)
        try:
            return await engine.runs.begin(
                work,
                self._run_group(ctx),
                ticket=self.tasks.grace.ticket(tool_name, at_once=at_once),
                create=create,
                always_task=always_task,
                rounds=rounds,
                context=run_context,
            )
        finally:  # answered plainly, or a task whose create answer goes out now
            detached.end()

    def _run_group(self, ctx: ServerRequestContext[Any, Any]) -> anyio.abc.TaskGroup:
        group = self._group_for(ctx.lifespan_context)
        if group is None:
            raise MCPError(
                code=INTERNAL_ERROR,
                message="mcp-tasks-compat: the server lifespan that runs tasks is not active; build the "
                "server with MCPServer(name, **tasks.mcpserver_kwargs(...)) or tasks.install(server)",
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
        """A key of this request's live 2025-11-25 connection, ``None`` before ``initialize`` or
        on a stateless server (where every request is a connection of its own)."""
        anchor = ctx.session.client_params
        return None if anchor is None else self._sessions.key_for(anchor)
