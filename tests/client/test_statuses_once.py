"""Each task status reaches a session call's caller once, by the rule docs/client.md states.

With an ``on_status`` (the call's, or the session's default), statuses go there only; with only a
``progress_callback``, the status messages reach the progress callback as ``(n, None, message)``.
Before, a call given both heard every status twice.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcp_tasks_compat._client_api import with_tasks
from mcp_tasks_compat._testkit.sessions import connect_in_memory
from mcp_tasks_compat.core._model import Task
from mcp_tasks_compat.testing import build_task_server, dialects

pytestmark = pytest.mark.anyio

BOUND = 30.0
STEPS = {"text": "stepped", "seconds": 0.3, "steps": 3}


@pytest.mark.parametrize("dialect", dialects())
@pytest.mark.parametrize("where", ["call", "session"])
async def test_on_status_takes_the_statuses_and_progress_hears_none(dialect: Any, where: str) -> None:
    statuses: list[Task] = []
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    with anyio.fail_after(BOUND):
        async with connect_in_memory(build_task_server(inline_grace_s=0), dialect=dialect) as session:
            if where == "call":
                result = await with_tasks(session).call_tool(
                    "slow_echo", STEPS, progress_callback=on_progress, on_status=statuses.append
                )
            else:
                wrapped = with_tasks(session, on_status=statuses.append)
                result = await wrapped.call_tool("slow_echo", STEPS, progress_callback=on_progress)
    assert result.content[0].text == "stepped"
    assert any(task.status_message for task in statuses), statuses
    assert progress == [], "a status reached progress_callback too, so it arrived twice"


@pytest.mark.parametrize("dialect", dialects())
async def test_without_on_status_the_progress_callback_hears_the_status_messages(dialect: Any) -> None:
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    with anyio.fail_after(BOUND):
        async with connect_in_memory(build_task_server(inline_grace_s=0), dialect=dialect) as session:
            await with_tasks(session).call_tool("slow_echo", STEPS, progress_callback=on_progress)
    assert progress, "no status message reached the progress callback"
    assert [value for value, _, _ in progress] == [float(n) for n in range(1, len(progress) + 1)]
    assert all(total is None and message for _, total, message in progress)
