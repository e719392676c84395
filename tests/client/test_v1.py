"""mcp 1.x only: optional session_kwargs(), pushed statuses, the caller's own message_handler."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcp_tasks_compat._client_api import session_kwargs
from mcp_tasks_compat.client import call_tool
from mcp_tasks_compat.core._model import Task

from .harness import open_harness, text_of

pytestmark = [pytest.mark.anyio, pytest.mark.mcp1]

BOUND = 5.0


async def _run_gated(session: Any, release: anyio.Event) -> tuple[Any, list[tuple[str, str | None]]]:
    seen: list[tuple[str, str | None]] = []
    started = anyio.Event()
    results: list[Any] = []

    def on_status(task: Task) -> None:
        seen.append((task.status.value, task.status_message))
        if task.status_message == "started":
            started.set()

    async def caller() -> None:
        results.append(await call_tool(session, "gated", {"label": "v1"}, on_status=on_status))

    async with anyio.create_task_group() as group:
        group.start_soon(caller)
        with anyio.fail_after(BOUND):
            await started.wait()
        release.set()
    return results[0], seen


async def test_a_plain_1x_session_works_without_session_kwargs() -> None:
    async with open_harness("sdk-2025") as harness, harness.session(kwargs={}) as session:
        result, seen = await _run_gated(session, harness.script.release)
        assert text_of(result) == "done v1"
        assert seen == [("working", None), ("working", "started"), ("completed", "started")]
        assert harness.script.get_times  # without pushed statuses, "started" came from polling


async def test_pushed_statuses_also_reach_the_callers_message_handler() -> None:
    import mcp.types as types

    received: list[Any] = []

    async def mine(message: Any) -> None:
        received.append(message)

    async with open_harness("sdk-2025") as harness:
        async with harness.session(kwargs=session_kwargs(message_handler=mine)) as session:
            started_at = anyio.current_time()
            result, seen = await _run_gated(session, harness.script.release)
            assert anyio.current_time() - started_at < 0.5  # "started" was pushed, not polled at 500 ms
        assert text_of(result) == "done v1"
        assert seen == [("working", None), ("working", "started"), ("completed", "started")]
        statuses = [
            m.root.params.status
            for m in received
            if isinstance(m, types.ServerNotification) and isinstance(m.root, types.TaskStatusNotification)
        ]
        assert statuses[-1] == "completed"
        assert "working" in statuses
