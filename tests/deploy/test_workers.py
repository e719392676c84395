"""Task runs on worker processes (issue 34; docs/deploy.md, "Workers"): real processes, a real
redis-server and PostgreSQL cluster (the first four tests run on each), real HTTP on 127.0.0.1.

One server queues each task (``run_on="workers"``) and runs nothing; ``mcp-tasks-compat worker``
processes take, claim and run them. The servers and workers here are ``tests/deploy/worker_app.py``
(whose tools leave marks: when each run started, stepped, ended or was stopped, in which
process) or the recipe of docs/deploy.md as written (the example tools). What the tests check
comes from those marks, the workers' own stderr, and the tasks as a client reads them; every wait
ends on an event (a line on stderr, a mark, a status) and is bounded.

The figures (how long the queue took to drain, how long a cancel took to reach a worker's run)
are printed (``pytest -s``), not asserted beyond a generous bound.
"""

from __future__ import annotations

import math
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import partial
from pathlib import Path
from typing import Any, Final

import anyio
import anyio.to_thread
import httpx
import pytest
from tests.answering import Answering
from tests.chaos.marks import MarksFile, Run, overlap_s, result_run
from tests.redis_server import free_port

from mcp_tasks_compat import TaskFailedError
from mcp_tasks_compat._client_api import session_kwargs
from mcp_tasks_compat._engine.expiry import WORKER_STOPPED
from mcp_tasks_compat._testkit.processes import child_environment
from mcp_tasks_compat._testkit.sessions import connect_http
from mcp_tasks_compat.client import start_tool
from mcp_tasks_compat.core._model import TaskStatus, parse_timestamp
from mcp_tasks_compat.dialects import DIALECT_2025_11_25, DIALECT_2026_07_28
from mcp_tasks_compat.testing import HttpServerProcess, dialects

from ._procs import NEWEST_DIALECT, START_BOUND_S, Watch, following, fresh_postgres_db, fresh_redis_db, is_

pytestmark = pytest.mark.anyio

ROOT: Final = Path(__file__).resolve().parents[2]
CLI: Final = [sys.executable, "-m", "mcp_tasks_compat"]
BOUND_S: Final = 60.0
"""A bound on every wait, not its expected length (the waits end on events)."""
STORE_ENV, MARKS_ENV, LEASE_ENV = "WORKER_APP_STORE", "WORKER_APP_MARKS", "WORKER_APP_LEASE_S"
METRICS_ENV = "WORKER_APP_METRICS_PORT"
"""What tests/deploy/worker_app.py reads (not imported here: importing it builds its app)."""
QUEUED: Final = "queued: waiting for a worker"
"""The status message of a task no worker has claimed yet (docs/deploy.md)."""
READY: Final = re.compile(r"^worker (\S+) taking tasks from (.+), (\d+) at a time$")
"""What a worker prints on stderr once it takes tasks."""
SWEEP_S: Final = 2.0
"""How late after a lease ran out a sweeper may end the run, on the store's clock (docs/deploy.md:
one sweep, at most a second; plus slack)."""
LONG_LEASE_S: Final = 600.0
"""A lease whose renewal (a third of it) re-reads the tasks a worker holds far later than
:data:`BOUND_S`: a cancel that reaches the run within the bound came another way (Redis pub/sub;
on SQLite, the worker's poll of the tasks it holds)."""


@pytest.fixture(params=["redis", "postgres"])
def shared_store(request: pytest.FixtureRequest) -> str:
    """A store URL of this test's own that servers and workers on several processes share: a Redis
    database, or a PostgreSQL database on the session's cluster."""
    if request.param == "redis":
        return fresh_redis_db(request.getfixturevalue("redis_url"))
    return fresh_postgres_db(request.getfixturevalue("postgres_cluster"))


# --- processes ------------------------------------------------------------------------------------


