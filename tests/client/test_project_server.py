"""The client against the project's own server (``ServerTasks``): both halves of the library together.

On mcp 1.x the server is ``FastMCP`` with ``ServerTasks.install``; on mcp 2.x it is
``MCPServer(**ServerTasks.mcpserver_kwargs())``, reached once over 2026-07-28 and once over a
transport that refuses ``server/discover`` (2025-11-25).
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcp_tasks_compat import TaskCancelledError, TaskTimeoutError
from mcp_tasks_compat.client import call_tool, negotiate, resume, start_tool
from mcp_tasks_compat.core.model import Task, TaskStatus

from ._harness import PROJECT_KINDS, open_harness
from ._helpers import is_error, text_of

pytestmark = pytest.mark.anyio

BOUND = 5.0


@pytest.fixture(params=PROJECT_KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_negotiate_finds_the_dialect(kind: str) -> None:
    async with open_harness(kind) as harness, harness.session() as session:
        negotiated = await negotiate(session)
        assert negotiated.dialect == harness.dialect
        if harness.dialect == "2025-11-25":
            assert negotiated.tool_task_support is not None
            assert negotiated.tool_task_support["gated"] == "optional"
            assert negotiated.tool_task_support["echo"] == "forbidden"


async def test_statuses_and_result(kind: str) -> None:
    seen: list[tuple[str, str | None]] = []
    started = anyio.Event()
    results: list[Any] = []

    def on_status(task: Task) -> None:
        seen.append((task.status.value, task.status_message))
        if task.status_message == "started":
            started.set()

    async with open_harness(kind) as harness, harness.session() as session:

        async def caller() -> None:
            results.append(
                await call_tool(session, "gated", {"label": "p"}, mode="task", on_status=on_status)
            )

        async with anyio.create_task_group() as group:
            group.start_soon(caller)
            with anyio.fail_after(BOUND):
                await started.wait()
            harness.script.release.set()
    assert text_of(results[0]) == "done p"
    assert seen[0][0] == "working"
    assert ("working", "started") in seen
    assert seen[-1][0] == "completed"


async def test_a_tool_error_comes_back_as_the_tools_result(kind: str) -> None:
    async with open_harness(kind) as harness, harness.session() as session:
        with anyio.fail_after(BOUND):
            result = await call_tool(session, "tool_error", mode="task")
        assert is_error(result)
        assert "bad input" in text_of(result)


async def test_plain_tool_stays_plain(kind: str) -> None:
    async with open_harness(kind) as harness, harness.session() as session:
        assert text_of(await call_tool(session, "echo", {"text": "e"})) == "e"


async def test_caller_cancellation_cancels_the_task(kind: str) -> None:
    working = anyio.Event()
    async with open_harness(kind) as harness, harness.session() as session:
        ids: list[str] = []

        def on_status(task: Task) -> None:
            ids.append(task.task_id)
            working.set()

        async with anyio.create_task_group() as group:
            group.start_soon(lambda: call_tool(session, "hang", on_status=on_status))
            with anyio.fail_after(BOUND):
                await working.wait()
            group.cancel_scope.cancel()
        run = await resume(session, ids[0])
        with anyio.fail_after(BOUND):
            state = await run.status()
        assert state is not None
        assert state.status is TaskStatus.CANCELLED


async def test_explicit_cancel_and_timeout(kind: str) -> None:
    async with open_harness(kind) as harness, harness.session() as session:
        run = await start_tool(session, "hang")
        with anyio.fail_after(BOUND):
            state = await run.cancel()
        assert state is not None
        assert state.status is TaskStatus.CANCELLED
        with pytest.raises(TaskCancelledError):
            await run.result()
        with anyio.fail_after(BOUND), pytest.raises(TaskTimeoutError):
            await call_tool(session, "hang", timeout=0.3)


async def test_resume_from_a_second_session_on_2026() -> None:
    if "project-ext" not in PROJECT_KINDS:
        pytest.skip("the Tasks extension needs mcp 2.x")
    async with open_harness("project-ext") as harness, harness.session() as first:
        run = await start_tool(first, "gated", {"label": "again"})
        async with harness.session() as second:
            other = await resume(second, str(run.task_id))
            harness.script.release.set()
            with anyio.fail_after(BOUND):
                assert text_of(await other.result()) == "done again"
