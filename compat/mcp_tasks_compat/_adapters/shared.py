"""What the app facets of both majors share, written once.

The SDK seams here have the same name and shape on mcp 1.x and 2.x (``mcp.client.stdio``,
``ClientSession(read, write, **kwargs)``); the rest works on wire JSON or the standard library.
Streamable HTTP is served by uvicorn on a socket bound here, so ``port=0`` can pick a free port
and the URL is known before the first request.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final, TextIO, cast

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from starlette.datastructures import Headers

from .._client.lost import connection_lost
from ..errors import ServerConnectionLostError, UnsupportedSdkError
from .base import Answerer, Streams

__all__ = [
    "HTTP_PATH",
    "DetachedHttpRequest",
    "compact_headers",
    "form_answer",
    "list_all_tools",
    "open_session",
    "serve_asgi",
    "stdio_streams",
    "url_for",
]

HTTP_PATH: Final = "/mcp"


class DetachedHttpRequest:
    """What a task's run keeps of the HTTP request that created it: its headers, nothing else.

    The request object itself holds the ASGI scope, the body and the transport's receive channel,
    which belong to an exchange that ended with the create answer."""

    __slots__ = ("headers",)

    def __init__(self, headers: Any) -> None:
        self.headers = headers


_SHARED_HEADER_PAIRS: dict[tuple[bytes, bytes], tuple[bytes, bytes]] = {}
_MAX_SHARED_HEADER_PAIRS = 4096
"""Bounds the table: a header value unique per request (a trace id) is kept, not shared."""


def _shared_pair(pair: tuple[bytes, bytes]) -> tuple[bytes, bytes]:
    shared = _SHARED_HEADER_PAIRS.get(pair)
    if shared is not None:
        return shared
    if len(_SHARED_HEADER_PAIRS) < _MAX_SHARED_HEADER_PAIRS:
        _SHARED_HEADER_PAIRS[pair] = pair
    return pair


def compact_headers(headers: Any) -> Any:
    """The same headers (starlette's immutable ``Headers``) whose ``(name, value)`` pairs are shared
    with earlier requests that sent the same ones: thousands of tasks from one client keep one
    copy of its ``user-agent``, ``accept`` and ``mcp-protocol-version``, not one each.

    Anything else (no headers, another transport's type) is returned as it is.
    """
    if type(headers) is not Headers:
        return headers
    return Headers(raw=[_shared_pair(pair) for pair in headers.raw])


@asynccontextmanager
async def stdio_streams(
    command: str,
    args: Sequence[str],
    *,
    errlog: TextIO,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
) -> AsyncGenerator[Streams, None]:
    """Spawn ``command args...`` (``env`` added to the SDK's safe default environment, in ``cwd``)."""
    params = StdioServerParameters(
        command=command, args=list(args), env=None if env is None else dict(env), cwd=cwd
    )
    block = "not entered"
    try:
        async with stdio_client(params, errlog=errlog) as (read, write):
            try:
                yield read, write
            except BaseException as exc:
                block = "cancelled" if isinstance(exc, anyio.get_cancelled_exc_class()) else "raised"
                raise
            block = "finished"
    except Exception as error:
        # The server process died: the SDK's stdin writer raises on the dead pipe
        # (BrokenResourceError) in stdio_client's task group, which cancels the block if it is still
        # running. A block that ended by itself has seen all it needs (the calls in it got their
        # typed errors); one the SDK cancelled gets the typed error here, not the raw group. What
        # the block raised itself, or a server that never started, goes out as it is.
        cause = connection_lost(error) if block in ("finished", "cancelled") else None
        if cause is None:
            raise
        if block == "cancelled":
            raise ServerConnectionLostError(
                task_id=None,
                dialect=None,
                cause=cause,
                during=f"when the stdio server process ({command}) ended while the session was in use",
            ) from error


@asynccontextmanager
async def open_session(streams: Streams, kwargs: Mapping[str, Any]) -> AsyncGenerator[ClientSession, None]:
    """A ``ClientSession`` on ``streams`` built with ``kwargs`` (usually ``session_kwargs(...)``)."""
    read, write = streams
    async with ClientSession(read, write, **dict(kwargs)) as session:
        yield session


async def list_all_tools(
    list_page: Callable[[str | None], Awaitable[Mapping[str, Any]]],
) -> list[dict[str, Any]]:
    """Every tool, following ``nextCursor``; ``list_page(cursor)`` answers one page as wire JSON."""
    tools: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        page = await list_page(cursor)
        tools.extend(page.get("tools") or [])
        cursor = page.get("nextCursor")
        if not cursor:
            return tools


async def form_answer(answer: Answerer, message: str, schema: object) -> Mapping[str, Any] | str:
    """What ``answer`` says to a form elicitation, or why it cannot be answered (a URL elicitation)."""
    if not isinstance(schema, Mapping):
        return "only form elicitations can be answered here"
    return await answer(message, cast("Mapping[str, Any]", schema))


def url_for(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{HTTP_PATH}"


def _bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host``:``port`` (``0``: a free port)."""
    family, kind, proto, _name, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


async def serve_asgi(app: Any, *, host: str, port: int, on_listening: Callable[[str], None]) -> None:
    """Serve a streamable HTTP ASGI ``app`` at ``http://host:port/mcp`` until stopped (SIGINT/SIGTERM).

    ``on_listening(url)`` is called once uvicorn has started (the app's lifespan is up), with the
    port actually bound.
    """
    try:
        import uvicorn
    except ImportError as exc:  # mcp depends on uvicorn, but some installs leave it out
        raise UnsupportedSdkError(
            "example-server --transport http needs uvicorn; fix: pip install 'mcp-tasks-compat[http]'"
        ) from exc
    sock = _bind(host, port)
    bound_port = int(sock.getsockname()[1])
    http_server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    try:
        async with anyio.create_task_group() as group:

            async def announce() -> None:
                while not http_server.started:
                    if http_server.should_exit:
                        return
                    await anyio.sleep(0.01)  # uvicorn offers a flag, not an event
                on_listening(url_for(host, bound_port))

            group.start_soon(announce)
            await http_server.serve(sockets=[sock])
            group.cancel_scope.cancel()
    finally:
        sock.close()