class WorkerProcess:
    """``mcp-tasks-compat worker ARGS...`` as a subprocess; its stderr kept line by line."""

    def __init__(self, args: Sequence[str], *, env: dict[str, str] | None, cwd: Path = ROOT) -> None:
        self.command = [*CLI, "worker", *args]
        self.env = env
        self.cwd = cwd
        self.lines: list[str] = []
        self.worker_id: str | None = None
        self._process: subprocess.Popen[str] | None = None
        self._changed = threading.Condition()
        self._ended = False

    @property
    def pid(self) -> int:
        assert self._process is not None
        return self._process.pid

    def start(self) -> str:
        """Start it and wait for its ``worker ID taking tasks from ...`` line; its id."""
        self._process = subprocess.Popen(
            self.command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env,
            cwd=self.cwd,
        )
        threading.Thread(target=self._read, daemon=True).start()
        ready = READY.match(self.wait_for(lambda line: READY.match(line) is not None, "its ready line"))
        assert ready is not None
        self.worker_id = ready.group(1)
        return self.worker_id

    def _read(self) -> None:
        assert self._process is not None
        assert self._process.stderr is not None
        for line in self._process.stderr:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._ended = True
            self._changed.notify_all()

    def wait_for(self, wanted: Callable[[str], bool], what: str, *, within: float = START_BOUND_S) -> str:
        """The first line of its stderr that is ``wanted``, within ``within`` seconds (blocking)."""
        deadline = time.monotonic() + within
        with self._changed:
            while True:
                found = next((line for line in self.lines if wanted(line)), None)
                if found is not None:
                    return found
                left = deadline - time.monotonic()
                if self._ended or left <= 0:
                    why = "it exited" if self._ended else f"not within {within:g} s"
                    raise AssertionError(f"worker: {what}: {why}; stderr:\n" + "\n".join(self.lines[-30:]))
                self._changed.wait(left)

    def signal(self, number: int) -> None:
        assert self._process is not None
        self._process.send_signal(number)

    def exit_code(self, *, within: float = BOUND_S) -> int:
        assert self._process is not None
        return self._process.wait(timeout=within)

    def stop(self) -> None:
        """SIGKILL (if still running) and wait: the end of a test."""
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait(timeout=BOUND_S)


Process = HttpServerProcess | WorkerProcess


@dataclass
class Cluster:
    """The processes of one test on one store; every one is killed when the test ends."""

    store: str
    marks: MarksFile
    env: dict[str, str]
    started: list[Process] = field(default_factory=lambda: list[Process]())

    def server(self) -> HttpServerProcess:
        """``tests/deploy/worker_app.py``'s server (not started yet)."""
        server = HttpServerProcess(
            [sys.executable, "-m", "tests.deploy.worker_app"],
            env=self.env,
            cwd=ROOT,
            start_timeout=START_BOUND_S,
        )
        self.started.append(server)
        return server

    def worker(self, *options: str, metrics_port: int | None = None) -> WorkerProcess:
        """``worker tests.deploy.worker_app:app --store STORE OPTIONS...`` (not started yet);
        with ``metrics_port``, its metrics served there."""
        env = self.env if metrics_port is None else {**self.env, METRICS_ENV: str(metrics_port)}
        worker = WorkerProcess(["tests.deploy.worker_app:app", "--store", self.store, *options], env=env)
        self.started.append(worker)
        return worker


@contextmanager
def cluster(store: str, tmp_path: Path, *, lease_s: float = 30.0) -> Iterator[Cluster]:
    marks = tmp_path / "marks.jsonl"
    marks.touch()
    env = {
        **os.environ,
        **child_environment([ROOT]),
        STORE_ENV: store,
        MARKS_ENV: str(marks),
        LEASE_ENV: str(lease_s),
    }
    started = Cluster(store, MarksFile(marks), env)
    try:
        yield started
    finally:
        for process in started.started:
            if isinstance(process, HttpServerProcess):
                process.kill()
            process.stop()


async def start(*processes: Process) -> None:
    """Start ``processes`` at once (each is a fresh interpreter importing ``mcp``): each is up when
    this returns (a server listens, a worker said it takes tasks)."""
    with anyio.fail_after(START_BOUND_S):
        async with anyio.create_task_group() as group:
            for process in processes:
                group.start_soon(partial(anyio.to_thread.run_sync, process.start, abandon_on_cancel=True))


async def in_thread(function: Callable[[], Any]) -> Any:
    return await anyio.to_thread.run_sync(function, abandon_on_cancel=True)


# --- what the marks say ---------------------------------------------------------------------------


