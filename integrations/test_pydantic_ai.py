"""pydantic-ai-slim 2.68 (``MCPToolset`` over fastmcp: fastmcp 3 on mcp 1.x, fastmcp 4 on mcp 2.x ≥ 2.3):
the page's recipes, the toolset's own tool calls as an agent run makes them, no model is asked.

On mcp 2.x the recipe gives fastmcp's ``Client`` the library's Tasks extension
(``TaskClientSession.extension()``; ``extensions=`` is a public argument of fastmcp 4's
``Client``); on mcp 1.x it gives ``MCPToolset`` the library's ``TaskClient`` (fastmcp 3's
``Client``, its session hearing pushed task statuses, its tool calls run as tasks), because
pydantic-ai's own SEP-1686 path reports no progress and leaves the task running when the agent's
call is cancelled.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from tests.doc_blocks import run_doc_block

from integrations.records import MCP_MAJOR, Records, assert_progress, cancel_once_running

pytestmark = pytest.mark.anyio


class Toolset:
    """An entered ``MCPToolset``, its run context and the progress its ``Client`` heard."""

    def __init__(self, toolset: Any, context: Any, progress: list[str | None]) -> None:
        self.toolset = toolset
        self.context = context
        self.progress = progress

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """The call an agent run makes: through ``get_tools`` (task routing) and ``call_tool``."""
        tools = await self.toolset.get_tools(self.context)
        return await self.toolset.call_tool(name, arguments, self.context, tools[name])


@pytest.fixture
async def toolset(records: Records) -> AsyncIterator[Toolset]:
    from fastmcp.client.transports import StdioTransport
    from pydantic_ai import RunContext
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.usage import RunUsage

    progress: list[str | None] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message)

    names = {"server": StdioTransport(command=records.command, args=records.args), "on_progress": on_progress}
    recipe = "pydantic-ai" if MCP_MAJOR == 2 else "pydantic-ai-mcp1"
    built = run_doc_block("docs/integrations.md", recipe, names)["toolset"]
    context = RunContext(deps=None, model=TestModel(), usage=RunUsage())
    async with built:
        yield Toolset(built, context, progress)


async def test_a_call_runs_as_a_task(toolset: Toolset, records: Records) -> None:
    answer = await toolset.call("encode", {"frames": 4, "seconds": 1.0})
    assert answer == f"encoded 4 frames in task {records.finished_task('encode')}"


async def test_the_tasks_progress_reaches_pydantic_ai(toolset: Toolset, records: Records) -> None:
    await toolset.call("encode", {"frames": 4, "seconds": 1.0})
    assert_progress(toolset.progress, 4)
    assert toolset.progress[-1] == "frame 4/4", toolset.progress  # the last step, sent as the tool ends


@pytest.mark.skipif(MCP_MAJOR != 2, reason="the Tasks extension route is mcp 2.x's; 1.x has TaskClient")
async def test_the_extension_route_follows_a_5_s_task_with_3_reads_at_most(
    toolset: Toolset, records: Records
) -> None:
    answer = await toolset.call("encode", {"frames": 5, "seconds": 5.0})
    assert answer == f"encoded 5 frames in task {records.finished_task('encode')}"
    assert records.reads() <= 3, records.requests()


@pytest.mark.skipif(MCP_MAJOR != 1, reason="the TaskClient route is mcp 1.x's; 2.x's is the test above")
async def test_the_task_client_route_follows_a_5_s_task_with_30_reads_at_most(
    toolset: Toolset, records: Records
) -> None:
    """The server pushes each status (2025-11-25 notifications): the client hears them, so it polls
    only to watch, and the last step reaches the handler before the call returns."""
    answer = await toolset.call("encode", {"frames": 5, "seconds": 5.0})
    assert answer == f"encoded 5 frames in task {records.finished_task('encode')}"
    assert toolset.progress[-1] == "frame 5/5", toolset.progress
    assert records.reads() <= 30, records.requests()


async def test_cancelling_the_agents_call_cancels_the_task(toolset: Toolset, records: Records) -> None:
    arguments = {"frames": 200, "seconds": 60}
    await cancel_once_running(records, "encode", lambda: toolset.call("encode", arguments))
