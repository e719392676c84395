"""Clocks and locks under workers (issue 44, item 5; docs/reliability.md, "How leases are judged"):
a server and ``mcp-tasks-compat worker`` processes on one SQLite file, real processes throughout.

- Another program holds the file's write lock (``BEGIN EXCLUSIVE``, as a backup or a long
  transaction does) for three leases while the workers run tasks: nobody can renew, everybody can
  still read. No task may fail (``work`` is never run again) or start twice (``redo`` may be).
- One worker's wall clock is 30 s ahead or behind (libfaketime): no live run may be taken, and
  when the worker whose clock is ahead is killed (SIGKILL), its runs start again on the other
  within a lease and a look.

The leases are judged on each observer's monotonic clock (``_engine/leases.py``), which is what
these tests hold to. The lock and the watch for a re-run that must not come are timed (a fault's
length); every other wait ends on an event (a mark, a result) and is bounded.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

import anyio
import pytest
from tests.chaos.faults import FAKETIME_MISSING, faketime_library, skewed_environment
from tests.chaos.marks import Run, active_at, result_run

from mcp_tasks_compat._testkit.sessions import connect_http
from mcp_tasks_compat.client import start_tool

from ._procs import NEWEST_DIALECT
from .test_workers import (
    BOUND_S,
    WorkerProcess,
    a_start_of,
    assert_no_task_ran_twice_at_once,
    cluster,
    in_thread,
    results_of,
    start,
    text_of,
    work_args,
)

pytestmark = pytest.mark.anyio

LEASE_S: Final = 1.5
"""Short, to keep the tests fast; over a second, so a busy machine's stalls do not eat it."""
LOOK_S: Final = LEASE_S / 3
"""How often an observer looks at the leases with a lease this short (a third of it)."""
NOTICE_S: Final = LEASE_S + LOOK_S + 1.5
"""By when a dead worker's runs must start again: a lease and a look from its last renewal, plus
slack for a busy machine."""
GAP_S: Final = 0.5
"""Marks further apart than this: the run was not running in between (they come every 0.1 s)."""


def _hold_write_lock(path: Path) -> tuple[Callable[[], None], Callable[[], None]]:
    """Take the file's write lock as another program would (``BEGIN EXCLUSIVE``), and give it back."""
    held: list[sqlite3.Connection] = []

    def lock() -> None:
        connection = sqlite3.connect(path, isolation_level=None, timeout=BOUND_S, check_same_thread=False)
        connection.execute("BEGIN EXCLUSIVE")
        held.append(connection)

    def unlock() -> None:
        connection = held.pop()
        connection.execute("ROLLBACK")
        connection.close()

    return lock, unlock


async def _started(deployed: Any, runs: Sequence[Any]) -> None:
    for run in runs:
        await deployed.marks.until(a_start_of(run.task_id), within=BOUND_S, what="a run started")


def _early_reruns(by_task: dict[str, list[Run]]) -> list[str]:
    """Tasks started again while an earlier run of theirs was alive (its worker lived)."""
    return [
        task
        for task, runs in by_task.items()
        for index, later in enumerate(runs)
        if index and any(active_at(before, later.started, GAP_S) for before in runs[:index])
    ]


