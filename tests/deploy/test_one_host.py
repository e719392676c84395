"""One host for every engine (issue 41), with real processes: a replica that serves no session
heals alone on both majors; the user's lifespan is entered once per process (server or worker),
outlives a client's session, and is what a re-run and a worker's run see.

The app is tests/deploy/lifespan_app.py; its marks file says, from the server side, which process
opened and closed the lifespan and which process started and ended each run.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest

from mcp_tasks_compat._testkit.processes import child_environment
from mcp_tasks_compat._testkit.sessions import connect_http
from mcp_tasks_compat.client import resume, start_tool
from mcp_tasks_compat.testing import HttpServerProcess

from ._procs import NEWEST_DIALECT, START_BOUND_S, Watch, following, fresh_redis_db, kill
from .test_workers import ROOT, WorkerProcess, in_thread, start

pytestmark = pytest.mark.anyio

BOUND_S = 60.0
"""A bound, not a wait."""
LEASE_S = 1.0
Mark = tuple[str, str, int]


class Deployment:
    """The processes of one test on one store, and the marks they leave."""

    def __init__(self, store: str, tmp_path: Path, run_on: str = "here") -> None:
        self.marks_path = tmp_path / "marks.txt"
        self.marks_path.touch()
        self.env = {
            **os.environ,
            **child_environment([ROOT]),
            "LIFESPAN_APP_STORE": store,
            "LIFESPAN_APP_MARKS": str(self.marks_path),
            "LIFESPAN_APP_LEASE_S": str(LEASE_S),
            "LIFESPAN_APP_RUN_ON": run_on,
        }
        self.started: list[HttpServerProcess | WorkerProcess] = []

    def server(self) -> HttpServerProcess:
        server = HttpServerProcess(
            [sys.executable, "-m", "tests.deploy.lifespan_app"],
            env=self.env,
            cwd=ROOT,
            start_timeout=START_BOUND_S,
        )
        self.started.append(server)
        return server

    def worker(self) -> WorkerProcess:
        worker = WorkerProcess(["tests.deploy.lifespan_app:app", "--verbose"], env=self.env)
        self.started.append(worker)
        return worker

    def marks(self) -> list[Mark]:
        return [
            (what, label, int(pid))
            for what, label, pid in (line.split() for line in self.marks_path.read_text().splitlines())
        ]

    async def until(self, check: Callable[[list[Mark]], bool], what: str) -> list[Mark]:
        """The marks once ``check`` holds (the file is re-read as processes append to it), bounded."""
        try:
            with anyio.fail_after(BOUND_S):
                while not check(marks := self.marks()):  # noqa: ASYNC110 - other processes append
                    await anyio.sleep(0.05)
        except TimeoutError:
            raise AssertionError(f"not within {BOUND_S:g} s: {what}; marks: {self.marks()}") from None
        return marks

    def stop(self) -> None:
        for process in self.started:
            if isinstance(process, HttpServerProcess):
                process.kill()
            process.stop()


@contextmanager
def deployment(store: str, tmp_path: Path, run_on: str = "here") -> Iterator[Deployment]:
    started = Deployment(store, tmp_path, run_on)
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture(params=["sqlite", "redis"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'tasks.db'}"
    return fresh_redis_db(request.getfixturevalue("redis_url"))


async def _start_task(url: str, label: str) -> str:
    """``tally(label)`` started as a task through ``url``, seen running; its id. The session ends."""
    async with connect_http(url, dialect=NEWEST_DIALECT) as session:
        watch = Watch()
        run = await start_tool(session, "tally", {"label": label}, on_status=watch)
        async with following(run):
            await watch.until(lambda task: "started in" in (task.status_message or ""), within=BOUND_S)
        assert run.task_id is not None
        return run.task_id


async def _result(url: str, task_id: str) -> str:
    async with connect_http(url, dialect=NEWEST_DIALECT) as session:
        result = await (await resume(session, task_id)).result()
    return str(result.content[0].text)


def _pid(server: HttpServerProcess) -> int:
    assert server.pid is not None
    return server.pid


def _has(what: str, label: str, pid: int) -> Callable[[list[Mark]], bool]:
    return lambda marks: (what, label, pid) in marks


async def test_a_replica_that_serves_no_session_reruns_a_dead_replicas_tasks(
    store_url: str, tmp_path: Path
) -> None:
    """B never serves a session: when A is killed -9 holding a ``reruns=`` task, B re-runs it
    within the lease and a sweep round, inside B's own lifespan (mcp 1.x: never, before)."""
    with deployment(store_url, tmp_path) as cluster:
        idle, doomed = cluster.server(), cluster.server()
        await start(idle, doomed)
        task_id = await _start_task(doomed.url or "", "lost")
        await in_thread(lambda: kill(doomed))
        idle_pid = _pid(idle)
        marks = await cluster.until(_has("end", "lost", idle_pid), "the idle replica re-ran the task")
        assert ("open", "-", idle_pid) in marks  # its lifespan: entered at its start, once
        assert [m for m in marks if m[0] == "open" and m[2] == idle_pid] == [("open", "-", idle_pid)]
        assert await _result(idle.url or "", task_id) == f"lost by {idle_pid}, pool open"


