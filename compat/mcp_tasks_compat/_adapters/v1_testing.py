"""mcp 1.x part of the testing kit: a ``FastMCP`` serving a tool set with tasks installed.

Used only through :mod:`mcp_tasks_compat._testkit`, which picks this module or :mod:`.v2_testing`
by the installed major. Serving it (in memory, stdio, streamable HTTP) reuses
:mod:`.example_server`, which works on any server this module builds.
"""

from __future__ import annotations

import warnings
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, TextIO

from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.server.fastmcp import FastMCP
from mcp.shared.exceptions import McpError
from mcp.types import ErrorData

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
) -> FastMCP[Any]:
    """A ``FastMCP`` with ``tools`` and ``ServerTasks(tools=support).install(server)`` (2025-11-25).

    ``host`` is where it will listen over HTTP (FastMCP derives DNS-rebinding protection from it).
    """
    with warnings.catch_warnings():
        # mcp 1.23-1.2x with a newer pydantic-settings: noise about FastMCP's own settings model.
        warnings.filterwarnings("ignore", message=r"Field 'lifespan' has an incomplete definition")
        server: FastMCP[Any] = FastMCP(name, host=host, log_level="WARNING")
    for tool_name, tool in tools.items():
        server.tool(name=tool_name)(tool)
    ServerTasks(tools=dict(support), **dict(server_tasks_options)).install(server)
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
    """What a tool raises to answer a JSON-RPC error (``FastMCP`` still reports it as ``isError``)."""
    return McpError(ErrorData(code=code, message=message))
