"""longtools against a real server of the installed mcp, in memory and over stdio."""

from __future__ import annotations

from typing import Any

import pytest
from longtools import render_remote

from mcp_tasks_compat.client import read_result, start_tool

pytestmark = pytest.mark.anyio


async def test_render_runs_as_a_task_with_progress(mcp_tasks_session: Any) -> None:
    messages: list[str] = []
    assert (
        await render_remote(mcp_tasks_session, 3, on_progress=messages.append, mode="task")
        == "rendered 3 frames"
    )
    assert messages[-1] == "frame 3/3"  # statuses are rate-bounded: the last one always arrives


async def test_render_as_a_handle(mcp_tasks_session: Any) -> None:
    run = await start_tool(mcp_tasks_session, "render", {"frames": 2})
    result = await run.result()
    assert read_result(result).text == "rendered 2 frames"
    assert run.done


async def test_render_over_stdio(mcp_tasks_stdio_session: Any) -> None:
    messages: list[str] = []
    assert await render_remote(mcp_tasks_stdio_session, 2, on_progress=messages.append) == "rendered 2 frames"
    assert messages
    assert messages[-1] == "frame 2/2"
