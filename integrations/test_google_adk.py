"""google-adk 2.13 (mcp 1.x and 2.x): docs/integrations.md's recipe, ADK's own MCP tool objects, no model.

On mcp 2.x the tests set ``ADK_ENABLE_MCP_MODERN_PROTOCOL=1`` as the page recommends, so ADK
opens the session with ``server/discover`` and the library runs the Tasks extension (pushed
states, no polling); without it ADK sends ``initialize`` and the call runs as a 2025-11-25 task.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from tests.doc_blocks import run_doc_block

from integrations.records import MCP_MAJOR, Records, assert_progress, cancel_once_running

pytestmark = pytest.mark.anyio


@pytest.fixture
def modern_protocol() -> bool:
    """Whether ADK's modern-protocol flag is set (the page recommends it on mcp 2.x)."""
    return True


@pytest.fixture
async def adk_tools(
    records: Records, monkeypatch: pytest.MonkeyPatch, modern_protocol: bool
) -> AsyncIterator[dict[str, Any]]:
    from google.adk.agents import LlmAgent
    from google.adk.agents.invocation_context import InvocationContext
    from google.adk.sessions import InMemorySessionService
    from google.adk.tools.mcp_tool import McpToolset, StdioConnectionParams
    from google.adk.tools.tool_context import ToolContext
    from mcp import StdioServerParameters

    if modern_protocol:
        monkeypatch.setenv("ADK_ENABLE_MCP_MODERN_PROTOCOL", "1")  # no effect on mcp 1.x
    else:
        monkeypatch.delenv("ADK_ENABLE_MCP_MODERN_PROTOCOL", raising=False)
    run_doc_block("docs/integrations.md", "google-adk")
    progress: list[str | None] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message)

    params = StdioConnectionParams(
        server_params=StdioServerParameters(command=records.command, args=records.args), timeout=30
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
        yield {"tools": tools, "context": context, "progress": progress}
    finally:
        await toolset.close()


async def test_a_call_runs_as_a_task_and_its_progress_reaches_adk(
    adk_tools: dict[str, Any], records: Records
) -> None:
    tools, context = adk_tools["tools"], adk_tools["context"]
    encoded = await tools["encode"].run_async(args={"frames": 4, "seconds": 1.0}, tool_context=context)
    assert encoded["isError"] is False, encoded
    task_id = records.finished_task("encode")
    assert encoded["content"][0]["text"] == f"encoded 4 frames in task {task_id}"
    assert_progress(adk_tools["progress"], 4)  # the task's statuses, through ADK's callback
    if MCP_MAJOR == 2:  # the modern protocol: the Tasks extension pushes the task's states
        assert records.requests()["subscriptions/listen"] >= 1, records.requests()
        assert records.reads() <= 3, records.requests()


async def test_cancelling_the_agents_call_cancels_the_task(
    adk_tools: dict[str, Any], records: Records
) -> None:
    tools, context = adk_tools["tools"], adk_tools["context"]
    arguments = {"frames": 200, "seconds": 60}
    await cancel_once_running(
        records, "encode", lambda: tools["encode"].run_async(args=arguments, tool_context=context)
    )


@pytest.mark.skipif(MCP_MAJOR != 2, reason="ADK's modern-protocol flag has no effect on mcp 1.x")
@pytest.mark.parametrize("modern_protocol", [False])
async def test_without_the_flag_mcp_2_runs_a_2025_11_25_task_by_polling(
    adk_tools: dict[str, Any], records: Records
) -> None:
    tools, context = adk_tools["tools"], adk_tools["context"]
    encoded = await tools["encode"].run_async(args={"frames": 4, "seconds": 1.0}, tool_context=context)
    assert encoded["content"][0]["text"] == f"encoded 4 frames in task {records.finished_task('encode')}"
    assert records.requests()["initialize"] == 1, records.summary()  # a handshake-era connection
    assert records.requests()["subscriptions/listen"] == 0, records.summary()
    # Followed through tasks/result and a tasks/get poll, where the flag's route reads nothing.
    assert records.requests()["tasks/get"] > 0, records.summary()