async def test_a_sqlite_file_locked_for_three_leases_fails_no_task_and_starts_none_twice(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tasks.db"
    lock, unlock = _hold_write_lock(path)
    locked_s = 3 * LEASE_S
    with cluster(f"sqlite:///{path}", tmp_path, lease_s=LEASE_S) as deployed:
        server = deployed.server()
        workers = [deployed.worker("--concurrency", "2") for _ in range(2)]
        await start(server, *workers)
        assert server.url is not None
        with anyio.fail_after(3 * BOUND_S):
            async with connect_http(server.url, dialect=NEWEST_DIALECT) as session:
                # Long enough to outlast the lock and three leases after it, however late they start.
                seconds = locked_s + 3 * LEASE_S + 2.0
                runs = [
                    await start_tool(session, tool, work_args(f"{tool}{n}", seconds))
                    for n in range(2)
                    for tool in ("work", "redo")
                ]
                await _started(deployed, runs)
                await in_thread(lock)
                locked_at = time.time()
                await anyio.sleep(locked_s)  # the lock's own length: a timed fault
                await in_thread(unlock)
                unlocked_at = time.time()
                results = await results_of(runs)  # a failed task raises TaskFailedError here
    by_task = deployed.marks.runs()
    ids = [str(run.task_id) for run in runs]
    assert [len(by_task[task_id]) for task_id in ids] == [1] * len(ids), f"started twice: {by_task}"
    assert {run.ending for task_id in ids for run in by_task[task_id]} == {"end"}
    assert [result_run(text_of(result)) for result in results] == [by_task[t][0].run for t in ids]
    assert all(run.last > unlocked_at + LEASE_S for t in ids for run in by_task[t]), "ended too soon"
    print(f"\nSQLite file held BEGIN EXCLUSIVE for {unlocked_at - locked_at:.1f} s (lease {LEASE_S:g} s)")


@pytest.mark.parametrize("skew_s", [30.0, -30.0], ids=["ahead", "behind"])
async def test_a_worker_whose_clock_is_off_takes_no_live_run_and_a_dead_ones_runs_go_on(
    tmp_path: Path, skew_s: float
) -> None:
    if faketime_library() is None:
        pytest.skip(FAKETIME_MISSING)
    with cluster(f"sqlite:///{tmp_path / 'tasks.db'}", tmp_path, lease_s=LEASE_S) as deployed:
        # The worker whose clock is ahead starts first, with two slots, and takes two tasks; the
        # other then takes two more, with two slots left for the re-runs once the first is killed.
        skewed_args = ["--store", deployed.store, "--concurrency", "2" if skew_s > 0 else "4"]
        skewed = WorkerProcess(
            ["tests.deploy.worker_app:app", *skewed_args], env={**deployed.env, **skewed_environment(skew_s)}
        )
        deployed.started.append(skewed)
        server, true = deployed.server(), deployed.worker("--concurrency", "4" if skew_s > 0 else "2")
        ahead, behind = (skewed, true) if skew_s > 0 else (true, skewed)
        await start(server, ahead)
        assert server.url is not None
        with anyio.fail_after(3 * BOUND_S):
            async with connect_http(server.url, dialect=NEWEST_DIALECT) as session:
                args = {"rerun_seconds": 1.0}
                # The first runs go on until the kill, however long the other worker takes to start;
                # the others until after the watch (their worker lives: they end by themselves).
                first = [
                    await start_tool(session, "redo", work_args(f"a{n}", 10 * BOUND_S, **args))
                    for n in (0, 1)
                ]
                seconds = 2 * NOTICE_S + 4.0
                await _started(deployed, first)  # both on the worker ahead: its two slots are full
                await start(behind)
                then = [
                    await start_tool(session, "redo", work_args(f"b{n}", seconds, **args)) for n in (0, 1)
                ]
                await _started(deployed, then)
                await anyio.sleep(NOTICE_S)  # a watch for a re-run that must not come: timed by design
                await in_thread(ahead.stop)  # SIGKILL
                killed_at = time.time()
                results = await results_of([*first, *then])
    by_task = deployed.marks.runs()
    ids = [str(run.task_id) for run in (*first, *then)]
    assert {by_task[t][0].pid for t in ids[:2]} == {ahead.pid}
    assert {by_task[t][0].pid for t in ids[2:]} == {behind.pid}
    early = _early_reruns(by_task)
    assert early == [], f"live runs taken: {early}"
    orphaned = [t for t in ids if by_task[t][0].pid == ahead.pid]
    for task_id in orphaned:
        lost, rerun = by_task[task_id]
        assert (lost.ending, rerun.pid, rerun.attempt, rerun.ending) == (None, behind.pid, 2, "end")
    slowest = max(by_task[t][1].started - killed_at for t in orphaned)
    assert slowest <= NOTICE_S, f"a dead worker's run started again {slowest:.2f} s after the kill"
    assert [result_run(text_of(result)) for result in results] == [by_task[t][-1].run for t in ids]
    assert_no_task_ran_twice_at_once(by_task)
    print(
        f"\nworker {skew_s:+g} s: no live run taken; a killed worker's runs started again in {slowest:.2f} s"
    )