def work_args(
    label: str, seconds: float, *, rerun_seconds: float = 0.5, step_s: float = 0.1
) -> dict[str, Any]:
    return {"label": label, "seconds": seconds, "rerun_seconds": rerun_seconds, "step_s": step_s}


def peak_at_once(runs: Sequence[Run]) -> int:
    """The most runs alive at one moment (a run: from its ``start`` mark to its last mark)."""
    edges = sorted([(run.started, 1) for run in runs] + [(run.last, -1) for run in runs])
    alive = peak = 0
    for _moment, change in edges:  # at a tie an end (-1) sorts before a start: touching is not at once
        alive += change
        peak = max(peak, alive)
    return peak


def assert_no_task_ran_twice_at_once(by_task: dict[str, list[Run]]) -> None:
    """No two runs of one task were alive at once, in any processes (start to last mark)."""
    both = [
        (task, first.run, second.run)
        for task, runs in by_task.items()
        for index, first in enumerate(runs)
        for second in runs[index + 1 :]
        if overlap_s(first, second, math.inf) > 0
    ]
    assert both == [], f"runs of one task alive at once: {both}"


def text_of(result: Any) -> str:
    return "".join(block.text for block in result.content if block.type == "text")


async def results_of(runs: Sequence[Any]) -> list[Any]:
    """Every run followed to its result, all at once."""
    results: list[Any] = [None] * len(runs)

    async def follow(index: int, run: Any) -> None:
        results[index] = await run.result()

    async with anyio.create_task_group() as group:
        for index, run in enumerate(runs):
            group.start_soon(follow, index, run)
    return results


async def scrape(port: int) -> str:
    async with httpx.AsyncClient() as http:
        answer = await http.get(f"http://127.0.0.1:{port}/metrics")
    assert answer.status_code == 200
    return answer.text


def series(scraped: str, name: str) -> float:
    """The sum of a Prometheus series' values over its labels (0 when absent)."""
    return sum(float(line.rsplit(" ", 1)[1]) for line in scraped.splitlines() if line.startswith(name + "{"))


def a_start_of(task_id: str | None) -> Callable[[list[dict[str, Any]]], bool]:
    return lambda marks: any(mark["k"] == "start" and mark["task"] == task_id for mark in marks)


# --- 1. Redis: queued until a worker runs, then drained ten at a time by two workers -------------


async def test_queued_tasks_wait_for_a_worker_then_two_workers_drain_them_ten_at_a_time(
    shared_store: str, tmp_path: Path
) -> None:
    with cluster(shared_store, tmp_path) as deployed:
        server = deployed.server()
        await start(server)
        assert server.url is not None
        with anyio.fail_after(2 * BOUND_S):
            async with connect_http(server.url, dialect=NEWEST_DIALECT) as session:
                runs = [await start_tool(session, "work", work_args(f"t{n}", 1.0)) for n in range(20)]
                waiting = [await run.status() for run in runs]
                # No worker yet: every task is working and says it is queued; nothing ran.
                assert {(t.status, t.status_message) for t in waiting if t} == {(TaskStatus.WORKING, QUEUED)}
                assert len([t for t in waiting if t]) == 20
                assert deployed.marks.read() == []

                ports = [free_port(), free_port()]
                first, second = (deployed.worker("--concurrency", "5", metrics_port=port) for port in ports)
                await start(first, second)
                up = time.time()
                results = await results_of(runs)
                drained_wall_s = time.time() - up
                scraped = [await scrape(port) for port in ports]
    by_task = deployed.marks.runs()
    every_run = [run for task_runs in by_task.values() for run in task_runs]
    ids = [run.task_id for run in runs]
    assert sorted(by_task) == sorted(ids)
    assert [len(by_task[task_id]) for task_id in ids] == [1] * 20, "a task ran more than once"
    assert {run.ending for run in every_run} == {"end"}
    # Each result is the one its run returned.
    assert [result_run(text_of(result)) for result in results] == [by_task[t][0].run for t in ids]
    per_worker = {pid: [run for run in every_run if run.pid == pid] for pid in (first.pid, second.pid)}
    assert {run.pid for run in every_run} == {first.pid, second.pid}, "both workers ran some"
    peak = peak_at_once(every_run)
    assert peak <= 10
    assert all(peak_at_once(own) <= 5 for own in per_worker.values())
    assert_no_task_ran_twice_at_once(by_task)
    # What docs/deploy.md says to watch, from each worker's own metrics: its runs, and their waits.
    ran = [len(own) for own in per_worker.values()]
    assert [series(text, "mcp_tasks_worker_runs_total") for text in scraped] == ran
    assert [series(text, "mcp_tasks_queue_wait_seconds_count") for text in scraped] == ran
    mean_wait_s = sum(series(text, "mcp_tasks_queue_wait_seconds_sum") for text in scraped) / 20
    drain_s = max(run.last for run in every_run) - min(run.started for run in every_run)
    print(
        f"\n20 one-second tasks drained by 2 workers x 5 in {drain_s:.2f} s (first start to last end; "
        f"{drained_wall_s:.2f} s from both workers up to the last result seen); at most {peak} at once; "
        f"{' + '.join(map(str, ran))} runs per worker; mean queue wait {mean_wait_s:.2f} s "
        "(mcp_tasks.queue.wait, from queued to claimed, tasks queued before any worker ran)"
    )
    assert drain_s < BOUND_S


