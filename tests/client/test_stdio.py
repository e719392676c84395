"""The client over real stdio subprocesses (the server runs in its own interpreter)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcp_tasks_compat import TaskFailedError
from mcp_tasks_compat._client_api import session_kwargs
from mcp_tasks_compat._testkit.sessions import connect_stdio
from mcp_tasks_compat.client import call_tool, negotiate, start_tool
from mcp_tasks_compat.core._model import Task, TaskStatus

from .harness import DIALECT_OF, STDIO_KIND, TESTS_DIR, is_error, mcp1_python, scripted_stdio_command, text_of

pytestmark = pytest.mark.anyio

BOUND = 60.0  # a bound, not a wait: it includes starting an interpreter


async def test_a_task_over_stdio_against_the_same_major() -> None:
    seen: list[tuple[str, str | None]] = []

    def on_status(task: Task) -> None:
        seen.append((task.status.value, task.status_message))

    with anyio.fail_after(BOUND):
        command = scripted_stdio_command(STDIO_KIND, gets=1)
        async with connect_stdio(command, cwd=TESTS_DIR) as session:
            negotiated = await negotiate(session)
            assert negotiated.dialect == DIALECT_OF[STDIO_KIND]
            result = await call_tool(session, "count_gets", on_status=on_status)
            assert text_of(result) == "counted"
            assert seen[0] == ("working", None)
            assert seen[-1][0] == "completed"
            assert is_error(await call_tool(session, "tool_error"))
            with pytest.raises(TaskFailedError, match="boom"):
                await call_tool(session, "failing")


@pytest.mark.mcp2
async def test_a_2x_client_speaks_2025_to_a_real_1x_sdk_server_over_stdio() -> None:
    import mcp_types
    from mcp.client.extension import NotificationBinding
    from pydantic import ConfigDict

    class StatusParams(mcp_types.NotificationParams):
        model_config = ConfigDict(extra="allow")

    mine: list[Any] = []
    saw_failed = anyio.Event()

    async def on_status_notification(params: StatusParams) -> None:
        mine.append((params.model_extra or {}).get("status"))
        if mine[-1] == "failed":
            saw_failed.set()

    own_binding = NotificationBinding(
        method="notifications/tasks/status", params_type=StatusParams, handler=on_status_notification
    )
    python = mcp1_python()
    if python is None:
        pytest.skip("no interpreter with mcp 1.x found (set MCP1_PY)")
    pushed: list[tuple[str, str | None]] = []
    with anyio.fail_after(BOUND):
        command = scripted_stdio_command("sdk-2025", gets=1, python=python)
        options = session_kwargs(notification_bindings=[own_binding])
        async with connect_stdio(command, cwd=TESTS_DIR, session_options=options) as session:
            negotiated = await negotiate(session)
            assert negotiated.dialect == "2025-11-25"
            assert negotiated.tool_task_support is not None
            assert negotiated.tool_task_support["count_gets"] == "optional"
            assert text_of(await call_tool(session, "count_gets", mode="task")) == "counted"
            with pytest.raises(TaskFailedError, match="boom"):
                await call_tool(session, "failing", on_status=lambda t: pushed.append((t.status.value, None)))
            assert pushed[-1] == ("failed", None)
            with anyio.fail_after(BOUND):
                await saw_failed.wait()  # the caller's own binding still hears every status
            run = await start_tool(session, "hang")
            state = await run.cancel()
            assert state is not None
            assert state.status is TaskStatus.CANCELLED
