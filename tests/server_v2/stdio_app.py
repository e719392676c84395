"""An mcp 2.x MCPServer with task tools, served over stdio (run as a subprocess by the tests).

``hold`` waits until ``release`` opens its gate, so tests drive task timing by events, not sleeps.
"""

from __future__ import annotations

import anyio
from mcp.server.mcpserver import MCPServer

from mcp_tasks_compat.server import ServerTasks, report_status

tasks = ServerTasks(tools={"hold": "optional", "must": "required"})
server = MCPServer("stdio-tasks", version="1.0", **tasks.mcpserver_kwargs())
gates: dict[str, anyio.Event] = {}


@server.tool()
async def hold(text: str, gate: str = "main") -> str:
    """Wait until ``gate`` is released, then echo."""
    await report_status("holding")
    await gates.setdefault(gate, anyio.Event()).wait()
    return text


@server.tool()
async def release(gate: str = "main") -> str:
    """Let every call held on ``gate`` finish."""
    gates.setdefault(gate, anyio.Event()).set()
    return "released"


@server.tool()
async def must(text: str) -> str:
    """Task-required echo."""
    return text


if __name__ == "__main__":
    server.run("stdio")
