"""The project's own server (``ServerTasks``), built through its public API, for client interop tests.

mcp 1.x: ``FastMCP`` with ``tasks.install(server)``; mcp 2.x: ``MCPServer(**tasks.mcpserver_kwargs())``,
which serves both dialects. The tools mirror the client tests' script.
"""

from __future__ import annotations

from typing import Any

import anyio

from mcp_tasks_compat._detect import sdk_info
from mcp_tasks_compat.server import ServerTasks, report_status

from ._script import Script

TOOLS = {"gated": "optional", "tool_error": "optional", "hang": "optional", "echo": "forbidden"}


def build_project_server(script: Script) -> Any:
    if sdk_info().major == 1:
        from mcp.server.fastmcp.exceptions import ToolError
    else:
        from mcp.server.mcpserver.exceptions import ToolError  # pyright: ignore[reportMissingImports]

    async def gated(label: str) -> str:
        await report_status("started")
        await script.release.wait()
        return f"done {label}"

    async def tool_error() -> str:
        raise ToolError("bad input")

    async def hang() -> str:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def echo(text: str) -> str:
        return text

    tasks = ServerTasks(tools=dict(TOOLS))  # type: ignore[arg-type]
    if sdk_info().major == 1:
        from mcp.server.fastmcp import FastMCP

        server: Any = FastMCP("client-tests-project-server")
        for tool in (gated, tool_error, hang, echo):
            server.tool(name=tool.__name__)(tool)
        tasks.install(server)
        return server
    from mcp.server.mcpserver import MCPServer  # pyright: ignore[reportMissingImports]

    server = MCPServer("client-tests-project-server", **tasks.mcpserver_kwargs())
    for tool in (gated, tool_error, hang, echo):
        server.tool(name=tool.__name__)(tool)
    return server