# --- 2. progress and cancel cross the store ------------------------------------------------------


async def test_a_workers_progress_reaches_the_client_and_a_cancel_reaches_the_workers_run(
    shared_store: str, tmp_path: Path
) -> None:
    with cluster(shared_store, tmp_path, lease_s=LONG_LEASE_S) as deployed:
        server, worker = deployed.server(), deployed.worker("--concurrency", "1")
        await start(server, worker)
        assert server.url is not None
        with anyio.fail_after(2 * BOUND_S):
            async with connect_http(server.url, dialect=NEWEST_DIALECT) as session:
                watch = Watch()
                run = await start_tool(session, "work", work_args("long", 60.0, step_s=0.2), on_status=watch)
                async with following(run):
                    stepped = await watch.until(
                        lambda t: t.progress is not None and t.progress.progress >= 2, within=BOUND_S
                    )
                    asked = time.time()
                    cancelled = await run.cancel()
                    marks = await deployed.marks.until(
                        lambda marks: any(m["k"] == "stop" and m["task"] == run.task_id for m in marks),
                        within=BOUND_S,
                        what="the worker's run stopped",
                    )
                    seen = await watch.until(is_(TaskStatus.CANCELLED), within=BOUND_S)
    # The worker's own report_progress(step, 300, "long: step N/300"), numbers and message.
    assert stepped.progress is not None
    step = int(stepped.progress.progress)
    assert (stepped.progress.total, stepped.status_message) == (300, f"long: step {step}/300")
    assert cancelled is not None
    assert cancelled.status is TaskStatus.CANCELLED
    assert seen.status is TaskStatus.CANCELLED
    stopped = next(m for m in marks if m["k"] == "stop" and m["task"] == run.task_id)
    assert stopped["pid"] == worker.pid
    reached_s = stopped["t"] - asked
    print(
        f"\ntasks/cancel through the server reached the run in the worker in {reached_s:.3f} s (target: 1 s)"
    )
    assert reached_s < BOUND_S < LONG_LEASE_S / 3  # only pub/sub could bring it this soon


# --- 3. kill -9 of a worker mid-run --------------------------------------------------------------


