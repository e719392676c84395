"""A plain answer is checked against the tool's declared output schema, as ``ClientSession.call_tool``
checks it, whichever mode sends the call (mcp 2.x, 2026-07-28)."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_tasks_compat.client import call_tool
from mcp_tasks_compat.server import ServerTasks
from mcp_tasks_compat.testing import connect_in_memory

pytestmark = [pytest.mark.anyio, pytest.mark.mcp2]
pytest.importorskip("mcp.server.mcpserver", reason="needs mcp 2.x (MCPServer)")

import mcp_types as types  # noqa: E402
from mcp.server.context import ServerRequestContext  # noqa: E402
from mcp.server.lowlevel.server import Server  # noqa: E402

COUNT = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def build() -> Server[Any]:
    """A low-level server, which (unlike MCPServer) sends a structured result as its tool gave it."""

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(name=name, input_schema={"type": "object"}, output_schema=COUNT)
                for name in ("off_schema", "on_schema")
            ]
        )

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        n: object = "many" if params.name == "off_schema" else 3
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=str(n))], structured_content={"n": n}
        )

    server: Server[Any] = Server("output-schema", on_list_tools=list_tools, on_call_tool=call_tool)
    ServerTasks(tools={}).install(server)
    return server


@pytest.mark.parametrize("mode", ["plain", "auto"])
async def test_a_result_off_its_output_schema_is_refused_as_the_sdk_refuses_it(mode: str) -> None:
    async with connect_in_memory(build(), dialect="2026-07-28") as session:
        with pytest.raises(RuntimeError) as sdk:
            await session.call_tool("off_schema", {})
        with pytest.raises(RuntimeError) as ours:
            await call_tool(session, "off_schema", {}, mode=mode)
        assert str(ours.value) == str(sdk.value)
        result = await call_tool(session, "on_schema", {}, mode=mode)
        assert result.structured_content == {"n": 3}
