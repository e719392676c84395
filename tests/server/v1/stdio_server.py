"""A low-level mcp 1.x server with tasks installed, served over stdio (spawned by the transport tests).

Usage: ``python stdio_server.py MARKER_FILE``. When ``server.run`` ends, the marker file says
how: ``returned`` or ``raised: <error>``. A script of its own rather than the testing kit's serve
command because the test checks that marker: the kit's server cannot say how ``server.run`` ended.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from mcp_tasks_compat.server import ServerTasks, current_call, report_status

server: Server[Any, Any] = Server("stdio-v1")
ServerTasks(tools={"slow": "optional"}).install(server)


@server.list_tools()
async def list_tools() -> list[types.Tool]:
    schema = {"type": "object", "properties": {"seconds": {"type": "number"}}}
    return [types.Tool(name="slow", inputSchema=schema)]


@server.call_tool()
async def call_tool(name: str, arguments: dict[str, Any]) -> list[types.TextContent]:
    await report_status("step 1/2")
    await anyio.sleep(float(arguments.get("seconds", 0)))  # the server's own work, not synchronisation
    await report_status("step 2/2")
    task = current_call().task
    return [types.TextContent(type="text", text=f"slept as task={task is not None}")]


async def main(marker: Path) -> None:
    try:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    except BaseException as exc:
        await anyio.Path(marker).write_text(f"raised: {exc!r}")
        raise
    await anyio.Path(marker).write_text("returned")


if __name__ == "__main__":
    anyio.run(main, Path(sys.argv[1]))
