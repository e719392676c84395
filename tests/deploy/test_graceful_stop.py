"""A stop is not a purge: ending a session (HTTP ``DELETE``) or stopping the server (SIGTERM)
deletes nothing from a durable store; every task stays until its TTL (issue 25, point 2).

Real processes on a real SQLite file; what is in the file is read with the operator's ``tasks``
command, which needs no session.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from mcp_tasks_compat._engine import SERVER_STOPPED
from mcp_tasks_compat._testkit.sessions import connect_http
from mcp_tasks_compat.client import start_tool
from mcp_tasks_compat.core._model import TaskStatus

from ._procs import NEWEST_DIALECT, Watch, following, is_, operator, servers

pytestmark = pytest.mark.anyio

BOUND_S = 60.0
LONG_LEASE = ("--lease-s", "600")


async def _finished_tasks(url: str, texts: list[str]) -> list[str]:
    """Run one quick task per text to its end on a new session, which then ends (``DELETE``)."""
    ids: list[str] = []
    async with connect_http(url, dialect=NEWEST_DIALECT) as session:
        for text in texts:
            watch = Watch()
            run = await start_tool(
                session, "slow_echo", {"text": text, "seconds": 0.05, "steps": 1}, on_status=watch
            )
            async with following(run):
                await watch.until(is_(TaskStatus.COMPLETED), within=BOUND_S)
            assert run.task_id is not None
            ids.append(run.task_id)
        long = await start_tool(session, "slow_echo", {"text": "long", "seconds": 600, "steps": 1})
        assert long.task_id is not None
        ids.append(long.task_id)
    return ids  # the session has ended here: the client sent DELETE


async def test_ending_a_session_and_stopping_the_server_delete_nothing(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'tasks.db'}"
    with servers() as started:
        server, url = await started.start_one("--store", store, *LONG_LEASE)
        with anyio.fail_after(BOUND_S):
            first = await _finished_tasks(url, ["a", "b"])
            listed = await operator("list", "--store", store)
            assert sorted(row["task_id"] for row in listed["tasks"]) == sorted(first)
            second = await _finished_tasks(url, ["c"])
        await anyio.to_thread.run_sync(server.stop)  # SIGTERM: a graceful stop
    with anyio.fail_after(BOUND_S):
        rows = {row["task_id"]: row for row in (await operator("list", "--store", store))["tasks"]}
    assert sorted(rows) == sorted(first + second)
    for task_id in first[:2] + second[:1]:
        assert rows[task_id]["status"] == "completed", rows[task_id]
    # The long runs outlived their sessions (a session's end stops none of its runs, on both
    # majors) and were stopped with the server, saying so; they are kept too.
    for task_id in (first[-1], second[-1]):
        assert rows[task_id]["status"] == "cancelled", rows[task_id]
        assert rows[task_id]["status_message"] == SERVER_STOPPED, rows[task_id]
