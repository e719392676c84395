"""The project's own server (``ServerTasks``) for client interop tests, built with the testing kit.

:func:`project_toolset` is the client tests' script as a :class:`~mcp_tasks_compat.testing.ToolSet`;
the kit serves it the documented way (mcp 1.x: ``FastMCP`` with ``tasks.install(server)``; mcp 2.x:
``MCPServer(**tasks.mcpserver_kwargs())``, which serves both dialects). ``test_project_server.py``
gets it through the kit's fixtures; :mod:`._harness` through :func:`build_project_server`.
"""

from __future__ import annotations

from typing import Any

import anyio

from mcp_tasks_compat._detect import sdk_info
from mcp_tasks_compat.dialects import TaskSupport
from mcp_tasks_compat.server import report_status
from mcp_tasks_compat.testing import ToolSet, build_task_server

from ._script import Script

TOOLS: dict[str, TaskSupport] = {
    "gated": "optional",
    "tool_error": "optional",
    "hang": "optional",
    "echo": "forbidden",
}
SERVER_NAME = "client-tests-project-server"


def project_toolset(script: Script) -> ToolSet:
    """The script's tools: ``gated`` waits for ``script.release``; ``tool_error`` raises a ToolError."""
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

    tools = {"gated": gated, "tool_error": tool_error, "hang": hang, "echo": echo}
    return ToolSet(tools=tools, support=TOOLS, name=SERVER_NAME)


def build_project_server(script: Script) -> Any:
    return build_task_server(project_toolset(script))
