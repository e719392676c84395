"""mcp 1.x pieces of the command line: the example server and the client transports.

Used only through :mod:`.example_server` and :mod:`.cli_client`, which pick this module or
:mod:`.v2_cli` by the installed major. The example server is a ``FastMCP`` with
``ServerTasks(...).install(server)``: the 2025-11-25 dialect, the only one mcp 1.x speaks.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, TextIO, cast

import anyio
import mcp.types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.server.fastmcp import FastMCP
from mcp.server.lowlevel.server import Server
from mcp.shared.exceptions import McpError
from mcp.shared.memory import create_client_server_memory_streams

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

_IDENTITY_ATTRIBUTE = "_mcp_tasks_compat_server_info"
"""Where :func:`handshake` keeps the ``initialize`` answer on the session (1.x does not keep it)."""


# --- the example server -------------------------------------------------------------------------


def build_example_server(name: str, *, host: str = "127.0.0.1") -> FastMCP[Any]:
    """A ``FastMCP`` with the example tools, tasks installed (2025-11-25)."""
    with warnings.catch_warnings():
        # mcp 1.23-1.2x with a newer pydantic-settings: noise about FastMCP's own settings model.
        warnings.filterwarnings("ignore", message=r"Field 'lifespan' has an incomplete definition")
        server: FastMCP[Any] = FastMCP(name, host=host, log_level="WARNING")
    for tool_name, tool in EXAMPLE_TOOLS.items():
        server.tool(name=tool_name)(tool)
    ServerTasks(tools=dict(EXAMPLE_TASK_SUPPORT)).install(server)
    lowlevel = _lowlevel(server)
    lowlevel.version = __version__  # FastMCP takes no version; without it serverInfo reports mcp's own
    return server


def _lowlevel(server: FastMCP[Any]) -> Server[Any, Any]:
    lowlevel: object = getattr(server, "_mcp_server", None)
    if not isinstance(lowlevel, Server):
        raise UnsupportedSdkError(
            f"mcp {sdk_info().mcp_version}: FastMCP has no _mcp_server (its low-level Server), which the "
            "example server runs in-process; fix: pip install 'mcp>=1.23,<=1.30'"
        )
    return cast("Server[Any, Any]", lowlevel)


async def serve_stdio(server: Any) -> None:
    await cast("FastMCP[Any]", server).run_stdio_async()


def http_app(server: Any, host: str) -> Any:
    """The streamable HTTP ASGI app (its lifespan runs the session manager); ``host`` was set at build."""
    del host
    return cast("FastMCP[Any]", server).streamable_http_app()


@asynccontextmanager
async def in_memory_streams(server: Any) -> AsyncGenerator[Streams, None]:
    """Real JSON-RPC over the SDK's memory streams, the server's ``run`` in a task group."""
    lowlevel = _lowlevel(cast("FastMCP[Any]", server))
    async with (
        create_client_server_memory_streams() as (client_streams, server_streams),
        anyio.create_task_group() as group,
    ):
        server_read, server_write = server_streams
        group.start_soon(lowlevel.run, server_read, server_write, lowlevel.create_initialization_options())
        try:
            yield client_streams
        finally:
            group.cancel_scope.cancel()


# --- client transports --------------------------------------------------------------------------


@asynccontextmanager
async def stdio_streams(command: str, args: list[str], errlog: TextIO) -> AsyncGenerator[Streams, None]:
    params = StdioServerParameters(command=command, args=list(args))
    async with stdio_client(params, errlog=errlog) as (read, write):
        yield read, write


@asynccontextmanager
async def http_streams(url: str) -> AsyncGenerator[Streams, None]:
    """``streamable_http_client`` (1.24+), else ``streamablehttp_client`` (deprecated later, same yield)."""
    from mcp.client import streamable_http

    names = ("streamable_http_client", "streamablehttp_client")  # by name: the older one is deprecated
    connect: Any = next(getattr(streamable_http, name) for name in names if hasattr(streamable_http, name))
    async with connect(url) as streams:
        read, write = streams[0], streams[1]
        yield read, write


@asynccontextmanager
async def open_session(streams: Streams, kwargs: Mapping[str, Any]) -> AsyncGenerator[ClientSession, None]:
    read, write = streams
    async with ClientSession(read, write, **dict(kwargs)) as session:
        yield session


async def handshake(session: ClientSession, *, legacy: bool) -> str | None:
    """Send ``initialize`` ourselves (1.x has only this handshake) and keep what it answered.

    ``negotiate`` then reuses the open connection; mcp 1.x keeps neither the protocol version nor
    ``serverInfo``, so both are read here.
    """
    del legacy
    result = await session.initialize()
    with contextlib.suppress(AttributeError):
        setattr(session, _IDENTITY_ATTRIBUTE, result.serverInfo)
    return str(result.protocolVersion)


def server_identity(session: ClientSession) -> tuple[str | None, str | None]:
    info: object = getattr(session, _IDENTITY_ATTRIBUTE, None)
    if not isinstance(info, types.Implementation):
        return None, None
    return info.name, info.version


def is_modern(version: str | None) -> bool:
    """mcp 1.x speaks only handshake-era protocol versions."""
    del version
    return False


async def list_tools(session: ClientSession) -> list[dict[str, Any]]:
    """Every tool (all pages) as wire JSON."""
    tools: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        params = types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
        listing = await session.list_tools(params=params)
        tools.extend(tool.model_dump(by_alias=True, mode="json", exclude_none=True) for tool in listing.tools)
        cursor = listing.nextCursor
        if not cursor:
            return tools


def result_wire(result: Any) -> dict[str, Any]:
    """A ``CallToolResult`` as wire JSON."""
    if isinstance(result, types.CallToolResult):
        return result.model_dump(by_alias=True, mode="json", exclude_none=True)
    raise TypeError(f"expected a CallToolResult, got {type(result).__name__}")


def jsonrpc_error(error: BaseException) -> tuple[int, str] | None:
    """(code, message) of a JSON-RPC error answer the SDK raised, else ``None``."""
    if isinstance(error, McpError) and error.error.code != types.CONNECTION_CLOSED:
        return error.error.code, error.error.message
    return None


def connection_closed(error: BaseException) -> bool:
    return isinstance(error, McpError) and error.error.code == types.CONNECTION_CLOSED


def elicitation_callback(
    answer: Callable[[str, Mapping[str, Any]], Awaitable[Mapping[str, Any] | str]],
) -> Callable[[Any, types.ElicitRequestParams], Awaitable[types.ElicitResult | types.ErrorData]]:
    """A 1.x elicitation callback: ``answer``'s content accepted, or its reason as a JSON-RPC error."""

    async def callback(
        context: Any, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        del context
        schema: object = getattr(params, "requestedSchema", None)
        if not isinstance(schema, Mapping):
            return types.ErrorData(
                code=types.INVALID_REQUEST, message="only form elicitations can be answered here"
            )
        given = await answer(params.message, cast("Mapping[str, Any]", schema))
        if isinstance(given, str):
            return types.ErrorData(code=types.INVALID_REQUEST, message=given)
        return types.ElicitResult(action="accept", content=dict(given))

    return callback