async def test_a_task_that_outlives_its_clients_session_keeps_the_lifespan_open(tmp_path: Path) -> None:
    """mcp 1.x over streamable HTTP entered the user's lifespan once per client session: a task
    that outlived its session found its resources closed. Now the lifespan is the process's."""
    with deployment(f"sqlite:///{tmp_path / 'tasks.db'}", tmp_path) as cluster:
        server = cluster.server()
        await start(server)
        task_id = await _start_task(server.url or "", "wait")  # the client's session ends here
        (cluster.marks_path.with_suffix(".go")).touch()
        await cluster.until(_has("end", "wait", _pid(server)), "the task ended")
        assert await _result(server.url or "", task_id) == f"wait by {server.pid}, pool open"
        assert [m[0] for m in cluster.marks() if m[0] in ("open", "close")] == ["open"]


async def test_a_workers_run_lost_to_kill_9_is_rerun_by_another_worker_in_its_lifespan(
    tmp_path: Path,
) -> None:
    """A ``reruns=1, run_on="workers"`` tool: the worker that runs it is killed -9; the next worker
    runs it again in its own lifespan (opened once at its start, closed at its SIGTERM)."""
    with deployment(f"sqlite:///{tmp_path / 'tasks.db'}", tmp_path, run_on="workers") as cluster:
        server, doomed = cluster.server(), cluster.worker()
        await start(server, doomed)
        task_id = await _start_task(server.url or "", "lost")
        await in_thread(lambda: doomed.stop())  # SIGKILL
        survivor = cluster.worker()
        await start(survivor)
        await cluster.until(_has("end", "lost", survivor.pid), "another worker re-ran it")
        assert await _result(server.url or "", task_id) == f"lost by {survivor.pid}, pool open"
        survivor.signal(signal.SIGTERM)
        assert await in_thread(survivor.exit_code) == 0
        mine = [
            what for what, _label, pid in cluster.marks() if pid == survivor.pid and what in ("open", "close")
        ]
        assert mine == ["open", "close"]


async def test_a_servers_own_rerun_tool_is_rerun_by_a_worker_in_its_lifespan(tmp_path: Path) -> None:
    """A server's own ``reruns=`` tool (``run_on="here"``) whose server was killed -9, with only a
    worker of the same app left: the worker claims it (and says so) and runs it in its lifespan."""
    with deployment(f"sqlite:///{tmp_path / 'tasks.db'}", tmp_path) as cluster:
        server, worker = cluster.server(), cluster.worker()
        await start(server, worker)
        task_id = await _start_task(server.url or "", "lost")
        await in_thread(lambda: kill(server))
        await cluster.until(_has("end", "lost", worker.pid), "the worker re-ran it")
        await in_thread(lambda: worker.wait_for(lambda line: "started again" in line, "its claim line"))
        replacement = cluster.server()
        await start(replacement)
        assert await _result(replacement.url or "", task_id) == f"lost by {worker.pid}, pool open"