async def test_a_killed_workers_runs_end_within_the_lease_rerun_elsewhere_or_failed(
    shared_store: str, tmp_path: Path
) -> None:
    lease_s = 2.0
    with cluster(shared_store, tmp_path, lease_s=lease_s) as deployed:
        server, doomed = deployed.server(), deployed.worker("--concurrency", "2")
        await start(server, doomed)
        assert server.url is not None
        with anyio.fail_after(2 * BOUND_S):
            async with connect_http(server.url, dialect=NEWEST_DIALECT) as session:
                again = await start_tool(session, "redo", work_args("redo", 60.0))
                once = await start_tool(session, "work", work_args("work", 60.0))
                for run in (again, once):  # both run on the first worker (the only one yet)
                    await deployed.marks.until(a_start_of(run.task_id), within=BOUND_S, what="a run started")
                survivor = deployed.worker("--concurrency", "2")
                await start(survivor)
                await in_thread(doomed.stop)  # SIGKILL
                killed_at = datetime.now(timezone.utc)
                redone = await again.result()
                with pytest.raises(TaskFailedError) as failed:
                    await once.result()
                failed_task = await once.status()
    by_task = deployed.marks.runs()
    assert again.task_id is not None
    assert once.task_id is not None
    lost, rerun = by_task[again.task_id]
    assert (lost.pid, lost.ending) == (doomed.pid, None)  # killed mid-run: neither end nor stop
    assert (rerun.pid, rerun.attempt, rerun.ending) == (survivor.pid, 2, "end")
    assert result_run(text_of(redone)) == rerun.run
    [only] = by_task[once.task_id]
    assert (only.pid, only.ending) == (doomed.pid, None)
    assert_no_task_ran_twice_at_once(by_task)
    # The run that may not run again failed with the reason, within the lease (on the store's clock).
    assert WORKER_STOPPED in str(failed.value), failed.value
    assert failed_task is not None
    assert failed_task.status is TaskStatus.FAILED
    ran_out = re.search(r"its lease ran out at (\S+)\)", failed_task.status_message or "")
    assert ran_out is not None, failed_task
    lease_until = parse_timestamp(ran_out.group(1))
    assert lease_until <= killed_at + timedelta(seconds=lease_s)
    assert failed_task.last_updated_at - lease_until < timedelta(seconds=SWEEP_S)
    rerun_after_s = rerun.started - killed_at.timestamp()
    failed_after_s = (failed_task.last_updated_at - killed_at).total_seconds()
    print(
        f"\nworker killed: the non-rerun task failed {failed_after_s:.2f} s later, the re-run tool's"
        f" task started again on the other worker {rerun_after_s:.2f} s later"
        f" (lease {lease_s:g} s)"
    )


# --- 4. SIGTERM: the runs get the grace, the rest are given back ---------------------------------


async def test_a_stopped_worker_finishes_what_it_can_within_the_grace_and_gives_back_the_rest(
    shared_store: str, tmp_path: Path
) -> None:
    grace_s = 3.0
    with cluster(shared_store, tmp_path) as deployed:
        server = deployed.server()
        stopping = deployed.worker("--concurrency", "4", "--grace-s", str(grace_s), "-v")
        await start(server, stopping)
        assert server.url is not None
        assert stopping.worker_id is not None
        with anyio.fail_after(3 * BOUND_S):
            async with connect_http(server.url, dialect=NEWEST_DIALECT) as session:
                short = await start_tool(session, "work", work_args("short", 1.0))
                longs = [await start_tool(session, "work", work_args(f"long{n}", 60.0)) for n in range(3)]
                for run in (short, *longs):
                    await deployed.marks.until(a_start_of(run.task_id), within=BOUND_S, what="a run started")
                stopping.signal(signal.SIGTERM)
                assert await in_thread(stopping.exit_code) == 0
                # Given back, not failed: each long task waits in the queue for the next worker.
                waiting = [await run.status() for run in longs]
                given_back = f"given back by worker {stopping.worker_id} as it stopped; {QUEUED}"
                assert [(t.status, t.status_message) for t in waiting if t] == [
                    (TaskStatus.WORKING, given_back)
                ] * 3
                taker = deployed.worker("--concurrency", "4")
                await start(taker)
                results = await results_of([short, *longs])
    assert any("gave back 3 running task(s) to the queue" in line for line in stopping.lines), stopping.lines
    by_task = deployed.marks.runs()
    assert short.task_id is not None
    [finished] = by_task[short.task_id]
    assert (finished.pid, finished.ending) == (stopping.pid, "end")  # within the grace
    assert result_run(text_of(results[0])) == finished.run
    for run, result in zip(longs, results[1:], strict=True):
        assert run.task_id is not None
        given, taken = by_task[run.task_id]
        assert (given.pid, given.ending) == (stopping.pid, "stop")
        assert (taken.pid, taken.ending) == (taker.pid, "end")
        assert result_run(text_of(result)) == taken.run
    assert_no_task_ran_twice_at_once(by_task)


# --- 5. SQLite: the same flow on one file --------------------------------------------------------


