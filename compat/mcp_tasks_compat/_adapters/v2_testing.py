"""mcp 2.x part of the testing kit: an ``MCPServer`` serving a tool set in both task dialects.

Used only through :mod:`mcp_tasks_compat._testkit`, which picks this module or :mod:`.v1_testing`
by the installed major. Serving it (in memory, stdio, streamable HTTP) reuses
:mod:`.example_server`, which works on any server this module builds.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, TextIO

from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError

from ..dialects import TaskSupport
from ..server import ServerTasks

__all__ = ["build_server", "jsonrpc_error", "stdio_streams"]


def build_server(
    name: str,
    tools: Mapping[str, Callable[..., Awaitable[Any]]],
    support: Mapping[str, TaskSupport],
    *,
    host: str,
    server_tasks_options: Mapping[str, Any],
) -> MCPServer:
    """An ``MCPServer(name, **ServerTasks(tools=support).mcpserver_kwargs())`` with ``tools`` registered.

    ``host`` is unused here: 2.x takes it when the HTTP app is built (:mod:`.example_server` does).
    """
    del host
    tasks = ServerTasks(tools=dict(support), **dict(server_tasks_options))
    server = MCPServer(name, log_level="WARNING", **tasks.mcpserver_kwargs())
    for tool_name, tool in tools.items():
        server.tool(name=tool_name)(tool)
    return server


@asynccontextmanager
async def stdio_streams(
    command: str, args: Sequence[str], *, errlog: TextIO, env: Mapping[str, str] | None, cwd: str | None
) -> AsyncGenerator[tuple[Any, Any], None]:
    """Spawn ``command args...`` (with ``env`` added to the SDK's safe default environment, in ``cwd``)."""
    params = StdioServerParameters(
        command=command, args=list(args), env=None if env is None else dict(env), cwd=cwd
    )
    async with stdio_client(params, errlog=errlog) as (read, write):
        yield read, write


def jsonrpc_error(code: int, message: str) -> Exception:
    """The exception a tool raises to answer a JSON-RPC error (``MCPServer`` passes it through)."""
    return MCPError(code=code, message=message)
