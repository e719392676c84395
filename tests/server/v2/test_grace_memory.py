"""A long tool stops paying the inline grace (mcp 2.x, 2026-07-28, real sessions in memory).

After its calls outlived the grace three times in a row, a tool's calls are tasks at once; a
quick end gives it the grace back; a caller of this library asking for a task handle
(``start_tool``) gets one at once once the tool is known, while ``call_tool(mode="task")``, which
follows to the result anyway, keeps the grace (a quick tool answered in one request). Each check
would hang on the 60 s grace if the call waited it out, so each is bounded well below it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import anyio
import pytest

from mcp_tasks_compat._engine.grace import LONG_STREAK, QUICK_STREAK
from mcp_tasks_compat._testkit import sessions as kit_sessions
from mcp_tasks_compat.client import call_tool, start_tool
from mcp_tasks_compat.dialects import DIALECT_2026_07_28
from mcp_tasks_compat.server import ServerTasks

pytestmark = [pytest.mark.mcp2, pytest.mark.anyio]

pytest.importorskip("mcp.server.mcpserver", reason="needs mcp 2.x (MCPServer)")

from ._sdk import CallToolResult, MCPServer, TaskHandle, declaring_session  # noqa: E402

BOUND_S = 10  # far below the 60 s grace a waited-out call would take


@dataclass
class App:
    tasks: ServerTasks
    server: MCPServer
    release: anyio.Event = field(default_factory=anyio.Event)
    runs: list[bool] = field(default_factory=lambda: list[bool]())


def build_app(grace_s: float) -> App:
    tasks = ServerTasks(tools={"convert": "optional"}, inline_grace_s=grace_s)
    app = App(tasks, MCPServer("grace-memory", **tasks.mcpserver_kwargs()))

    @app.server.tool()
    async def convert(hold: bool) -> str:
        app.runs.append(hold)
        if hold:
            await app.release.wait()
        return "converted"

    return app


async def test_a_tool_whose_calls_outlive_the_grace_becomes_a_task_at_once_until_one_is_quick() -> None:
    app = build_app(grace_s=0.02)
    async with declaring_session(app.server) as session:
        held: list[str] = []
        for _ in range(LONG_STREAK):  # each waits out the short grace and becomes a task
            handle = await session.call_tool("convert", {"hold": True}, allow_claimed=True)
            assert isinstance(handle, TaskHandle)
            held.append(handle.task_id)
        app.tasks.inline_grace_s = 60.0  # what was learnt of the tool is kept
        with anyio.fail_after(BOUND_S):
            handle = await session.call_tool("convert", {"hold": True}, allow_claimed=True)
        assert isinstance(handle, TaskHandle)  # at once: the grace was not waited out
        held.append(handle.task_id)

        with anyio.fail_after(BOUND_S):  # still at once, and this one ends within the grace...
            quick = await session.call_tool("convert", {"hold": False}, allow_claimed=True)
        assert isinstance(quick, TaskHandle)
        with anyio.fail_after(BOUND_S):
            await app.tasks.engine.reader.wait_terminal(quick.task_id, None)
        # ...so the next call waits for it again, and is answered plainly.
        with anyio.fail_after(BOUND_S):
            plain = await session.call_tool("convert", {"hold": False}, allow_claimed=True)
        assert isinstance(plain, CallToolResult)
        assert plain.structured_content == {"result": "converted"}
        app.release.set()
        for task_id in held:
            with anyio.fail_after(BOUND_S):
                task = await app.tasks.engine.reader.wait_terminal(task_id, None)
            assert task.status.value == "completed"
    assert sorted(app.runs) == [False, False] + [True] * (LONG_STREAK + 1)  # each call ran once
    page, _cursor = await app.tasks.engine.store.list_tasks(owner=None)
    assert len(page) == LONG_STREAK + 2  # the plain answer made no task


async def test_our_client_asking_for_a_task_gets_one_at_once_once_the_tool_is_known() -> None:
    app = build_app(grace_s=0.02)
    async with kit_sessions.connect_in_memory(app.server, dialect=DIALECT_2026_07_28) as session:
        first = await start_tool(session, "convert", {"hold": True})  # never seen: waits the grace
        app.tasks.inline_grace_s = 60.0
        with anyio.fail_after(BOUND_S):
            second = await start_tool(session, "convert", {"hold": True})
        assert first.task_id is not None
        assert second.task_id is not None
        assert not app.tasks.grace.is_long("convert")  # asking teaches nothing about the tool
        app.release.set()
        for run in (first, second):
            with anyio.fail_after(BOUND_S):
                result = await run.result()
            assert result.structured_content == {"result": "converted"}
    assert app.runs == [True, True]


async def test_call_tool_in_task_mode_keeps_the_grace_for_a_quick_tool() -> None:
    """``call_tool(mode="task")`` waits for the result anyway: no task-at-once hint, so a known
    quick tool is answered within the grace, one request, no task made (a task at once would
    cost a create, a listen stream and a read for the same answer)."""
    app = build_app(grace_s=60.0)
    async with kit_sessions.connect_in_memory(app.server, dialect=DIALECT_2026_07_28) as session:
        with anyio.fail_after(BOUND_S):
            for _ in range(3):  # known after the first: a hint would now skip the grace
                result = await call_tool(session, "convert", {"hold": False}, mode="task")
                assert result.structured_content == {"result": "converted"}
    assert app.runs == [False, False, False]
    assert await app.tasks.engine.reader.owned_by(None) == []  # every call answered plainly


async def test_a_likely_quick_tools_call_that_turns_long_still_becomes_a_working_task() -> None:
    """A tool quick in its recent calls starts its next call under the request itself (no
    detached copy); should that call outlive the grace after all, it is a task like any other."""
    app = build_app(grace_s=0.05)
    async with declaring_session(app.server) as session:
        for _ in range(QUICK_STREAK):
            with anyio.fail_after(BOUND_S):
                quick = await session.call_tool("convert", {"hold": False}, allow_claimed=True)
            assert isinstance(quick, CallToolResult)
        assert app.tasks.grace.ticket("convert").likely_quick
        with anyio.fail_after(BOUND_S):
            handle = await session.call_tool("convert", {"hold": True}, allow_claimed=True)
        assert isinstance(handle, TaskHandle)
        app.release.set()
        with anyio.fail_after(BOUND_S):
            task = await app.tasks.engine.reader.wait_terminal(handle.task_id, None)
        assert task.status.value == "completed"
        assert task.result is not None
        assert task.result.get("structuredContent") == {"result": "converted"}
