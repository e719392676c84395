"""One node on SQLite, killed with SIGKILL mid-task and restarted on the same file (docs/deploy.md).

Ended tasks and their results are served after the restart, a task that was running is failed
as soon as the new process serves, and TTLs are wall-clock deadlines that do not restart.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from mcp_tasks_compat._testkit.sessions import connect_http
from mcp_tasks_compat.client import resume, start_tool
from mcp_tasks_compat.core._model import TaskStatus
from mcp_tasks_compat.dialects import DIALECT_2026_07_28

from ._procs import LOST_RUN, NEWEST_DIALECT, Watch, following, is_, kill, operator, servers

pytestmark = pytest.mark.anyio

BOUND_S = 60.0
LONG_LEASE = ("--lease-s", "600")
"""Far longer than the test: only the check that A's pid is gone can fail A's run this soon."""


async def test_a_killed_server_restarted_on_its_file_serves_results_and_fails_what_ran(
    tmp_path: Path,
) -> None:
    store = f"sqlite:///{tmp_path / 'tasks.db'}"  # an absolute path: sqlite:////tmp/...
    with servers() as started:
        server_a, url_a = await started.start_one("--store", store, *LONG_LEASE)
        with anyio.fail_after(BOUND_S):
            # The session stays open while A dies: a 2025-11-25 session that ends cleanly takes
            # its tasks with it, a crash does not.
            async with connect_http(url_a, dialect=NEWEST_DIALECT) as session_a:
                done_watch = Watch()
                quick = await start_tool(
                    session_a, "slow_echo", {"text": "kept", "seconds": 0.1, "steps": 1}, on_status=done_watch
                )
                async with following(quick):
                    await done_watch.until(is_(TaskStatus.COMPLETED), within=BOUND_S)
                long_watch = Watch()
                long = await start_tool(
                    session_a, "slow_echo", {"text": "lost", "seconds": 60, "steps": 60}, on_status=long_watch
                )
                assert quick.task_id is not None
                assert long.task_id is not None
                before = await operator("show", quick.task_id, "--store", store)
                running = await operator("show", long.task_id, "--store", store)
                assert before["status"] == "completed"
                assert running["status"] == "working"
                kill(server_a)

        _server_b, url_b = await started.start_one("--store", store, *LONG_LEASE)
        # Recovery runs at the server's start, before any session opens (both majors).
        at_start = await operator("show", long.task_id, "--store", store)
        assert at_start["status"] == "failed", at_start
        with anyio.fail_after(BOUND_S):
            async with connect_http(url_b, dialect=NEWEST_DIALECT) as session_b:
                after = await operator("show", quick.task_id, "--store", store)
                lost = await operator("show", long.task_id, "--store", store)
                if NEWEST_DIALECT == DIALECT_2026_07_28:
                    # 2026-07-28 task ids are handles: any session of any process reads them.
                    kept_run = await resume(session_b, quick.task_id)
                    result = await kept_run.result()
                    assert [block.text for block in result.content] == ["kept"]
                    lost_state = await (await resume(session_b, long.task_id)).status()
                    assert lost_state is not None
                    assert lost_state.status is TaskStatus.FAILED, lost_state
                    assert LOST_RUN in (lost_state.status_message or "")

    # The completed task's result and deadline survived; the deadline did not move with the restart.
    assert after["status"] == "completed"
    assert after["expires_at"] == before["expires_at"]
    assert after["ttl_left_s"] < before["ttl_left_s"]
    assert after["created_at"] == before["created_at"]
    # The TTL left shrank by the wall time between the two looks (the task's age grew by as much).
    waited = after["age_s"] - before["age_s"]
    assert waited > 0
    assert before["ttl_left_s"] - after["ttl_left_s"] == pytest.approx(waited, abs=0.01)
    # The run of the killed process failed at the new server's start, not at its lease's end.
    assert lost["status"] == "failed", lost
    assert LOST_RUN in (lost["status_message"] or "")
