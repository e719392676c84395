"""The client against the project's own server (``ServerTasks``): both halves of the library together.

Set up with the testing kit's fixtures, as a downstream project would: ``mcp_tasks_toolset`` is
overridden with the client tests' script, ``mcp_tasks_server`` builds it (mcp 1.x ``FastMCP`` with
``ServerTasks.install``; mcp 2.x ``MCPServer(**ServerTasks.mcpserver_kwargs())``) and
``mcp_tasks_session`` connects in memory, once per task dialect the installed mcp speaks (2.x
reaches 2025-11-25 by initializing first). The fallback after a refused ``server/discover`` is
checked through the client tests' harness.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcp_tasks_compat import TaskCancelledError, TaskTimeoutError
from mcp_tasks_compat._testkit.sessions import connect_in_memory
from mcp_tasks_compat.client import call_tool, negotiate, resume, start_tool
from mcp_tasks_compat.core._model import Task, TaskStatus
from mcp_tasks_compat.testing import ToolSet, dialects

from .harness import Script, is_error, open_harness, project_toolset, text_of

pytestmark = pytest.mark.anyio

BOUND = 5.0


@pytest.fixture
def script() -> Script:
    return Script()


@pytest.fixture
def mcp_tasks_toolset(script: Script) -> ToolSet:
    return project_toolset(script)


@pytest.fixture(params=dialects())
def mcp_tasks_dialect(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_negotiate_finds_the_dialect(mcp_tasks_session: Any, mcp_tasks_dialect: str) -> None:
    negotiated = await negotiate(mcp_tasks_session)
    assert negotiated.dialect == mcp_tasks_dialect
    if mcp_tasks_dialect == "2025-11-25":
        assert negotiated.tool_task_support is not None
        assert negotiated.tool_task_support["gated"] == "optional"
        assert negotiated.tool_task_support["echo"] == "forbidden"


async def test_statuses_and_result(mcp_tasks_session: Any, script: Script) -> None:
    seen: list[tuple[str, str | None]] = []
    started = anyio.Event()
    results: list[Any] = []

    def on_status(task: Task) -> None:
        seen.append((task.status.value, task.status_message))
        if task.status_message == "started":
            started.set()

    async def caller() -> None:
        results.append(
            await call_tool(mcp_tasks_session, "gated", {"label": "p"}, mode="task", on_status=on_status)
        )

    async with anyio.create_task_group() as group:
        group.start_soon(caller)
        with anyio.fail_after(BOUND):
            await started.wait()
        script.release.set()
    assert text_of(results[0]) == "done p"
    assert seen[0][0] == "working"
    assert ("working", "started") in seen
    assert seen[-1][0] == "completed"


async def test_a_tool_error_comes_back_as_the_tools_result(mcp_tasks_session: Any) -> None:
    with anyio.fail_after(BOUND):
        result = await call_tool(mcp_tasks_session, "tool_error", mode="task")
    assert is_error(result)
    assert "bad input" in text_of(result)


async def test_plain_tool_stays_plain(mcp_tasks_session: Any) -> None:
    assert text_of(await call_tool(mcp_tasks_session, "echo", {"text": "e"})) == "e"


@pytest.mark.parametrize("mcp_tasks_server_options", [{"inline_grace_s": 0}])
async def test_plain_mode_never_runs_a_task(mcp_tasks_session: Any, script: Script) -> None:
    # On 2026-07-28 too, where the session declares the Tasks extension for its other calls (the
    # inline grace is off so that the second, quick call is a task on 2026-07-28 too).
    script.release.set()
    seen: list[Task] = []
    with anyio.fail_after(BOUND):
        result = await call_tool(
            mcp_tasks_session, "gated", {"label": "p"}, mode="plain", on_status=seen.append
        )
        assert text_of(result) == "done p"
        assert seen == []
        assert text_of(
            await call_tool(mcp_tasks_session, "gated", {"label": "t"}, on_status=seen.append)
        ) == ("done t")
    assert seen[-1].status == TaskStatus.COMPLETED


async def test_caller_cancellation_cancels_the_task(mcp_tasks_session: Any) -> None:
    working = anyio.Event()
    ids: list[str] = []

    def on_status(task: Task) -> None:
        ids.append(task.task_id)
        working.set()

    async with anyio.create_task_group() as group:
        group.start_soon(lambda: call_tool(mcp_tasks_session, "hang", on_status=on_status))
        with anyio.fail_after(BOUND):
            await working.wait()
        group.cancel_scope.cancel()
    run = await resume(mcp_tasks_session, ids[0])
    with anyio.fail_after(BOUND):
        state = await run.status()
    assert state is not None
    assert state.status is TaskStatus.CANCELLED


async def test_explicit_cancel_and_timeout(mcp_tasks_session: Any) -> None:
    run = await start_tool(mcp_tasks_session, "hang")
    with anyio.fail_after(BOUND):
        state = await run.cancel()
    assert state is not None
    assert state.status is TaskStatus.CANCELLED
    with pytest.raises(TaskCancelledError):
        await run.result()
    with anyio.fail_after(BOUND), pytest.raises(TaskTimeoutError):
        await call_tool(mcp_tasks_session, "hang", timeout=0.3)


@pytest.mark.mcp2
@pytest.mark.parametrize("mcp_tasks_dialect", ["2026-07-28"])
async def test_resume_from_a_second_session_on_2026(
    mcp_tasks_session: Any, mcp_tasks_server: Any, script: Script
) -> None:
    run = await start_tool(mcp_tasks_session, "gated", {"label": "again"})
    async with connect_in_memory(mcp_tasks_server, dialect="2026-07-28") as second:
        other = await resume(second, str(run.task_id))
        script.release.set()
        with anyio.fail_after(BOUND):
            assert text_of(await other.result()) == "done again"


@pytest.mark.mcp2
async def test_a_refused_discover_falls_back_to_2025() -> None:
    """A transport that refuses ``server/discover`` (as an old server does) still reaches our 2.x server."""
    async with open_harness("project-2025") as harness, harness.session() as session:
        negotiated = await negotiate(session)
        assert negotiated.dialect == "2025-11-25"
        assert text_of(await call_tool(session, "echo", {"text": "old"})) == "old"
        harness.script.release.set()
        with anyio.fail_after(BOUND):
            result = await call_tool(session, "gated", {"label": "old"}, mode="task")
        assert text_of(result) == "done old"
