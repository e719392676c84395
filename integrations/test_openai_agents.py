"""openai-agents 0.24 (mcp 1.x and 2.x): the shipped adapter's server classes, the framework's own tool
objects, no model.

openai-agents has no progress channel for a tool call, so only the task and its cancel are checked.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from tests.doc_blocks import run_doc_block

from integrations.records import Records, cancel_once_running

pytestmark = pytest.mark.anyio


@pytest.fixture
async def server(records: Records) -> AsyncIterator[Any]:
    recipe = run_doc_block("docs/integrations.md", "openai-agents")
    server_class: Any = recipe["TaskMCPServerStdio"]
    # The framework's default read timeout (client_session_timeout_seconds=5) bounds each request,
    # not the task: a 6 s tool, which times out without the library, completes.
    params = {"command": records.command, "args": records.args}
    async with server_class(params=params) as server:
        yield server


async def test_a_call_outlives_the_read_timeout_as_a_task(server: Any, records: Records) -> None:
    assert server.client_session_timeout_seconds == 5
    direct = await server.call_tool("encode", {"frames": 3, "seconds": 6.0})
    assert direct.content[0].text == f"encoded 3 frames in task {records.finished_task('encode')}"


async def test_the_agents_function_tool_runs_a_task(server: Any, records: Records) -> None:
    from agents import Agent, RunContextWrapper
    from agents.mcp import MCPUtil
    from agents.tool_context import ToolContext

    agent = Agent(name="recipes", mcp_servers=[server])  # no model is ever called
    tools = await MCPUtil.get_function_tools(server, False, RunContextWrapper(context=None), agent)
    encode = {tool.name: tool for tool in tools}["encode"]
    arguments = json.dumps({"frames": 2, "seconds": 0.5})
    context = ToolContext(context=None, tool_name="encode", tool_call_id="call-1", tool_arguments=arguments)
    output = await encode.on_invoke_tool(context, arguments)
    assert f"encoded 2 frames in task {records.finished_task('encode')}" in str(output)


async def test_cancelling_the_agents_call_cancels_the_task(server: Any, records: Records) -> None:
    arguments = {"frames": 200, "seconds": 60}
    await cancel_once_running(records, "encode", lambda: server.call_tool("encode", arguments))
