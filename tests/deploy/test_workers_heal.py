"""Workers that heal alone (issue 41, item 8; docs/deploy.md, "Workers"): real worker processes on a
redis-server of the test's own, which the test flushes, restarts empty, or stops under them.

- Redis loses its data (``FLUSHALL``, a restart without persistence): the queue's stream and its
  consumer group are gone; the same workers make the group again and take the tasks created
  afterwards, saying so in one line each, without a line a second.
- A worker stopped with SIGTERM while Redis is down waits for Redis to give its runs back (saying
  so once), and exits 0 once they are; none is failed or spends an attempt.

Every wait ends on an event (a line on a worker's stderr, a mark, a result, an exit) and is bounded.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any, Final

import anyio
import pytest
import redis
from tests.redis_server import RedisServer, redis_server

from mcp_tasks_compat._testkit.sessions import connect_http
from mcp_tasks_compat.client import start_tool
from mcp_tasks_compat.core._model import TaskStatus

from ._procs import NEWEST_DIALECT
from .test_workers import (
    BOUND_S,
    QUEUED,
    Cluster,
    WorkerProcess,
    a_start_of,
    cluster,
    in_thread,
    results_of,
    start,
    work_args,
)

pytestmark = pytest.mark.anyio

HEAL_S: Final = 10.0
"""How soon a task created after Redis lost its data must have run on the workers already up
("within a few seconds"; the tasks take 0.2 s, a take waits 1 s at most)."""
REMADE: Final = "had lost its consumer group"
"""What a worker logs when it makes the queue's group again (once per loss)."""


def _flush(server: RedisServer) -> None:
    with redis.Redis(port=server.port) as client:
        client.flushall()


def _outage_lines(worker: WorkerProcess) -> dict[str, int]:
    """How many lines of each kind the worker logged about the store."""
    kinds = ("unreachable", "back after", "failing", "NOGROUP", "UNBLOCKED", REMADE)
    return {kind: sum(kind in line for line in worker.lines) for kind in kinds}


async def _ran_on(deployed: Cluster, session: Any, labels: list[str]) -> set[int]:
    """Create a task per label now and wait (at most :data:`HEAL_S`) for every result: the pids
    of the processes that ran them."""
    runs = [await start_tool(session, "work", work_args(label, 0.2)) for label in labels]
    with anyio.fail_after(HEAL_S):
        await results_of(runs)
    by_task = deployed.marks.runs()
    return {run.pid for task in runs for run in by_task[task.task_id]}


async def test_workers_take_new_tasks_after_redis_is_flushed_or_restarts_empty(tmp_path: Path) -> None:
    with redis_server() as store, cluster(store.url, tmp_path) as deployed:
        server = deployed.server()
        workers = [deployed.worker("--concurrency", "2"), deployed.worker("--concurrency", "2")]
        await start(server, *workers)
        assert server.url is not None
        pids = {worker.pid for worker in workers}
        with anyio.fail_after(3 * BOUND_S):
            async with connect_http(server.url, dialect=NEWEST_DIALECT) as session:
                assert await _ran_on(deployed, session, ["before"]) <= pids

                await in_thread(lambda: _flush(store))  # under the running workers
                flushed_at = time.monotonic()
                assert await _ran_on(deployed, session, ["flushed-1", "flushed-2"]) <= pids
                after_flush_s = time.monotonic() - flushed_at

                await in_thread(store.stop)
                await in_thread(store.start)  # the same port, empty: no persistence
                restarted_at = time.monotonic()
                ran = await _ran_on(deployed, session, ["restarted-1", "restarted-2", "restarted-3"])
                assert ran <= pids
                after_restart_s = time.monotonic() - restarted_at
    print(
        f"\nafter FLUSHALL the next tasks ran in {after_flush_s:.2f} s, after a restart empty in"
        f" {after_restart_s:.2f} s, on the same {len(pids)} workers"
    )
    for worker in workers:
        said = _outage_lines(worker)
        assert said["failing"] == said["NOGROUP"] == said["UNBLOCKED"] == 0, worker.lines
        # The restart is one outage: one line when it began, one when it ended, at most.
        assert said["unreachable"] <= 1, worker.lines
        assert said["back after"] <= 1, worker.lines
        assert said[REMADE] <= 2, worker.lines  # at most once per loss
    assert sum(_outage_lines(worker)[REMADE] for worker in workers) >= 2, "each loss said by a worker"


async def test_a_worker_stopped_while_redis_is_down_gives_its_runs_back_once_it_is_up(tmp_path: Path) -> None:
    data = tmp_path / "redis"
    data.mkdir()
    with redis_server(str(data)) as store, cluster(store.url, tmp_path) as deployed:
        server = deployed.server()
        stopping = deployed.worker("--concurrency", "2", "--grace-s", "0.5")
        await start(server, stopping)
        assert server.url is not None
        assert stopping.worker_id is not None
        with anyio.fail_after(3 * BOUND_S):
            async with connect_http(server.url, dialect=NEWEST_DIALECT) as session:
                once = await start_tool(session, "work", work_args("once", 60.0))
                again = await start_tool(session, "redo", work_args("again", 60.0))
                for run in (once, again):
                    await deployed.marks.until(a_start_of(run.task_id), within=BOUND_S, what="a run started")
                await in_thread(store.stop)  # its data kept on disk (an append-only file)
                stopping.signal(signal.SIGTERM)
                await in_thread(lambda: stopping.wait_for(lambda line: "waiting for it" in line, "waiting"))
                await in_thread(store.start)
                assert await in_thread(stopping.exit_code) == 0
                # Given back, not failed, and the same attempt: no lease ran out meanwhile.
                waiting = [await run.status() for run in (once, again)]
                given_back = f"given back by worker {stopping.worker_id} as it stopped; {QUEUED}"
                assert [(t.status, t.status_message) for t in waiting if t] == [
                    (TaskStatus.WORKING, given_back)
                ] * 2
                taker = deployed.worker("--concurrency", "2")
                await start(taker)
                results = await results_of([once, again])
    waits = [line for line in stopping.lines if "waiting for it to give back" in line]
    assert len(waits) == 1, stopping.lines
    assert "give back 2 run(s)" in waits[0], waits
    assert any("gave back 2 running task(s) to the queue after waiting" in line for line in stopping.lines)
    assert len(results) == 2
    by_task = deployed.marks.runs()
    for run in (once, again):
        assert run.task_id is not None
        given, taken = by_task[run.task_id]
        assert (given.pid, given.ending) == (stopping.pid, "stop")
        assert (taken.pid, taken.ending) == (taker.pid, "end")
