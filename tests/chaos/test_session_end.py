"""A re-run outlives the client session it started in (issue 33, found by the chaos runs on mcp 1.x).

The mcp 1.x server has no lifespan of its own: a replica's background (sweeper, lease renewal,
re-runs) runs inside one of its client sessions. A re-run used to start in that background's own
group, so the client leaving that session stopped the re-run and spent an attempt ("attempt 3"
for a task that was only lost once). It now starts among the session's runs, and a streamable
HTTP session's end waits for its runs. On mcp 2.x the background is the server's lifespan: the
same test holds there. Real processes on one SQLite file; the tool's marks say what ran.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from mcp_tasks_compat._testkit.processes import child_environment
from mcp_tasks_compat._testkit.sessions import connect_http
from mcp_tasks_compat.client import resume, start_tool
from mcp_tasks_compat.testing import HttpServerProcess

from .cluster import NEWEST_DIALECT, SERVER, START_BOUND_S, Work
from .marks import MarksFile

pytestmark = pytest.mark.anyio

LEASE_S = 1.0
BOUND_S = 60.0
"""A bound, not a wait: every wait below ends on a mark or an answer."""


def _replica(store: Path, marks: Path) -> HttpServerProcess:
    command = [sys.executable, SERVER, "--store", f"sqlite:///{store}", "--marks", str(marks)]
    command += ["--lease-s", repr(LEASE_S), "--reruns", "2"]
    return HttpServerProcess(command, env={**os.environ, **child_environment()}, start_timeout=START_BOUND_S)


def _a_run_started(seen: list[dict[str, object]]) -> bool:
    return any(mark["k"] == "start" for mark in seen)


async def test_a_rerun_goes_on_when_the_client_session_that_hosted_it_leaves(tmp_path: Path) -> None:
    store, marks_path = tmp_path / "tasks.db", tmp_path / "marks.jsonl"
    marks = MarksFile(marks_path)
    doomed, survivor = _replica(store, marks_path), _replica(store, marks_path)
    work = Work(seconds=600.0, rerun_seconds=2.0, step_s=0.1)
    with survivor as survivor_url, anyio.fail_after(BOUND_S):  # started here, stopped at the end
        doomed_url = await anyio.to_thread.run_sync(doomed.start)
        try:
            async with connect_http(doomed_url, dialect=NEWEST_DIALECT) as session:
                run = await start_tool(session, "work", work.arguments("hosted"))
            task_id = run.task_id
            assert task_id is not None
            await marks.until(
                lambda seen: any(m["k"] == "start" for m in seen), within=BOUND_S, what="the run"
            )
        finally:
            doomed.kill()  # its run is lost: the survivor runs it again once the lease runs out
        survivor_pid = survivor.pid

        def rerun_started(seen: list[dict[str, object]]) -> bool:
            return any(m["k"] == "start" and m["pid"] == survivor_pid for m in seen)

        async with connect_http(survivor_url, dialect=NEWEST_DIALECT):  # hosts the survivor's sweeper
            await marks.until(rerun_started, within=BOUND_S, what="the re-run on the survivor")
        # the client left that session while the re-run goes on
        async with connect_http(survivor_url, dialect=NEWEST_DIALECT) as session:
            result = await (await resume(session, task_id)).result()
    survivor_marks = [m for m in marks.read() if m["pid"] == survivor_pid]
    assert [m["k"] for m in survivor_marks if m["k"] in ("start", "stop", "end")] == ["start", "end"]
    assert "attempt 2" in result.content[0].text, result.content[0].text