async def test_on_one_sqlite_file_tasks_wait_for_the_worker_it_drains_them_and_a_cancel_reaches_it(
    tmp_path: Path,
) -> None:
    store = f"sqlite:///{tmp_path / 'tasks.db'}"
    with cluster(store, tmp_path, lease_s=LONG_LEASE_S) as deployed:
        server = deployed.server()
        await start(server)
        assert server.url is not None
        with anyio.fail_after(2 * BOUND_S):
            async with connect_http(server.url, dialect=NEWEST_DIALECT) as session:
                watch = Watch()
                runs = [
                    await start_tool(session, "work", work_args(f"s{n}", 0.5), on_status=watch)
                    for n in range(6)
                ]
                waiting = [await run.status() for run in runs]
                assert {(t.status, t.status_message) for t in waiting if t} == {(TaskStatus.WORKING, QUEUED)}
                assert deployed.marks.read() == []
                worker = deployed.worker("--concurrency", "3")
                await start(worker)
                results = await results_of(runs)

                # SQLite has no notifier: the worker re-reads the tasks it runs (docs/deploy.md).
                long = await start_tool(session, "work", work_args("long", 60.0))
                await deployed.marks.until(a_start_of(long.task_id), within=BOUND_S, what="the long run")
                asked = time.time()
                cancelled = await long.cancel()
                marks = await deployed.marks.until(
                    lambda marks: any(m["k"] == "stop" and m["task"] == long.task_id for m in marks),
                    within=BOUND_S,
                    what="the worker's run stopped",
                )
    assert cancelled is not None
    assert cancelled.status is TaskStatus.CANCELLED
    reached_s = next(m["t"] for m in marks if m["k"] == "stop" and m["task"] == long.task_id) - asked
    print(f"\nSQLite: tasks/cancel through the server reached the run in the worker in {reached_s:.3f} s")
    assert reached_s < BOUND_S < LONG_LEASE_S / 3  # the worker's poll of what it holds, not a renewal
    by_task = deployed.marks.runs()
    del by_task[str(long.task_id)]
    every_run = [run for task_runs in by_task.values() for run in task_runs]
    assert [len(by_task[str(run.task_id)]) for run in runs] == [1] * 6
    assert {(run.pid, run.ending) for run in every_run} == {(worker.pid, "end")}
    assert [result_run(text_of(result)) for result in results] == [
        by_task[str(r.task_id)][0].run for r in runs
    ]
    assert peak_at_once(every_run) <= 3
    assert_no_task_ran_twice_at_once(by_task)
    # The worker's report_progress (numbers and message) as the client heard it.
    stepped = [
        t
        for t in watch.seen
        if t.progress is not None and re.fullmatch(r"s\d: step \d/5", t.status_message or "")
    ]
    assert stepped, watch.messages


# --- 6. the recipes of docs/deploy.md, as written: a worker's question answered, both dialects ---


