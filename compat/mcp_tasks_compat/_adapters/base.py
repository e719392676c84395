"""What an SDK major's adapter provides: the protocols the registry's answer is typed by.

Each major implements the three facets as modules (``v<N>/client.py``, ``v<N>/server.py``,
``v<N>/app.py``); the package ``v<N>/__init__.py`` checks statically that they conform. The layers
above (``client.py``, ``server.py``, the command line, the testing kit) see only these protocols,
so no module outside the registry compares SDK majors.

This module imports no ``mcp``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Protocol, TextIO

from ..dialects import Dialect

if TYPE_CHECKING:
    from .._client import ClientConnection, OnStatus
    from .._engine.hosting import ToolRunner
    from .._engine.policy import TaskPolicy

__all__ = [
    "Answerer",
    "AppFacet",
    "BuilderFacet",
    "ClientFacet",
    "ServerFacet",
    "Streams",
]

Streams = tuple[Any, Any]
"""A client's (read, write) JSON-RPC streams, as the installed SDK's transports yield them."""

Answerer = Callable[[str, Mapping[str, Any]], Awaitable["Mapping[str, Any] | str"]]
"""``answer(message, requested_schema)``: the form's content, or a reason why there is no answer."""


class ClientFacet(Protocol):
    """The client side: what :mod:`mcp_tasks_compat.client` needs of a ``ClientSession``."""

    def session_kwargs(
        self,
        *,
        dialect: Dialect | None,
        extensions: Mapping[str, Mapping[str, Any]] | None,
        result_claims: Mapping[str, Sequence[Any]] | None,
        notification_bindings: Sequence[Any] | None,
        message_handler: Any,
        push: bool = True,
    ) -> dict[str, Any]:
        """``ClientSession`` keyword arguments (what the major cannot honour was refused before)."""
        ...

    async def connection(self, session: object, *, discover_timeout: float) -> ClientConnection[Any]:
        """The negotiated connection of ``session`` (negotiated on first use, then cached)."""
        ...

    def task_session_class(
        self,
        call_tool_with: Callable[..., Awaitable[Any]],
        session_kwargs: Callable[..., dict[str, Any]],
        extension: Callable[..., Any],
    ) -> type[Any]:
        """The ``ClientSession`` subclass whose ``call_tool`` is ``call_tool_with(self, ...)``, its
        options normalised first."""
        ...

    def tasks_extension(self, *, dialect: Dialect | None, on_status: OnStatus | None = None) -> Any:
        """The Tasks extension as ``mcp.Client(extensions=[...])`` takes it (mcp 2.x only)."""
        ...


