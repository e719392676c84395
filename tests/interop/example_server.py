"""The example tools served in-process by this library on the installed SDK major, for the peers.

Built only through the public API (``ServerTasks`` with ``install`` on mcp 1.x ``FastMCP``,
``mcpserver_kwargs`` on mcp 2.x ``MCPServer``), the way a user would, and served over streamable
HTTP on 127.0.0.1 inside the test's event loop. Over stdio the tests spawn the real command-line
server instead (:data:`CLI_STDIO_SERVER`).
"""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio

from mcp_tasks_compat._detect import sdk_info
from mcp_tasks_compat.examples import EXAMPLE_TASK_SUPPORT, EXAMPLE_TOOLS
from mcp_tasks_compat.server import ServerTasks

__all__ = ["CLI_STDIO_SERVER", "SERVER_NAME", "SeenRequest", "build_example_server", "serve_http"]

SERVER_NAME = "mcp-tasks-compat-interop"

CLI_STDIO_SERVER = [sys.executable, "-m", "mcp_tasks_compat", "example-server", "--transport", "stdio"]
"""``mcp-tasks-compat example-server`` over stdio with this interpreter (same tools, same support)."""


def build_example_server(**server_tasks_options: Any) -> Any:
    """FastMCP (1.x) or MCPServer (2.x) with the example tools, tasks enabled."""
    tasks = ServerTasks(tools=dict(EXAMPLE_TASK_SUPPORT), **server_tasks_options)
    if sdk_info().major == 1:
        from mcp.server.fastmcp import FastMCP

        server: Any = FastMCP(SERVER_NAME)
        _add_tools(server)
        tasks.install(server)
        return server
    from mcp.server.mcpserver import MCPServer  # pyright: ignore[reportMissingImports]

    server = MCPServer(SERVER_NAME, **tasks.mcpserver_kwargs())
    _add_tools(server)
    return server


def _add_tools(server: Any) -> None:
    for name, tool in EXAMPLE_TOOLS.items():
        server.tool(name=name)(tool)


def _listening_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    return sock


@dataclass(frozen=True)
class SeenRequest:
    """One JSON-RPC request POSTed to the server: its method, params and ``mcp-*`` headers."""

    method: str
    params: dict[str, Any]
    headers: dict[str, str]


def _recording(app: Any, seen: list[SeenRequest]) -> Any:
    """ASGI wrapper that notes each POSTed JSON-RPC request, then replays the body to ``app``."""

    async def wrapped(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        headers = {
            name.decode("latin-1").lower(): value.decode("latin-1")
            for name, value in scope["headers"]
            if name.lower().startswith(b"mcp-")
        }
        try:
            decoded = json.loads(body)
        except ValueError:
            decoded = None
        for item in decoded if isinstance(decoded, list) else [decoded]:
            if isinstance(item, dict) and isinstance(item.get("method"), str):
                params = item.get("params")
                seen.append(SeenRequest(item["method"], params if isinstance(params, dict) else {}, headers))
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await app(scope, replay, send)

    return wrapped


@asynccontextmanager
async def serve_http(server: Any, *, seen: list[SeenRequest] | None = None) -> AsyncIterator[str]:
    """Serve ``server`` over streamable HTTP on 127.0.0.1 (free port) for the block; yield its URL.

    The socket is bound and listening before the block starts, so a client may connect at once:
    its connection waits in the backlog until uvicorn accepts it. ``seen`` collects every
    JSON-RPC request the server receives (method, params, ``mcp-*`` headers).
    """
    import uvicorn

    sock = _listening_socket()
    port = sock.getsockname()[1]
    app = server.streamable_http_app()
    if seen is not None:
        app = _recording(app, seen)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    http_server = uvicorn.Server(config)
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(http_server.serve, [sock])
            try:
                yield f"http://127.0.0.1:{port}/mcp"
            finally:
                http_server.should_exit = True
    finally:
        sock.close()
