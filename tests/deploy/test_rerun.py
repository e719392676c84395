"""Re-run by choice (issue 25): a task whose run is lost (its server killed, stopped, or a replica
gone) is started again, with its arguments, when its tool is declared safe to run again
(``reruns=``), and failed with the reason otherwise. Real processes on one SQLite file, both
majors, the newest dialect each serves; the server's own marks file says how often each tool ran.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest

from mcp_tasks_compat import TaskCancelledError, TaskFailedError
from mcp_tasks_compat._testkit.processes import child_environment
from mcp_tasks_compat._testkit.sessions import connect_http
from mcp_tasks_compat.client import resume, start_tool
from mcp_tasks_compat.testing import HttpServerProcess

from ._procs import LOST_RUN, NEWEST_DIALECT, START_BOUND_S, Watch, following, kill

pytestmark = pytest.mark.anyio

SERVER = str(Path(__file__).with_name("rerun_server.py"))
BOUND_S = 60.0


def _server(store: Path, marks: Path, lease_s: float = 2.0) -> HttpServerProcess:
    return HttpServerProcess(
        [sys.executable, SERVER, str(store), str(marks), str(lease_s)],
        env={**os.environ, **child_environment()},
        start_timeout=START_BOUND_S,
    )


def _once_ended(loss: str) -> tuple[str, ...]:
    """How ``once`` ended: with its server, on both majors (its session's end, when the test's
    client left, stops none of its runs)."""
    return (LOST_RUN if loss == "kill" else "cancelled: the server stopped this task",)


async def _started_tasks(url: str) -> tuple[str, str]:
    """``tally`` and ``once`` started as tasks and seen running (each said so in its status)."""
    async with connect_http(url, dialect=NEWEST_DIALECT) as session:
        ids: list[str] = []
        for tool in ("tally", "once"):
            watch = Watch()
            run = await start_tool(session, tool, {"label": tool}, on_status=watch)
            async with following(run):
                await watch.until(
                    lambda task, t=tool: f"{t} started (1)" in (task.status_message or ""), within=BOUND_S
                )
            assert run.task_id is not None
            ids.append(run.task_id)
    return ids[0], ids[1]


async def _outcomes(url: str, tally_id: str, once_id: str) -> tuple[str, str]:
    async with connect_http(url, dialect=NEWEST_DIALECT) as session:
        result = await (await resume(session, tally_id)).result()
        with pytest.raises((TaskFailedError, TaskCancelledError)) as failed:
            await (await resume(session, once_id)).result()
    assert len(result.content) == 1
    return result.content[0].text, str(failed.value)


@pytest.mark.parametrize("loss", ["kill", "stop"])
async def test_a_lost_run_of_a_rerun_tool_runs_again_after_a_restart_and_any_other_fails(
    tmp_path: Path, loss: str
) -> None:
    store, marks = tmp_path / "tasks.db", tmp_path / "marks.txt"
    first = _server(store, marks)
    try:
        url = await anyio.to_thread.run_sync(first.start)
        with anyio.fail_after(BOUND_S):
            tally_id, once_id = await _started_tasks(url)
    finally:
        await anyio.to_thread.run_sync(kill if loss == "kill" else HttpServerProcess.stop, first)
    with _server(store, marks) as url, anyio.fail_after(BOUND_S):
        text, failure = await _outcomes(url, tally_id, once_id)
    assert (
        text
        == "tally finished at start 2; status was 'attempt 2 of 3: started again after its server stopped'"
    )
    # ``once`` is not declared safe to run again: it ends as before, failed when its server died,
    # cancelled (saying so) when it was stopped; on mcp 1.x a run lives in its session, which
    # ended when the test's client left.
    assert any(text in failure for text in _once_ended(loss)), failure
    assert marks.read_text().splitlines() == ["tally", "once", "tally"]


async def test_a_rerun_tool_lost_with_its_replica_runs_again_on_the_other_within_the_lease(
    tmp_path: Path,
) -> None:
    store, marks = tmp_path / "tasks.db", tmp_path / "marks.txt"
    survivor = _server(store, marks, lease_s=1.0)
    doomed = _server(store, marks, lease_s=1.0)
    with survivor as survivor_url:
        try:
            url = await anyio.to_thread.run_sync(doomed.start)
            with anyio.fail_after(BOUND_S):
                tally_id, once_id = await _started_tasks(url)
        finally:
            await anyio.to_thread.run_sync(kill, doomed)
        with anyio.fail_after(BOUND_S):
            text, failure = await _outcomes(survivor_url, tally_id, once_id)
    said = "status was 'attempt 2 of 3: started again after its server stopped"
    assert text.startswith(f"tally finished at start 2; {said}")
    assert any(text in failure for text in _once_ended("kill")), failure
    assert marks.read_text().splitlines() == ["tally", "once", "tally"]
