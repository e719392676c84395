"""Section 5b (page item 9), workers: task runs queued by a server and drained by worker processes.

Issue 34. One ``redis-server`` (started on a free loopback port, stopped at the end; a database of
its own for each row). A server queues each task, runs none, and worker processes take, run and
finish them; the client follows the tasks through the server. The same tool body on both sides
(:mod:`benchmarks.worker_apps`: ``sleep_job(text, seconds)`` sleeps, then returns ``text`` and the
run's start and end on the system-wide monotonic clock, and the pid that ran it):

* ours: a ``TaskServer(run_on="workers")`` on ``redis://`` and ``mcp-tasks-compat worker
  benchmarks.worker_apps.ours_app:app --store URL --concurrency N`` processes;
* FastMCP 4 + fastmcp-tasks (mcp 2.x): ``TasksExtension()`` on the same Redis through
  ``FASTMCP_DOCKET_URL``, the server's embedded Docket worker at ``FASTMCP_DOCKET_CONCURRENCY=0``
  (it then takes nothing: fastmcp-tasks 4.1.4 has no switch to leave it out), and ``python -m
  fastmcp_tasks.worker_cli worker benchmarks/worker_apps/fastmcp4_app.py:mcp`` processes at
  ``FASTMCP_DOCKET_CONCURRENCY=N``.

Every result is checked: its text is the one sent, and the pid that ran it is one of the workers'
(not the server's). Rows:

* ``drain``, per (kind, workers): ``tasks`` tasks of ``seconds`` created by ``sessions``
  creators, one session of our client each, each creating its share one after the other
  (``start_tool``), every task followed to its result. (Not all at once: FastMCP 4's server
  answers ``Internal server error`` to creates beyond 100 at once, its Docket's Redis pool being
  redis-py's default of 100 connections: ``MaxConnectionsError: Too many connections``.) Drain time
  from the first create sent to the last result read (the client's view, which includes how the
  client learns of the end: our server pushes on 2026-07-28, FastMCP 4 is polled at its 5 s
  ``pollIntervalMs``), and to the last run's end (the queue and the workers alone); the runs
  at once (from the runs' own clocks), tasks per worker, the workers' peak RSS, each create's
  latency and the requests the sessions wrote per task (by method).
* then ``pickup`` tasks created one every ``pickup_gap_s`` while the workers have free slots: the
  extra latency a queued task pays, **pickup** = the run's start (the tool's clock, in the
  worker) minus the create sent (the client's clock); and the result read minus the create sent
  minus ``seconds`` (the caller's whole extra, following included).
* ``rss``, per kind: one worker at concurrency ``rss_running``, that many tasks of
  ``rss_seconds`` created by the same creators; VmRSS of the worker process (/proc/PID/status) idle and while
  they all run (checked from the runs' clocks: the sample falls inside every run).

Targets: drain to the last run's end at most FastMCP 4's with the same workers (mcp 2.x); the
speed-up from 1 to N workers at least 0.8 x N (linear in workers).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.abc

from .. import clients
from ..deployments import Deployment, RedisSite, deployment, read_rss_kib, redis_site
from ..harness import Bench
from ..mechanisms import RequestCounter
from ..section import Row, Section, find, server_name, table, target
from ..stats import summary

__all__ = ["SECTION", "WorkersProfile"]

TOOL = "sleep_job"


@dataclass(frozen=True)
class WorkersProfile:
    tasks: int  # drained per row
    seconds: float  # the tool's sleep
    workers: tuple[int, ...]  # worker processes per drain row
    concurrency: int  # runs at once per worker
    sessions: int  # client sessions the tasks are created through
    pickup: int  # tasks created one at a time, workers idle
    pickup_gap_s: float  # between two of them (below concurrency / seconds: slots stay free)
    rss_running: int  # tasks running at once in the one worker of the rss row
    rss_seconds: float  # their length: outlasts creating them all
    rss_settle_s: float  # after the last create, before the sample
    start_bound_s: float  # a bound on a process getting ready


PROFILES = {
    "smoke": WorkersProfile(
        tasks=8,
        seconds=0.2,
        workers=(1, 2),
        concurrency=2,
        sessions=2,
        pickup=3,
        pickup_gap_s=0.15,
        rss_running=4,
        rss_seconds=2.0,
        rss_settle_s=0.5,
        start_bound_s=180.0,  # a bound: a 2-core machine loaded 15 times over took more than 60 s
    ),
    "full": WorkersProfile(
        tasks=200,
        seconds=1.0,
        workers=(1, 2, 4),
        concurrency=10,
        sessions=10,
        pickup=20,
        pickup_gap_s=0.15,
        rss_running=100,
        rss_seconds=5.0,
        rss_settle_s=1.0,
        start_bound_s=60.0,
    ),
}


# --- one task, followed to its result ----------------------------------------------------------------


@dataclass
class Run:
    """One task as the client saw it (its clock) and as the worker ran it (the tool's clock)."""

    tag: str
    sent: float = 0.0
    created: float = 0.0
    read: float = 0.0
    started: float = 0.0
    ended: float = 0.0
    pid: int = 0


async def start_one(
    conn: clients.Conn, tag: str, seconds: float, runs: list[Run], group: anyio.abc.TaskGroup
) -> None:
    """Start a task of the tool; once created, it is followed to its result in ``group``, and its
    result checked to be the tool's (:class:`Run` added to ``runs``)."""
    run = Run(tag)
    run.sent = time.monotonic()
    handle = await conn.start(TOOL, {"text": tag, "seconds": seconds})
    run.created = time.monotonic()
    group.start_soon(follow, handle, run, runs)


async def follow(handle: Any, run: Run, runs: list[Run]) -> None:
    result = await handle.result()
    run.read = time.monotonic()
    text = clients.text_of(result)
    try:
        said = json.loads(text)
    except ValueError:
        raise RuntimeError(f"task {run.tag}: the result is not the tool's: {text[:200]!r}") from None
    if said.get("text") != run.tag:
        raise RuntimeError(f"task {run.tag}: the result says {said.get('text')!r}")
    run.started, run.ended, run.pid = float(said["started"]), float(said["ended"]), int(said["pid"])
    runs.append(run)


async def create_all(
    conns: Sequence[clients.Conn],
    count: int,
    prefix: str,
    seconds: float,
    runs: list[Run],
    *,
    all_created: anyio.Event | None = None,
) -> None:
    """``count`` tasks created by one creator per session, each creating its share one after the
    other (as a batch submitter does), every task followed to its result; returns once all came back.

    Not all at once: FastMCP 4's server fails creates (``Internal server error``) beyond its Redis
    pool's 100 connections (redis-py's default; see the module docstring). ``all_created`` is set
    once every create was answered."""
    created = [0]

    async def creator(conn: clients.Conn, indexes: range, group: anyio.abc.TaskGroup) -> None:
        for index in indexes:
            await start_one(conn, f"{prefix}{index}", seconds, runs, group)
            created[0] += 1
            if created[0] == count and all_created is not None:
                all_created.set()

    async with anyio.create_task_group() as group:
        for number, conn in enumerate(conns):
            group.start_soon(creator, conn, range(number, count, len(conns)), group)


def check_ran_on_workers(runs: Sequence[Run], expected: int, place: Deployment) -> None:
    """Every task came back, each run by one of the workers (not the server)."""
    if len(runs) != expected:
        raise RuntimeError(f"{len(runs)} of {expected} tasks came back")
    elsewhere = {run.pid for run in runs} - place.worker_pids
    if elsewhere:
        raise RuntimeError(f"runs on pids {sorted(elsewhere)}, not the workers' {sorted(place.worker_pids)}")


def most_at_once(runs: Sequence[Run]) -> int:
    """The most runs inside the tool at one instant, from the runs' own start and end."""
    events = sorted([(run.started, 1) for run in runs] + [(run.ended, -1) for run in runs])
    at_once = best = 0
    for _, step in events:
        at_once += step
        best = max(best, at_once)
    return best


def ms(values: Sequence[float]) -> dict[str, Any]:
    return summary([value * 1000 for value in values], digits=1)


# --- the rows ----------------------------------------------------------------------------------------


async def drain_row(bench: Bench, profile: WorkersProfile, site: RedisSite, kind: str, workers: int) -> None:
    """``profile.tasks`` tasks drained by ``workers`` workers, then the pickup latency at idle."""
    row: dict[str, Any] = {
        "kind": kind,
        "variant": "drain",
        "transport": "http",
        "store": "redis",
        "workers": workers,
        "concurrency": profile.concurrency,
        "tasks": profile.tasks,
        "seconds": profile.seconds,
        "sessions": profile.sessions,
    }
    counter = RequestCounter()  # the requests the sessions write, by method
    async with (
        deployment(kind, site.url(), workers, profile.concurrency, profile.start_bound_s) as place,
        AsyncExitStack() as stack,
    ):
        conns = [await stack.enter_async_context(place.connect(counter)) for _ in range(profile.sessions)]
        row["dialect"], row["protocol_version"] = conns[0].dialect, conns[0].protocol_version
        row["worker_rss_idle_kib"] = sum(place.worker_rss_kib())
        warm: list[Run] = []  # every session (our client learns the tool's task support on its first call)
        await create_all(conns, len(conns), "warm-", 0.0, warm)
        check_ran_on_workers(warm, len(conns), place)

        runs: list[Run] = []
        peak_rss = [0]
        counter.by_method.clear()
        ideal_s = math.ceil(profile.tasks / (workers * profile.concurrency)) * profile.seconds
        with anyio.fail_after(ideal_s * 3 + 60):
            async with anyio.create_task_group() as group:
                sampling = anyio.CancelScope()

                async def sample_rss() -> None:
                    with sampling:
                        while True:
                            peak_rss[0] = max(peak_rss[0], sum(place.worker_rss_kib()))
                            await anyio.sleep(0.2)

                group.start_soon(sample_rss)
                await create_all(conns, profile.tasks, "t", profile.seconds, runs)
                sampling.cancel()
        check_ran_on_workers(runs, profile.tasks, place)
        first = min(run.sent for run in runs)
        row["drain_s"] = round(max(run.read for run in runs) - first, 3)
        row["drain_runs_s"] = round(max(run.ended for run in runs) - first, 3)
        row["ideal_s"] = ideal_s
        row["create_per_s"] = round(profile.tasks / (max(run.created for run in runs) - first), 1)
        row["create_ms"] = ms([run.created - run.sent for run in runs])
        row["queue_wait_ms"] = ms([run.started - run.sent for run in runs])
        row["requests_per_task"] = {
            method: round(count / profile.tasks, 2) for method, count in sorted(counter.by_method.items())
        }
        row["most_at_once"] = most_at_once(runs)
        row["tasks_per_worker"] = sorted(
            (sum(1 for run in runs if run.pid == pid) for pid in place.worker_pids), reverse=True
        )
        row["worker_rss_peak_kib"] = peak_rss[0]

        pickups: list[Run] = []
        with anyio.fail_after(profile.pickup * profile.pickup_gap_s + profile.seconds * 3 + 60):
            async with anyio.create_task_group() as group:
                for index in range(profile.pickup):
                    conn = conns[index % len(conns)]
                    group.start_soon(start_one, conn, f"p{index}", profile.seconds, pickups, group)
                    await anyio.sleep(profile.pickup_gap_s)
        check_ran_on_workers(pickups, profile.pickup, place)
        row["pickup_most_at_once"] = most_at_once(pickups)
        row["pickup_ms"] = ms([run.started - run.sent for run in pickups])
        row["pickup_end_to_end_extra_ms"] = ms([run.read - run.sent - profile.seconds for run in pickups])
        row["run_end_to_read_ms"] = ms([run.read - run.ended for run in pickups])
    bench.add("workers", **row)


async def rss_row(bench: Bench, profile: WorkersProfile, site: RedisSite, kind: str) -> None:
    """One worker at concurrency ``rss_running``, that many tasks running: its RSS."""
    size = profile.rss_running
    row: dict[str, Any] = {
        "kind": kind,
        "variant": "rss",
        "transport": "http",
        "store": "redis",
        "workers": 1,
        "concurrency": size,
        "tasks": size,
        "seconds": profile.rss_seconds,
        "sessions": profile.sessions,
    }
    async with (
        deployment(kind, site.url(), 1, size, profile.start_bound_s) as place,
        AsyncExitStack() as stack,
    ):
        conns = [await stack.enter_async_context(place.connect()) for _ in range(profile.sessions)]
        row["dialect"], row["protocol_version"] = conns[0].dialect, conns[0].protocol_version
        warm: list[Run] = []  # every session (our client learns the tool's task support on its first call)
        await create_all(conns, len(conns), "warm-", 0.0, warm)
        check_ran_on_workers(warm, len(conns), place)
        server_pid = place.process.process.pid if place.process.process is not None else None
        row["worker_rss_idle_kib"] = place.worker_rss_kib()[0]
        row["server_rss_idle_kib"] = read_rss_kib(server_pid) if server_pid else None

        runs: list[Run] = []
        sample: dict[str, Any] = {}
        all_created = anyio.Event()

        async def sample_when_running() -> None:
            await all_created.wait()
            await anyio.sleep(profile.rss_settle_s)
            sample["at"] = time.monotonic()
            sample["worker_kib"] = place.worker_rss_kib()[0]
            sample["server_kib"] = read_rss_kib(server_pid) if server_pid else None

        with anyio.fail_after(profile.rss_seconds * 3 + 60):
            async with anyio.create_task_group() as group:
                group.start_soon(sample_when_running)
                await create_all(conns, size, "r", profile.rss_seconds, runs, all_created=all_created)
        check_ran_on_workers(runs, size, place)
        at = sample["at"]
        row["running_at_sample"] = sum(1 for run in runs if run.started <= at <= run.ended)
        row["create_s"] = round(max(run.created for run in runs) - min(run.sent for run in runs), 3)
        row["worker_rss_running_kib"] = sample["worker_kib"]
        row["server_rss_running_kib"] = sample["server_kib"]
        row["worker_rss_per_task_kib"] = round((sample["worker_kib"] - row["worker_rss_idle_kib"]) / size, 2)
    bench.add("workers", **row)


async def measure(bench: Bench, profile: WorkersProfile) -> None:
    kinds = (["ours"] if bench.ours else []) + [kind for kind in bench.peers() if kind == "fastmcp4"]
    if not kinds:
        bench.notes.append("workers: not measured (neither ours nor FastMCP 4 in this environment)")
        return
    with redis_site() as site:
        if isinstance(site, str):
            bench.notes.append(f"workers: not measured: {site}")
            return
        for kind in kinds:
            for workers in profile.workers:
                await bench.guarded(
                    f"workers/{kind}/drain/{workers}",
                    lambda k=kind, w=workers: drain_row(bench, profile, site, k, w),
                )
            await bench.guarded(f"workers/{kind}/rss", lambda k=kind: rss_row(bench, profile, site, k))


# --- targets and tables ------------------------------------------------------------------------------

SCALING_TARGET = 0.8  # speed-up from 1 to N workers, as a share of N


def targets(rows: Sequence[Row]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    drains = find(rows, section="workers", variant="drain")
    for row in find(drains, kind="ours"):
        where = f"mcp{row['major']}, {row['dialect']}"
        single = [r for r in find(drains, kind="ours", major=row["major"], workers=1)]
        if row["workers"] > 1 and single:
            speedup = single[0]["drain_runs_s"] / row["drain_runs_s"]
            out.append(
                target(
                    f"workers: speed-up from 1 to {row['workers']} workers, share of linear ({where})",
                    round(speedup / row["workers"], 3),
                    SCALING_TARGET,
                    at_most=False,
                    detail=f"{row['tasks']} tasks of {row['seconds']:g} s, drained to the last run's end in "
                    f"{single[0]['drain_runs_s']} s by 1 worker, {row['drain_runs_s']} s by {row['workers']} "
                    f"(ideal {row['ideal_s']:g} s)",
                )
            )
        peer = find(drains, kind="fastmcp4", major=row["major"], workers=row["workers"])
        if peer:
            out.append(
                target(
                    f"workers: drain time ÷ FastMCP 4's, {row['workers']} worker"
                    f"{'s' if row['workers'] > 1 else ''} x {row['concurrency']} ({where})",
                    round(row["drain_runs_s"] / peer[0]["drain_runs_s"], 3),
                    1.0,
                    at_most=True,
                    detail=f"to the last run's end {row['drain_runs_s']} vs {peer[0]['drain_runs_s']} s; "
                    f"to the last result read {row['drain_s']} vs {peer[0]['drain_s']} s",
                )
            )
    return out


def _stats(stats: Row | None) -> str | None:
    if not stats or stats.get("median") is None:
        return None
    return f"{stats['median']:g} / {stats['p90']:g}"


def _mib(kib: float | None) -> str | None:
    return None if kib is None else f"{kib / 1024:.1f}"


def tables(rows: Sequence[Row]) -> list[str]:
    mine = find(rows, section="workers")
    if not mine:
        return []
    drains = find(mine, variant="drain")
    rss = find(mine, variant="rss")
    return [
        "### 5b. Task runs on workers (a server queues each task in Redis, worker processes run it; tool "
        "`sleep_job`, followed by our client over HTTP)",
        table(
            [
                "mcp",
                "server + workers",
                "dialect",
                "workers x runs each",
                "tasks x s",
                "drain to last result read s",
                "drain to last run's end s (ideal)",
                "speed-up vs 1 worker",
                "runs at once (most)",
                "tasks per worker",
                "created/s",
                "create ms p50 / p90",
                "requests per task",
                "pickup ms p50 / p90",
                "create → result read - run, ms p50 / p90",
                "workers' RSS idle → peak MiB",
            ],
            (
                (
                    r["major"],
                    server_name(r["kind"]),
                    r.get("dialect"),
                    f"{r['workers']} x {r['concurrency']}",
                    f"{r['tasks']} x {r['seconds']:g}",
                    r["drain_s"],
                    f"{r['drain_runs_s']} ({r['ideal_s']:g})",
                    _speedup(drains, r),
                    r["most_at_once"],
                    " / ".join(str(count) for count in r["tasks_per_worker"]),
                    r["create_per_s"],
                    _stats(r.get("create_ms")),
                    _requests(r.get("requests_per_task")),
                    _stats(r.get("pickup_ms")),
                    _stats(r.get("pickup_end_to_end_extra_ms")),
                    f"{_mib(r['worker_rss_idle_kib'])} → {_mib(r['worker_rss_peak_kib'])}",
                )
                for r in drains
            ),
        ),
        table(
            [
                "mcp",
                "server + worker",
                "runs at once in one worker (at the sample)",
                "tasks x s",
                "worker RSS idle MiB",
                "worker RSS running MiB",
                "per running task KiB",
                "server RSS idle → running MiB",
            ],
            (
                (
                    r["major"],
                    server_name(r["kind"]),
                    f"{r['running_at_sample']} of {r['tasks']}",
                    f"{r['tasks']} x {r['seconds']:g}",
                    _mib(r["worker_rss_idle_kib"]),
                    _mib(r["worker_rss_running_kib"]),
                    r["worker_rss_per_task_kib"],
                    f"{_mib(r.get('server_rss_idle_kib'))} → {_mib(r.get('server_rss_running_kib'))}",
                )
                for r in rss
            ),
        ),
    ]


def _requests(per_task: Row | None) -> str | None:
    if not per_task:
        return None
    return ", ".join(f"{method} {count:g}" for method, count in per_task.items())


def _speedup(drains: Sequence[Row], row: Row) -> str | None:
    single = find(drains, kind=row["kind"], major=row["major"], workers=1)
    if not single or row["workers"] == 1:
        return "-" if row["workers"] == 1 else None
    return f"{single[0]['drain_runs_s'] / row['drain_runs_s']:.2f}x"


DESCRIBED = """\
9. **Task runs on workers** (table 5b, issue 34): a server queues each task in Redis (one
   `redis-server` the bench starts, a database per row) and runs none; worker processes take, run
   and finish them; our client follows each task through the server over streamable HTTP. Both
   sides run the same tool body, `sleep_job(text, seconds)`, which returns the text it was given,
   the run's start and end on CLOCK_MONOTONIC and the pid that ran it: every result is checked
   (its text, and a worker's pid, not the server's). Ours: a `TaskServer(run_on="workers")` and
   `mcp-tasks-compat worker MODULE:ATTR --store redis://... --concurrency 10` processes. FastMCP 4
   + fastmcp-tasks (mcp 2.x only): `TasksExtension()` with `FASTMCP_DOCKET_URL` on the same Redis,
   the server's embedded Docket worker at `FASTMCP_DOCKET_CONCURRENCY=0` (it then takes nothing;
   there is no switch to leave it out) and `python -m fastmcp_tasks.worker_cli worker app.py:mcp`
   processes at concurrency 10, its defaults otherwise (a 5 s `pollIntervalMs`, which our client
   honours). Per row, a fresh server and 1, 2 or 4 workers: 200 tasks of 1 s created by 10
   creators, one session each, each creating its share one after the other (FastMCP 4's server
   fails creates beyond 100 at once: its Redis pool's 100 connections), every task followed to
   its result; drained from the first create sent to the last result read by the client, and to
   the last run's end (the queue and the workers alone; ideal: 200 / (workers x 10) s). Then 20
   tasks created 0.15 s apart while slots are free: **pickup**, the extra latency a queued task
   pays, is the run's start in the worker minus the create sent; the caller's whole extra is the
   result read minus the create sent minus 1 s. Worker RSS (VmRSS from /proc/PID/status): one
   worker at concurrency 100 with 100 tasks of 5 s running, checked from the runs' clocks (the
   sample falls inside every run). Ours on mcp 2.x in the 2026-07-28 dialect only (the one the
   client negotiates)."""

SECTION = Section(
    name="workers",
    profiles=PROFILES,
    measure=measure,
    targets=targets,
    tables=tables,
    described=DESCRIBED,
)
