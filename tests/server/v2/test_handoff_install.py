"""The plain hand-off on mcp 2.x's other forms (``install`` on a low-level ``Server``,
``mcpserver_kwargs`` on an ``MCPServer``): the task tools are listed as ``TaskServer`` lists them,
and a request that declares the Tasks extension sees no difference (``outputSchema`` kept)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcp_tasks_compat.server import ServerTasks

pytestmark = [pytest.mark.mcp2, pytest.mark.anyio]
pytest.importorskip("mcp.server.mcpserver", reason="needs mcp 2.x (MCPServer)")

import mcp_types as types  # noqa: E402
from mcp.server.context import ServerRequestContext  # noqa: E402

from ..harness import Gate  # noqa: E402
from ._sdk import MCPServer, Server, TaskHandle, declaring_session  # noqa: E402

TASK_TOOL_NAMES = {"task_status", "task_result", "task_cancel", "task_answer"}
DEADLINE_S = 0.3


def lowlevel_server(gate: Gate) -> Server[Any]:
    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name="slow", input_schema={"type": "object"})])

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        gate.started.set()
        await gate.release.wait()
        return types.CallToolResult(content=[types.TextContent(type="text", text="slow done")])

    server = Server("lowlevel-handoff", on_list_tools=list_tools, on_call_tool=call_tool)
    ServerTasks(tools={"slow": "optional"}, plain_handoff_s=DEADLINE_S).install(server)
    return server


def mcpserver(gate: Gate) -> MCPServer:
    tasks = ServerTasks(tools={"slow": "optional"}, plain_handoff_s=DEADLINE_S)
    server = MCPServer("mcpserver-handoff", **tasks.mcpserver_kwargs())

    @server.tool()
    async def slow() -> dict[str, str]:
        gate.started.set()
        await gate.release.wait()
        return {"said": "slow done"}

    return server


def text_of(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


@pytest.mark.parametrize("form", ["lowlevel", "mcpserver"])
async def test_the_task_tools_are_listed_and_serve_a_plain_client(form: str) -> None:
    gate = Gate()
    server = lowlevel_server(gate) if form == "lowlevel" else mcpserver(gate)
    async with declaring_session(server, declare=False) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert set(tools) >= TASK_TOOL_NAMES
        assert tools["task_answer"].input_schema["required"] == ["task_id", "answer"]
        assert tools["slow"].output_schema is None  # a plain client: it may answer a hand-off
        with anyio.fail_after(10):
            first = await session.call_tool("slow", {})
        assert "still running as task" in text_of(first)
        task_id = (first.structured_content or {})["taskId"]
        gate.release.set()
        with anyio.fail_after(10):
            result = await session.call_tool("task_result", {"task_id": task_id})
        assert "slow done" in text_of(result)


async def test_a_request_declaring_the_extension_keeps_the_output_schema() -> None:
    async with declaring_session(mcpserver(Gate()), declare=True) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert tools["slow"].output_schema is not None
        assert set(tools) >= TASK_TOOL_NAMES  # ordinary tools to it
        handle = await session.call_tool("slow", {}, allow_claimed=True)
        assert isinstance(handle, TaskHandle)  # a task as it asked, never a hand-off


async def test_without_the_option_nothing_is_added() -> None:
    server = MCPServer("off", **ServerTasks(tools={"slow": "optional"}).mcpserver_kwargs())

    @server.tool()
    async def slow() -> dict[str, str]:
        return {"said": "quick"}

    async with declaring_session(server, declare=False) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert not set(tools) & TASK_TOOL_NAMES
        assert tools["slow"].output_schema is not None
