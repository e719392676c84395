"""docs/integrations.md's recipes, run as printed against real framework objects (no model).

Run by ``nox -s integrations`` (not the default run): it installs google-adk and openai-agents
from PyPI beside one mcp release per major. Each test drives the framework's own MCP tool object
over stdio to ``render_server.py``, whose ``encode`` tool is task-required: its answer proves the
framework's call ran as a task through this library.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.doc_blocks import run_doc_block

pytestmark = pytest.mark.anyio

SERVER = str(Path(__file__).with_name("render_server.py"))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_google_adk_recipe() -> None:
    from google.adk.agents import LlmAgent
    from google.adk.agents.invocation_context import InvocationContext
    from google.adk.sessions import InMemorySessionService
    from google.adk.tools.mcp_tool import McpToolset, StdioConnectionParams
    from google.adk.tools.tool_context import ToolContext
    from mcp import StdioServerParameters

    run_doc_block("docs/integrations.md", "google-adk")
    progress: list[str | None] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message)

    params = StdioConnectionParams(
        server_params=StdioServerParameters(command=sys.executable, args=[SERVER]), timeout=30
    )
    toolset = McpToolset(connection_params=params, progress_callback=on_progress)
    try:
        tools = {tool.name: tool for tool in await toolset.get_tools()}
        assert set(tools) == {"encode", "render"}
        sessions = InMemorySessionService()
        session = await sessions.create_session(app_name="recipes", user_id="tester")
        agent = LlmAgent(name="recipes", model="gemini-2.0-flash", tools=[toolset])  # never called
        context = ToolContext(
            InvocationContext(session_service=sessions, invocation_id="call-1", agent=agent, session=session)
        )
        encoded = await tools["encode"].run_async(args={"frames": 2}, tool_context=context)
        assert encoded["isError"] is False, encoded
        assert encoded["content"][0]["text"].startswith("encoded 2 frames in task ")
        assert progress[-1] == "frame 2/2"  # the task's statuses, through ADK's progress callback
        rendered = await tools["render"].run_async(args={"frames": 1}, tool_context=context)
        assert rendered["content"][0]["text"] == "rendered 1 frames as a task"
    finally:
        await toolset.close()


async def test_openai_agents_recipe() -> None:
    from agents import Agent, RunContextWrapper
    from agents.mcp import MCPUtil
    from agents.tool_context import ToolContext

    recipe = run_doc_block("docs/integrations.md", "openai-agents")
    server_class: Any = recipe["TaskMCPServerStdio"]
    async with server_class(params={"command": sys.executable, "args": [SERVER]}) as server:
        direct = await server.call_tool("encode", {"frames": 2})
        assert direct.content[0].text.startswith("encoded 2 frames in task ")
        agent = Agent(name="recipes", mcp_servers=[server])  # no model is ever called
        tools = await MCPUtil.get_function_tools(server, False, RunContextWrapper(context=None), agent)
        by_name = {tool.name: tool for tool in tools}
        arguments = json.dumps({"frames": 3})
        context = ToolContext(
            context=None, tool_name="encode", tool_call_id="call-1", tool_arguments=arguments
        )
        output = await by_name["encode"].on_invoke_tool(context, arguments)
        assert "encoded 3 frames in task " in str(output)
