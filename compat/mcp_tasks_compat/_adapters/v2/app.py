"""mcp 2.x app facet: serving the server the command line and the testing kit run (stdio,
streamable HTTP, in memory), and the client plumbing they use (transports, handshake, listing
tools, answers as wire JSON).

That server is the builder facet's ``MCPServer`` (:mod:`.builder`, ``TaskServer``'s) built with
:func:`.server.mcpserver_kwargs`, so one server serves both task dialects. What both majors share
is in :mod:`..shared`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer
from mcp.shared._httpx_utils import create_mcp_http_client  # pyright: ignore[reportPrivateUsage]
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CONNECTION_CLOSED,
    INVALID_REQUEST,
    CallToolResult,
    ElicitRequestParams,
    ElicitResult,
    ErrorData,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..._client.protocols import read_error_code
from ..._detect import sdk_info
from ...errors import UnsupportedSdkError
from ..base import Answerer, Streams
from ..shared import form_answer, serve_asgi
from ..shared import open_session as open_session  # the same on both majors
from ..shared import stdio_streams as stdio_streams
from .handshake import list_tools as list_tools  # the client facet's, as wire JSON

# --- the server ---------------------------------------------------------------------------------


async def serve_stdio(server: Any) -> None:
    await server.run_stdio_async()


def http_app(server: Any, host: str) -> Any:
    """The streamable HTTP ASGI app (its own lifespan runs the session manager and our tasks)."""
    return server.streamable_http_app(host=host)


async def serve_http(server: Any, *, host: str, port: int, on_listening: Callable[[str], None]) -> None:
    """Serve ``server`` over streamable HTTP at ``http://host:port/mcp`` until stopped."""
    await serve_asgi(http_app(server, host), host=host, port=port, on_listening=on_listening)


def _is_server(candidate: object) -> bool:
    """Whether ``connect_in_memory`` can serve ``candidate`` (a check that leaves its type alone)."""
    return isinstance(candidate, (Server, MCPServer))


@asynccontextmanager
async def in_memory_streams(server: Any) -> AsyncGenerator[Streams, None]:
    """Real JSON-RPC over the SDK's memory streams (``Server.run``), not the DirectDispatcher.

    ``InMemoryTransport`` lives in a private module; it is probed here rather than assumed.
    """
    if not _is_server(server):
        raise TypeError(
            f"connect_in_memory on mcp 2.x takes a TaskServer, a mcp.server.mcpserver.MCPServer "
            f"or a low-level mcp.server.lowlevel.Server, not {type(server).__name__}"
        )
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


# --- client plumbing ----------------------------------------------------------------------------


@asynccontextmanager
async def http_streams(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    auth: Any = None,
    on_response: Callable[[Any], Awaitable[None]] | None = None,
) -> AsyncGenerator[Streams, None]:
    """``streamable_http_client`` on an ``httpx2.AsyncClient`` built here (the SDK's timeouts) with
    ``headers``, ``auth`` (an ``httpx2.Auth``, e.g. the SDK's ``OAuthClientProvider``) and the
    ``on_response`` hook."""
    client = create_mcp_http_client(headers=dict(headers) if headers else None, auth=auth)
    if on_response is not None:
        client.event_hooks = {"request": [], "response": [on_response]}
    async with client, streamable_http_client(url, http_client=client) as (read, write):
        yield read, write


async def handshake(session: ClientSession, *, dialect_2025: bool) -> str | None:
    """Open the connection with ``initialize`` when a 2025-11-25 connection is wanted; else leave it.

    ``negotiate`` sends ``server/discover`` first; a caller that wants a 2025-11-25 connection to a
    server that also speaks 2026-07-28 opens it with ``initialize`` before, which negotiate keeps.
    Returns the protocol version when it opened the connection.
    """
    if not dialect_2025:
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


def result_wire(result: Any) -> dict[str, Any]:
    """A ``CallToolResult`` as wire JSON."""
    if isinstance(result, CallToolResult):
        return result.model_dump(by_alias=True, mode="json", exclude_none=True)
    raise TypeError(f"expected a CallToolResult, got {type(result).__name__}")


def jsonrpc_error_of(error: BaseException) -> tuple[int, str] | None:
    """(code, message) of a JSON-RPC error answer the SDK raised, else ``None``."""
    if isinstance(error, MCPError) and error.code != CONNECTION_CLOSED:
        return read_error_code(error.code, error.message, error.data), error.message
    return None


def connection_closed(error: BaseException) -> bool:
    return isinstance(error, MCPError) and error.code == CONNECTION_CLOSED


def jsonrpc_exception(code: int, message: str) -> Exception:
    """The exception a tool raises to answer a JSON-RPC error (``MCPServer`` passes it through)."""
    return MCPError(code=code, message=message)


def elicitation_callback(answer: Answerer) -> Any:
    """A 2.x elicitation callback: ``answer``'s content accepted, or its reason as a JSON-RPC error."""

    async def callback(context: Any, params: ElicitRequestParams) -> ElicitResult | ErrorData:
        del context
        given = await form_answer(answer, params.message, getattr(params, "requested_schema", None))
        if isinstance(given, str):
            return ErrorData(code=INVALID_REQUEST, message=given)
        return ElicitResult(action="accept", content=dict(given))

    return callback