def doc_commands(name: str) -> list[list[str]]:
    """The commands of docs/deploy.md's block marked ``<!-- test: NAME -->``, split as a shell would."""
    lines = [line.strip() for line in (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8").splitlines()]
    opening = lines.index(f"<!-- test: {name} -->") + 1
    assert lines[opening] == "```", f"docs/deploy.md: no code block after <!-- test: {name} -->"
    closing = lines.index("```", opening + 1)
    commands = [shlex.split(line, comments=True) for line in lines[opening + 1 : closing]]
    return [command for command in commands if command]


def as_here(command: list[str], swaps: dict[str, str]) -> list[str]:
    """A command of the page as this test runs it: this interpreter's ``mcp-tasks-compat``, and
    this test's store and free ports for the page's (``swaps``: text of the page to its own)."""
    assert command[0] == "mcp-tasks-compat", command
    words = command[1:]
    for page, here in swaps.items():
        words = [word.replace(page, here) if page.startswith(("redis:", "127.")) else word for word in words]
        words = [here if word == page else word for word in words]
    return [*CLI, *words]


async def _answered_in_each_dialect(url: str) -> list[str]:
    """``ask`` called as a task in each dialect the installed mcp speaks (mcp 1.x: 2025-11-25; 2.x:
    both, each forced), its question answered by the client's callback; the task ids."""
    task_ids: list[str] = []
    for dialect in dialects():
        answering, watch = Answering(), Watch()
        options = {**session_kwargs(dialect=dialect), "elicitation_callback": answering}
        with anyio.fail_after(BOUND_S):
            async with connect_http(url, dialect=dialect, session_options=options) as session:
                run = await start_tool(session, "ask", {"question": "Your name?"}, on_status=watch)
                result = await run.result()
        assert text_of(result) == "Ada", dialect
        assert answering.asked == ["Your name?"], dialect
        if dialect == DIALECT_2026_07_28:  # the client reads the question off the input_required status
            assert any(t.status is TaskStatus.INPUT_REQUIRED for t in watch.seen), watch.messages
        assert run.task_id is not None
        task_ids.append(run.task_id)
    return task_ids


async def test_the_redis_recipe_runs_and_a_workers_question_is_answered_in_each_dialect(
    redis_url: str, tmp_path: Path
) -> None:
    recipe, watching = doc_commands("workers-recipe"), doc_commands("workers-watch")
    metrics_port = free_port()
    swaps = {
        "redis://127.0.0.1:6379/0": fresh_redis_db(redis_url),
        "127.0.0.1:9464": f"127.0.0.1:{metrics_port}",
        "9464": str(metrics_port),
        "8000": "0",
    }
    assert [command[1] for command in recipe] == ["example-server", "worker", "worker"]
    server = HttpServerProcess(as_here(recipe[0], swaps), start_timeout=START_BOUND_S)
    workers = [WorkerProcess(as_here(command, swaps)[len(CLI) + 1 :], env=None) for command in recipe[1:]]
    try:
        await start(server, *workers)
        assert server.url is not None
        assert [worker.lines[-1].endswith(", 5 at a time") for worker in workers] == [True, True]
        task_ids = await _answered_in_each_dialect(server.url)
        assert DIALECT_2025_11_25 in dialects()

        # What to watch, as the page shows it: the operator's list, and the server's queue depth.
        listing, curl = watching
        with anyio.fail_after(START_BOUND_S):
            listed = await anyio.run_process(as_here(listing, swaps), check=False)
        assert listed.returncode == 0, listed.stderr.decode()
        out = listed.stdout.decode()
        rows = {line.split()[0]: line.split()[1:3] for line in out.splitlines() if line.strip()}
        assert [rows.get(task_id) for task_id in task_ids] == [["completed", "ask"]] * len(task_ids), out
        assert curl[:2] == ["curl", "-s"]
        assert curl[3:5] == ["|", "grep"], curl
        url = curl[2].replace("127.0.0.1:9464", f"127.0.0.1:{metrics_port}")
        assert url == f"http://127.0.0.1:{metrics_port}/metrics"
        grepped = [line for line in (await scrape(metrics_port)).splitlines() if curl[5] in line]
        assert any(line.startswith("mcp_tasks_queue_depth{") for line in grepped), grepped
    finally:
        for worker in workers:
            worker.stop()
        server.kill()
        server.stop()


async def test_the_sqlite_recipe_runs_as_written(tmp_path: Path) -> None:
    recipe = doc_commands("workers-sqlite")
    assert [command[1] for command in recipe] == ["example-server", "worker"]
    swaps = {"8000": "0"}
    # The page's relative sqlite:///tasks.db: both processes in one folder, as on one host.
    server = HttpServerProcess(as_here(recipe[0], swaps), cwd=tmp_path, start_timeout=START_BOUND_S)
    worker = WorkerProcess(as_here(recipe[1], swaps)[len(CLI) + 1 :], env=None, cwd=tmp_path)
    try:
        await start(server, worker)
        assert server.url is not None
        with anyio.fail_after(BOUND_S):
            async with connect_http(server.url, dialect=NEWEST_DIALECT) as session:
                watch = Watch()
                run = await start_tool(
                    session, "slow_echo", {"text": "on a worker", "seconds": 0.4, "steps": 2}, on_status=watch
                )
                result = await run.result()
                ended = await run.status()
    finally:
        worker.stop()
        server.kill()
        server.stop()
    assert text_of(result) == "on a worker"
    assert watch.seen[0].status_message == QUEUED  # the call's answer: queued, for the worker to run
    assert ended is not None
    assert (ended.status, ended.status_message) == (TaskStatus.COMPLETED, "step 2/2")
    assert (tmp_path / "tasks.db").exists()
