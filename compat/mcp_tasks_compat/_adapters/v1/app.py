"""mcp 1.x app facet: serving the server the command line and the testing kit run (stdio,
streamable HTTP, in memory), and the client plumbing they use (transports, handshake, listing
tools, answers as wire JSON).

That server is the builder facet's ``FastMCP`` (:mod:`.builder`, ``TaskServer``'s) with tasks
installed by :func:`.server.install`: the 2025-11-25 dialect, the only one mcp 1.x speaks. What
both majors share is in :mod:`..shared`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, cast

import anyio
import httpx
import mcp.types as types
from mcp.client.session import ClientSession
from mcp.server.fastmcp import FastMCP
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import McpError
from mcp.shared.memory import create_client_server_memory_streams

from ..._client.protocols import read_error_code
from ..base import Answerer, Streams
from ..shared import form_answer, serve_asgi
from ..shared import open_session as open_session  # the same on both majors
from ..shared import stdio_streams as stdio_streams
from .client import initialize_answer, keep_initialize_answer
from .client import list_tools as list_tools  # the client facet's, as wire JSON
from .server import lowlevel_server_of

# --- the server ---------------------------------------------------------------------------------


async def serve_stdio(server: Any) -> None:
    await cast("FastMCP[Any]", server).run_stdio_async()


def http_app(server: Any, host: str) -> Any:
    """The streamable HTTP ASGI app (its lifespan runs the session manager); ``host`` was set at build."""
    del host
    return cast("FastMCP[Any]", server).streamable_http_app()


async def serve_http(server: Any, *, host: str, port: int, on_listening: Callable[[str], None]) -> None:
    """Serve ``server`` over streamable HTTP at ``http://host:port/mcp`` until stopped."""
    await serve_asgi(http_app(server, host), host=host, port=port, on_listening=on_listening)


def _is_server(candidate: object) -> bool:
    """Whether ``connect_in_memory`` can serve ``candidate`` (a check that leaves its type alone)."""
    return isinstance(candidate, (Server, FastMCP))


@asynccontextmanager
async def in_memory_streams(server: Any) -> AsyncGenerator[Streams, None]:
    """Real JSON-RPC over the SDK's memory streams, the server's ``run`` in a task group."""
    if not _is_server(server):
        raise TypeError(
            f"connect_in_memory on mcp 1.x takes a TaskServer, a mcp.server.fastmcp.FastMCP "
            f"or a low-level mcp.server.lowlevel.Server, not {type(server).__name__}"
        )
    lowlevel = lowlevel_server_of(server)
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


# --- client plumbing ----------------------------------------------------------------------------


@asynccontextmanager
async def http_streams(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    auth: Any = None,
    on_response: Callable[[Any], Awaitable[None]] | None = None,
) -> AsyncGenerator[Streams, None]:
    """``streamable_http_client`` (1.24+) on an ``httpx.AsyncClient`` built here with ``headers``,
    ``auth`` (an ``httpx.Auth``) and the ``on_response`` hook, else ``streamablehttp_client``
    (deprecated later, same yield) with the same client from its factory."""
    from mcp.client import streamable_http
    from mcp.shared._httpx_utils import create_mcp_http_client  # pyright: ignore[reportPrivateUsage]

    def client(
        headers: dict[str, str] | None = None, timeout: Any = None, auth: Any = None
    ) -> httpx.AsyncClient:
        made = create_mcp_http_client(headers=headers, timeout=timeout, auth=auth)
        if on_response is not None:
            made.event_hooks = {"request": [], "response": [on_response]}
        return made

    given = dict(headers) if headers else None
    newer, older = "streamable_http_client", "streamablehttp_client"  # by name: the older one is deprecated
    async with AsyncExitStack() as stack:
        if hasattr(streamable_http, newer):
            http = await stack.enter_async_context(client(headers=given, auth=auth))
            transport = getattr(streamable_http, newer)(url, http_client=http)
        else:
            transport = getattr(streamable_http, older)(
                url, headers=given, auth=auth, httpx_client_factory=client
            )
        streams = await stack.enter_async_context(transport)
        read, write = streams[0], streams[1]
        yield read, write


async def handshake(session: ClientSession, *, dialect_2025: bool) -> str | None:
    """Send ``initialize`` ourselves (1.x has only this handshake) and keep what it answered.

    ``negotiate`` then reuses the open connection; mcp 1.x keeps neither the protocol version nor
    ``serverInfo``, so the answer is kept on the session (``Negotiated.protocol_version`` and
    :func:`server_identity` read it). Every 1.x connection is a 2025-11-25 one.
    """
    del dialect_2025
    result = await session.initialize()
    keep_initialize_answer(session, result)
    return str(result.protocolVersion)


def server_identity(session: ClientSession) -> tuple[str | None, str | None]:
    answer = initialize_answer(session)
    if answer is None:
        return None, None
    return answer.serverInfo.name, answer.serverInfo.version


def is_modern(version: str | None) -> bool:
    """mcp 1.x speaks only handshake-era protocol versions."""
    del version
    return False


def result_wire(result: Any) -> dict[str, Any]:
    """A ``CallToolResult`` as wire JSON."""
    if isinstance(result, types.CallToolResult):
        return result.model_dump(by_alias=True, mode="json", exclude_none=True)
    raise TypeError(f"expected a CallToolResult, got {type(result).__name__}")


def jsonrpc_error_of(error: BaseException) -> tuple[int, str] | None:
    """(code, message) of a JSON-RPC error answer the SDK raised, else ``None``."""
    if isinstance(error, McpError) and error.error.code != types.CONNECTION_CLOSED:
        data = error.error
        return read_error_code(data.code, data.message, data.data), data.message
    return None


def connection_closed(error: BaseException) -> bool:
    return isinstance(error, McpError) and error.error.code == types.CONNECTION_CLOSED


def jsonrpc_exception(code: int, message: str) -> Exception:
    """What a tool raises to answer a JSON-RPC error (``FastMCP`` still reports it as ``isError``)."""
    return McpError(types.ErrorData(code=code, message=message))


def elicitation_callback(answer: Answerer) -> Any:
    """A 1.x elicitation callback: ``answer``'s content accepted, or its reason as a JSON-RPC error."""

    async def callback(
        context: Any, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        del context
        given = await form_answer(answer, params.message, getattr(params, "requestedSchema", None))
        if isinstance(given, str):
            return types.ErrorData(code=types.INVALID_REQUEST, message=given)
        return types.ElicitResult(action="accept", content=dict(given))

    return callback
