"""The example server of ``mcp-tasks-compat example-server`` and ``demo``, on either SDK major.

Building and running the server is SDK-specific, so it lives with the adapters: this module
imports no ``mcp`` itself and hands each step to :mod:`.v1_cli` (``FastMCP`` plus
``ServerTasks(...).install(server)``) or :mod:`.v2_cli` (``MCPServer(name,
**tasks.mcpserver_kwargs())``, serving both dialects), picked by ``sdk_info().major``.
Streamable HTTP is served by uvicorn on a socket bound here, so ``port=0`` can pick a free port
and the URL is known before the first request.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from types import ModuleType
from typing import Any, Final

import anyio

from .._detect import sdk_info
from ..errors import UnsupportedSdkError

__all__ = [
    "SERVER_NAME",
    "build_example_server",
    "in_memory_streams",
    "serve_http",
    "serve_stdio",
    "url_for",
]

SERVER_NAME: Final = "mcp-tasks-compat-example"
HTTP_PATH: Final = "/mcp"


def _impl() -> ModuleType:
    if sdk_info().major == 1:
        from . import v1_cli

        return v1_cli
    from . import v2_cli

    return v2_cli


def build_example_server(*, name: str = SERVER_NAME, host: str = "127.0.0.1") -> Any:
    """``FastMCP`` (mcp 1.x) or ``MCPServer`` (mcp 2.x) with the example tools, tasks enabled.

    ``host`` is where it will listen over HTTP (the SDKs derive DNS-rebinding protection from it).
    """
    impl = _impl()
    if sdk_info().major == 1:
        return impl.build_example_server(name, host=host)
    return impl.build_example_server(name)


async def serve_stdio(server: Any) -> None:
    """Serve ``server`` on stdin/stdout until the client closes stdin."""
    await _impl().serve_stdio(server)


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


async def serve_http(server: Any, *, host: str, port: int, on_listening: Callable[[str], None]) -> None:
    """Serve ``server`` over streamable HTTP at ``http://host:port/mcp`` until stopped (SIGINT/SIGTERM).

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
    config = uvicorn.Config(_impl().http_app(server, host), log_level="warning", lifespan="on")
    http_server = uvicorn.Server(config)
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


@asynccontextmanager
async def in_memory_streams(server: Any) -> AsyncGenerator[tuple[Any, Any], None]:
    """Client (read, write) streams to ``server`` running in-process over JSON-RPC memory streams."""
    async with _impl().in_memory_streams(server) as streams:
        yield streams
