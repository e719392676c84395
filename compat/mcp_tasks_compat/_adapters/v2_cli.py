"""mcp 2.x pieces of the command line: the example server and the client transports.

Used only through :mod:`.example_server` and :mod:`.cli_client`, which pick this module or
:mod:`.v1_cli` by the installed major. The example server is an ``MCPServer`` built with
``ServerTasks.mcpserver_kwargs()``, so one server serves both task dialects.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, TextIO, cast

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CONNECTION_CLOSED,
    INVALID_REQUEST,
    CallToolResult,
    ElicitRequestParams,
    ElicitResult,
    ErrorData,
    PaginatedRequestParams,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from .._detect import sdk_info
from .._version import __version__
from ..errors import UnsupportedSdkError
from ..examples import EXAMPLE_TASK_SUPPORT, EXAMPLE_TOOLS
from ..server import ServerTasks

__all__ = [
    "build_example_server",
    "connection_closed",
    "elicitation_callback",
    "handshake",
    "http_app",
    "http_streams",
    "in_memory_streams",
    "is_modern",
    "jsonrpc_error",
    "list_tools",
    "open_session",
    "result_wire",
    "serve_stdio",
    "server_identity",
    "stdio_streams",
]

Streams = tuple[Any, Any]


# --- the example server -------------------------------------------------------------------------


def build_example_server(name: str) -> MCPServer:
    """An ``MCPServer`` with the example tools, tasks enabled in both dialects."""
    tasks = ServerTasks(tools=dict(EXAMPLE_TASK_SUPPORT))
    server: MCPServer = MCPServer(name, version=__version__, log_level="WARNING", **tasks.mcpserver_kwargs())
    for tool_name, tool in EXAMPLE_TOOLS.items():
        server.tool(name=tool_name)(tool)
    return server


async def serve_stdio(server: Any) -> None:
    await server.run_stdio_async()


def http_app(server: Any, host: str) -> Any:
    """The streamable HTTP ASGI app (its own lifespan runs the session manager and our tasks)."""
    return server.streamable_http_app(host=host)


@asynccontextmanager
async def in_memory_streams(server: Any) -> AsyncGenerator[Streams, None]:
    """Real JSON-RPC over the SDK's memory streams (``Server.run``), not the DirectDispatcher.

    ``InMemoryTransport`` lives in a private module; it is probed here rather than assumed.
    """
    try:
        from mcp.client._memory import InMemoryTransport  # pyright: ignore[reportPrivateUsage]
    except ImportError as exc:
        raise UnsupportedSdkError(
            f"mcp {sdk_info().mcp_version} has no mcp.client._memory.InMemoryTransport, which the demo "
            "uses to run the example server in-process over JSON-RPC streams; "
            "fix: pip install 'mcp>=2.0,<=2.3' or run example-server and call it over stdio"
        ) from exc
    async with InMemoryTransport(server) as (read, write):
        yield read, write


# --- client transports --------------------------------------------------------------------------


@asynccontextmanager
async def stdio_streams(command: str, args: list[str], errlog: TextIO) -> AsyncGenerator[Streams, None]:
    params = StdioServerParameters(command=command, args=list(args))
    async with stdio_client(params, errlog=errlog) as (read, write):
        yield read, write


@asynccontextmanager
async def http_streams(url: str) -> AsyncGenerator[Streams, None]:
    async with streamable_http_client(url) as (read, write):
        yield read, write


@asynccontextmanager
async def open_session(streams: Streams, kwargs: Mapping[str, Any]) -> AsyncGenerator[ClientSession, None]:
    read, write = streams
    async with ClientSession(read, write, **dict(kwargs)) as session:
        yield session


async def handshake(session: ClientSession, *, legacy: bool) -> str | None:
    """Open the connection in the handshake era (``initialize``) when ``legacy``; else leave it to negotiate.

    ``negotiate`` sends ``server/discover`` first; a caller that wants a 2025-11-25 connection to a
    server that also speaks 2026-07-28 opens it with ``initialize`` before, which negotiate keeps.
    Returns the protocol version when it opened the connection.
    """
    if not legacy:
        return None
    result = await session.initialize()
    return str(result.protocol_version)


def server_identity(session: ClientSession) -> tuple[str | None, str | None]:
    info = session.server_info
    if info is None:
        return None, None
    return info.name, info.version


def is_modern(version: str | None) -> bool:
    """Whether ``version`` is a per-request (``server/discover``) protocol version."""
    return version in MODERN_PROTOCOL_VERSIONS


async def list_tools(session: ClientSession) -> list[dict[str, Any]]:
    """Every tool (all pages) as wire JSON."""
    tools: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        params = PaginatedRequestParams(cursor=cursor) if cursor is not None else None
        listing = await session.list_tools(params=params)
        tools.extend(tool.model_dump(by_alias=True, mode="json", exclude_none=True) for tool in listing.tools)
        cursor = listing.next_cursor
        if not cursor:
            return tools


def result_wire(result: Any) -> dict[str, Any]:
    """A ``CallToolResult`` as wire JSON."""
    if isinstance(result, CallToolResult):
        return result.model_dump(by_alias=True, mode="json", exclude_none=True)
    raise TypeError(f"expected a CallToolResult, got {type(result).__name__}")


def jsonrpc_error(error: BaseException) -> tuple[int, str] | None:
    """(code, message) of a JSON-RPC error answer the SDK raised, else ``None``."""
    if isinstance(error, MCPError) and error.code != CONNECTION_CLOSED:
        return error.code, error.message
    return None


def connection_closed(error: BaseException) -> bool:
    return isinstance(error, MCPError) and error.code == CONNECTION_CLOSED


def elicitation_callback(
    answer: Callable[[str, Mapping[str, Any]], Awaitable[Mapping[str, Any] | str]],
) -> Callable[[Any, ElicitRequestParams], Awaitable[ElicitResult | ErrorData]]:
    """A 2.x elicitation callback: ``answer``'s content accepted, or its reason as a JSON-RPC error."""

    async def callback(context: Any, params: ElicitRequestParams) -> ElicitResult | ErrorData:
        del context
        schema: object = getattr(params, "requested_schema", None)
        if not isinstance(schema, Mapping):
            return ErrorData(code=INVALID_REQUEST, message="only form elicitations can be answered here")
        given = await answer(params.message, cast("Mapping[str, Any]", schema))
        if isinstance(given, str):
            return ErrorData(code=INVALID_REQUEST, message=given)
        return ElicitResult(action="accept", content=dict(given))

    return callback
