"""The plain hand-off on mcp 1.x's ``install`` forms (low-level ``Server``, ``FastMCP``): the task
tools are listed as ``TaskServer`` lists them, and a client that speaks 2025-11-25 (it declared
``capabilities.tasks``) sees no difference (no hand-off, ``outputSchema`` kept)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

pytestmark = [pytest.mark.mcp1, pytest.mark.anyio]

pytest.importorskip("mcp.server.fastmcp", reason="needs mcp 1.x (FastMCP)")

import mcp.types as types  # noqa: E402 - after the skip, these import mcp 1.x
from mcp.client.experimental.task_handlers import ExperimentalTaskHandlers  # noqa: E402
from mcp.shared.exceptions import McpError  # noqa: E402

from mcp_tasks_compat.server import ServerTasks  # noqa: E402

from ._sdk import TASK_TOOLS, Controls, connect, fastmcp_server, lowlevel_server  # noqa: E402

KINDS = ["lowlevel", "fastmcp"]
TASK_TOOL_NAMES = {"task_status", "task_result", "task_cancel", "task_answer"}


def build(kind: str, controls: Controls, **options: Any) -> Any:
    tasks = ServerTasks(tools=dict(TASK_TOOLS), plain_handoff_s=0.3, **options)
    return lowlevel_server(tasks, controls) if kind == "lowlevel" else fastmcp_server(tasks, controls)


async def _list_tasks(context: Any, params: Any) -> types.ListTasksResult:
    return types.ListTasksResult(tasks=[])


DECLARES_TASKS = {"experimental_task_handlers": ExperimentalTaskHandlers(list_tasks=_list_tasks)}
"""A ``ClientSession`` that declares ``capabilities.tasks`` at ``initialize``."""


def text_of(result: types.CallToolResult) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


@pytest.mark.parametrize("kind", KINDS)
async def test_install_lists_the_task_tools_and_hands_off(kind: str) -> None:
    controls = Controls()
    async with connect(build(kind, controls)) as conn:
        tools = {tool.name: tool for tool in (await conn.session.list_tools()).tools}
        assert set(tools) >= TASK_TOOL_NAMES
        assert tools["task_result"].inputSchema["required"] == ["task_id"]
        assert tools["task_result"].execution is None or tools["task_result"].execution.taskSupport in (
            None,
            "forbidden",
        )
        with anyio.fail_after(10):
            first = await conn.session.call_tool("wait", {})
        assert not first.isError
        assert "still running as task" in text_of(first)
        task_id = (first.structuredContent or {})["taskId"]
        controls.release.set()
        with anyio.fail_after(10):
            result = await conn.session.call_tool("task_result", {"task_id": task_id})
        assert text_of(result) == "released"


@pytest.mark.parametrize("kind", KINDS)
async def test_install_without_the_option_lists_no_task_tools(kind: str) -> None:
    tasks = ServerTasks(tools=dict(TASK_TOOLS))
    server = lowlevel_server(tasks, Controls()) if kind == "lowlevel" else fastmcp_server(tasks, Controls())
    async with connect(server) as conn:
        names = {tool.name for tool in (await conn.session.list_tools()).tools}
        assert not names & TASK_TOOL_NAMES


async def test_a_client_that_speaks_2025_sees_no_difference() -> None:
    """It declared ``capabilities.tasks``: ``outputSchema`` is listed, a plain call runs plainly
    (a required tool is refused, as without the option), the task tools are ordinary tools."""
    controls = Controls()
    async with (
        connect(build("fastmcp", controls)) as plain,
        connect(build("fastmcp", controls), **DECLARES_TASKS) as speaking,
    ):
        plain_tools = {tool.name: tool for tool in (await plain.session.list_tools()).tools}
        speaking_tools = {tool.name: tool for tool in (await speaking.session.list_tools()).tools}
        assert speaking_tools["echo"].outputSchema is not None  # echo returns a dict: structured
        assert plain_tools["echo"].outputSchema is None  # it may answer a hand-off
        assert set(speaking_tools) >= TASK_TOOL_NAMES
        with pytest.raises(McpError, match="requires task-augmented invocation"):
            await speaking.session.call_tool("needs_task", {})
        async with anyio.create_task_group() as group:

            async def call() -> None:
                result = await speaking.session.call_tool("wait", {})
                assert text_of(result) == "released"  # the tool's own answer, after the deadline

            group.start_soon(call)
            with anyio.fail_after(10):
                await controls.started.wait()
                handed = await plain.session.call_tool("wait", {})  # answered at its deadline
            assert "still running as task" in text_of(handed)
            controls.release.set()  # the speaking client's call outlived the deadline too
        echoed = await speaking.session.call_tool("echo", {"text": "hi"})
        assert echoed.structuredContent == {"echo": "hi", "as_task": False}