class ServerFacet(Protocol):
    """The server side: what :mod:`mcp_tasks_compat.server` needs of the installed SDK's servers."""

    def install(self, policy: TaskPolicy, server: Any) -> None:
        """Enable tasks on an already-built server of this major."""
        ...

    def mcpserver_kwargs(self, policy: TaskPolicy, **user_kwargs: Any) -> dict[str, Any]:
        """``MCPServer(...)`` keyword arguments (mcp 2.x only; refused before on 1.x)."""
        ...

    async def plain_input(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """Ask the client ``method`` on the current plain ``tools/call``; its answer as wire JSON."""
        ...

    def undeclared_capability(self, method: str) -> str | None:
        """The client capability ``method`` needs, when the current session's client lacks it."""
        ...

    def input_result(self, method: str, answer: Mapping[str, Any]) -> Any:
        """The client's answer as the SDK's own result type."""
        ...


class BuilderFacet(Protocol):
    """What :class:`mcp_tasks_compat.server.TaskServer` needs: the major's documented server, and a
    tool body's view of its own request (progress, log), without a major-specific ``Context``."""

    @property
    def Context(self) -> type[Any]:
        """The SDK's tool ``Context`` class (``FastMCP``'s / ``MCPServer``'s), for a tool that wants one."""
        ...

    @property
    def ToolError(self) -> type[Exception]:
        """The SDK's ``ToolError``: raised by a tool, its message reaches the model on every version."""
        ...

    def new_server(self, name: str, policy: TaskPolicy, sdk_kwargs: Mapping[str, Any]) -> Any:
        """``FastMCP`` (1.x) / ``MCPServer`` (2.x) named ``name`` with ``policy``'s tasks enabled."""
        ...

    def add_tool(self, server: Any, function: Callable[..., Any], sdk_tool_kwargs: Mapping[str, Any]) -> str:
        """Register ``function`` with the SDK's own decorator (its schema, its output); the tool's name."""
        ...

    def run(self, server: Any, transport: str, options: Mapping[str, Any]) -> None:
        """Serve until stopped (blocking), as the SDK's own ``run`` does."""
        ...

    def tool_runner(self, server: Any) -> ToolRunner:
        """How a host (a worker, a server's lifespan or app) runs ``server``'s tools with no request:
        ``(tool_name, arguments, lifespan_context)`` to the task's work, the tool seeing that
        lifespan value in ``ctx.request_context.lifespan_context``."""
        ...

    def request_lifespan_context(self) -> tuple[bool, Any]:
        """``(True, value)``: the lifespan value of the request whose tool body runs here;
        ``(False, None)`` with no request."""
        ...

    async def send_progress(self, progress: float, total: float | None, message: str | None) -> bool:
        """``notifications/progress`` on the current ``tools/call`` when its caller sent a progress
        token; whether it was sent."""
        ...

    async def send_log(self, level: str, data: Any, logger_name: str | None) -> bool:
        """``notifications/message`` on the current ``tools/call``; whether there was one to send it on."""
        ...


class AppFacet(Protocol):
    """Servers and sessions for the command line and the testing kit, on this major's SDK."""

    async def serve_stdio(self, server: Any) -> None: ...

    async def serve_http(
        self, server: Any, *, host: str, port: int, on_listening: Callable[[str], None]
    ) -> None: ...

    def in_memory_streams(self, server: Any) -> AbstractAsyncContextManager[Streams]: ...

    def stdio_streams(
        self,
        command: str,
        args: Sequence[str],
        *,
        errlog: TextIO,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> AbstractAsyncContextManager[Streams]: ...

    def http_streams(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        auth: Any = None,
        on_response: Callable[[Any], Awaitable[None]] | None = None,
    ) -> AbstractAsyncContextManager[Streams]:
        """Streamable HTTP to ``url``, sending ``headers`` and ``auth`` (the major's ``httpx.Auth``);
        ``on_response`` hears every HTTP response (the openers' :class:`HttpCredentials` hook)."""
        ...

    def open_session(
        self, streams: Streams, kwargs: Mapping[str, Any]
    ) -> AbstractAsyncContextManager[Any]: ...

    async def handshake(self, session: Any, *, dialect_2025: bool) -> str | None:
        """Open the connection before ``negotiate`` where needed; the protocol version if it did."""
        ...

    def server_identity(self, session: Any) -> tuple[str | None, str | None]: ...

    def is_modern(self, version: str | None) -> bool:
        """Whether ``version`` is a 2026-era (``server/discover``) protocol version."""
        ...

    async def list_tools(self, session: Any) -> list[dict[str, Any]]: ...

    def result_wire(self, result: Any) -> dict[str, Any]: ...

    def jsonrpc_error_of(self, error: BaseException) -> tuple[int, str] | None:
        """(code, message) when ``error`` is the SDK's exception for a JSON-RPC error answer."""
        ...

    def connection_closed(self, error: BaseException) -> bool: ...

    def jsonrpc_exception(self, code: int, message: str) -> Exception:
        """What a tool raises to answer with a JSON-RPC error."""
        ...

    def elicitation_callback(self, answer: Answerer) -> Any: ...
