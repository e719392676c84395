"""The client over real stdio subprocesses (the server runs in its own interpreter)."""

from __future__ import annotations

import glob
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_tasks_compat import TaskFailedError
from mcp_tasks_compat.client import call_tool, negotiate, session_kwargs, start_tool
from mcp_tasks_compat.core.model import Task, TaskStatus

from ._harness import MCP_MAJOR
from ._helpers import is_error, text_of

pytestmark = pytest.mark.anyio

TESTS_DIR = Path(__file__).resolve().parent.parent
BOUND = 15.0  # includes starting an interpreter


def _params(python: str, kind: str, gets: int) -> Any:
    from mcp.client.stdio import StdioServerParameters

    return StdioServerParameters(
        command=python, args=["-m", "client._stdio_server", kind, str(gets)], cwd=str(TESTS_DIR)
    )


def _mcp1_python() -> str | None:
    """An interpreter with mcp 1.x for the cross-major test: $MCP1_PY, else a sibling venv."""
    explicit = os.environ.get("MCP1_PY")
    if explicit:
        return explicit
    found = sorted(glob.glob(str(Path(sys.prefix).parent / "mcp1.*" / "bin" / "python")))
    return found[-1] if found else None


async def test_a_task_over_stdio_against_the_same_major() -> None:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import stdio_client

    kind, dialect = ("v1", "2025-11-25") if MCP_MAJOR == 1 else ("ext", "2026-07-28")
    seen: list[tuple[str, str | None]] = []

    def on_status(task: Task) -> None:
        seen.append((task.status.value, task.status_message))

    with anyio.fail_after(BOUND):
        async with (
            stdio_client(_params(sys.executable, kind, gets=1)) as streams,
            ClientSession(streams[0], streams[1], **session_kwargs()) as session,
        ):
            negotiated = await negotiate(session)
            assert negotiated.dialect == dialect
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
    from mcp.client.session import ClientSession
    from mcp.client.stdio import stdio_client
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
    python = _mcp1_python()
    if python is None:
        pytest.skip("no interpreter with mcp 1.x found (set MCP1_PY)")
    pushed: list[tuple[str, str | None]] = []
    with anyio.fail_after(BOUND):
        async with (
            stdio_client(_params(python, "v1", gets=1)) as streams,
            ClientSession(
                streams[0], streams[1], **session_kwargs(notification_bindings=[own_binding])
            ) as session,
        ):
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
