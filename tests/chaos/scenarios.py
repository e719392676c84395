"""The faults, each played on real replicas and a real store, and the figures each leaves.

Every scenario starts replicas of ``tests/chaos/server.py`` on one store, starts tasks of its
``work`` tool (declared ``reruns=``) through one replica, does its fault, reads every task's end
through a replica that is still up, and counts from the tool's marks and those ends (:class:`Figures`):

* **overlaps**: pairs of runs of one task alive together for more than
  :data:`ALLOWED_OVERLAP_S`, outside the fault's own window (what fencing must prevent: two runs
  at once while both could hear the store), and the largest such overlap in seconds;
* **stale**: tasks whose result names a run other than the newest claim's (the highest attempt);
* **lost**: acknowledged tasks that are unknown at the end, or ended failed or cancelled (every
  run here may run again, and the client never cancels);
* **stuck**: tasks not terminal within a bound after the fault (the lease, a sweep, the runs).

Waits are on events (marks appearing, results arriving) and bounded; the only timed waits are
the faults' own lengths (how long a process stays stopped, a link cut, the store away) and the
skew scenario's watch for a re-run that must not come.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import anyio
import anyio.to_thread

from mcp_tasks_compat._detect import sdk_info

from .cluster import Cluster, Replica, Work, cluster, outcomes, start_tasks
from .faults import relay_to, skewed_environment, sqlite_write_lock_free, step_clock, stepped_environment
from .marks import Outcome, Run, Window, active_at, latest_run, overlap_s, result_run, runs_by_task

__all__ = [
    "ALLOWED_OVERLAP_S",
    "FAST",
    "FULL",
    "MATRIX",
    "Figures",
    "Tempo",
    "play",
]

ALLOWED_OVERLAP_S: Final = 1.0
"""Issue 33: a run whose claim was lost stops within a second of hearing the store again."""
SWEEP_S: Final = 1.0
"""How often a replica's sweeper looks for leases run out (the engine's default)."""
NOTICE_SLACK_S: Final = 1.5
"""How late after its lease and a sweep a dead replica's task may be started again (a busy machine)."""
BOUND_S: Final = 60.0
"""A bound on each awaited event beyond the scenario's own durations, never a wait in itself."""
SKEW_S: Final = 30.0
STEP_S: Final = 60.0
"""How far the host's clock steps ahead in the step scenario: more than a lease (NTP, a VM resumed)."""
CLOCK_FILE_READ_S: Final = 1.0
"""How late a process under libfaketime sees its clock file change (``FAKETIME_CACHE_DURATION``)."""

TERMINAL: Final = ("completed", "failed", "cancelled")


@dataclass(frozen=True)
class Tempo:
    """How long things take in one scenario: the lease, the runs, the fault."""

    lease_s: float
    tasks: int
    run_s: float
    """How long a task's first run works."""
    rerun_s: float
    """How long a re-run works. In pause and partition, longer than what the first run has left
    when it hears the store again, so a first run that is not stopped ends first and its outcome
    (stale) is the one kept: the bug shows."""
    fault_at_s: float
    """How long the first runs have worked when the fault starts."""
    fault_s: float
    """The fault's least length (a pause, a cut, an outage)."""
    step_s: float = 0.1
    """A run leaves a mark after every step."""
    gap_s: float = 0.5
    """Marks further apart than this mean the run was not running in between."""

    @property
    def work(self) -> Work:
        return Work(self.run_s, self.rerun_s, self.step_s)

    @property
    def notice_s(self) -> float:
        """By when a dead replica's task must be started again."""
        return self.lease_s + SWEEP_S + NOTICE_SLACK_S

    @property
    def stuck_after_s(self) -> float:
        """How long after the fault every task must be terminal."""
        return self.notice_s + self.run_s + self.rerun_s + BOUND_S


FAST: Final = {
    "pause": Tempo(lease_s=0.5, tasks=2, run_s=3.0, rerun_s=3.0, fault_at_s=1.5, fault_s=1.5),
    "partition": Tempo(lease_s=0.5, tasks=2, run_s=4.0, rerun_s=3.5, fault_at_s=1.0, fault_s=1.5),
    "skew": Tempo(lease_s=0.5, tasks=2, run_s=4.5, rerun_s=1.0, fault_at_s=0.3, fault_s=0.0),
    "kill": Tempo(lease_s=0.5, tasks=3, run_s=4.0, rerun_s=1.5, fault_at_s=0.5, fault_s=0.0),
    "outage": Tempo(lease_s=1.0, tasks=3, run_s=1.0, rerun_s=1.0, fault_at_s=0.0, fault_s=3.0),
    "skew/sqlite": Tempo(lease_s=1.5, tasks=2, run_s=7.0, rerun_s=1.0, fault_at_s=0.3, fault_s=0.0),
    "step/sqlite": Tempo(lease_s=1.5, tasks=2, run_s=8.0, rerun_s=1.0, fault_at_s=0.3, fault_s=0.0),
}
"""The default suite's cases: a few seconds each (tests/chaos/test_chaos.py). ``SCENARIO/STORE``: a
store's own (a SQLite file's writes wait on one another's fsync: a lease under a second is lost
to a busy machine's stalls, not to the fault)."""
FULL: Final = {
    "pause": Tempo(lease_s=2.0, tasks=4, run_s=12.0, rerun_s=12.0, fault_at_s=6.0, fault_s=6.0),
    "partition": Tempo(lease_s=2.0, tasks=4, run_s=14.0, rerun_s=12.0, fault_at_s=2.0, fault_s=6.0),
    "skew": Tempo(lease_s=2.0, tasks=3, run_s=14.0, rerun_s=3.0, fault_at_s=1.0, fault_s=0.0),
    "kill": Tempo(lease_s=2.0, tasks=6, run_s=10.0, rerun_s=4.0, fault_at_s=2.0, fault_s=0.0),
    "outage": Tempo(lease_s=6.0, tasks=4, run_s=2.0, rerun_s=2.0, fault_at_s=0.0, fault_s=10.0),
    "step": Tempo(lease_s=2.0, tasks=3, run_s=14.0, rerun_s=3.0, fault_at_s=1.0, fault_s=0.0),
}
"""``nox -s chaos``: issue 33's figures (a 10 s Redis outage with a 6 s lease, pauses of 3 leases)."""


@dataclass
class Figures:
    """One scenario's figures, computed from the marks and the tasks' ends."""

    scenario: str
    store: str
    mcp: str = field(default_factory=lambda: sdk_info().mcp_version)
    tasks: int = 0
    runs: int = 0
    overlaps: int = 0
    max_overlap_s: float = 0.0
    stale: int = 0
    lost: int = 0
    stuck: int = 0
    details: dict[str, str] = field(default_factory=lambda: dict[str, str]())
    """The scenario's own figures, by name (shown in the table's last column)."""
    broken: list[str] = field(default_factory=lambda: list[str]())
    """The guarantees these figures break, each saying how."""
    seconds: float = 0.0

    @property
    def holds(self) -> bool:
        return not self.broken


# --- what the marks say ---------------------------------------------------------------------------


def _count(
    scenario: str,
    store: str,
    ids: Sequence[str],
    ends: dict[str, Outcome],
    marks: Sequence[dict[str, Any]],
    tempo: Tempo,
    *,
    fault: Sequence[Window] = (),
) -> tuple[Figures, dict[str, list[Run]]]:
    """The figures every scenario has, and each task's runs."""
    runs = runs_by_task(marks)
    figures = Figures(scenario, store, tasks=len(ids))
    for task_id in ids:
        task_runs = runs.get(task_id, [])
        figures.runs += len(task_runs)
        for index, first in enumerate(task_runs):
            for second in task_runs[index + 1 :]:
                both_s = overlap_s(first, second, tempo.gap_s, leaving_out=fault)
                figures.max_overlap_s = max(figures.max_overlap_s, both_s)
                if both_s > ALLOWED_OVERLAP_S:
                    figures.overlaps += 1
        end = ends.get(task_id, Outcome(task_id, "unknown"))
        if end.status == "completed" and task_runs and result_run(end.text) != latest_run(task_runs).run:
            figures.stale += 1
        if end.status in ("unknown", "failed", "cancelled"):
            figures.lost += 1
        elif end.status not in TERMINAL:
            figures.stuck += 1
    for name, value in (
        ("overlapping runs", figures.overlaps),
        ("stale outcomes", figures.stale),
        ("lost tasks", figures.lost),
        ("stuck tasks", figures.stuck),
    ):
        if value:
            figures.broken.append(f"{value} {name}")
    if figures.lost or figures.stuck:
        said = sorted({f"{end.status}: {end.message}" for end in ends.values() if end.status != "completed"})
        figures.details["not completed"] = "; ".join(said)[:300]
    return figures, runs


def _stopped_after(runs: dict[str, list[Run]], ids: Sequence[str], pid: int, healed: float) -> float:
    """How long after ``healed`` the runs of ``pid`` whose task was claimed again kept running."""
    late = 0.0
    for task_id in ids:
        task_runs = runs.get(task_id, [])
        for run in task_runs:
            superseded = any(other.attempt > run.attempt for other in task_runs)
            if run.pid == pid and superseded:
                late = max(late, run.last - healed)
    return late


def _orphans_kept(
    runs: dict[str, list[Run]],
    ids: Sequence[str],
    ends: dict[str, Outcome],
    kills: Sequence[tuple[int, float]],
    tempo: Tempo,
) -> tuple[int, int, float]:
    """The tasks a kill (process id, wall time) left with no live run: how many, how many were not
    started again within :attr:`Tempo.notice_s` of the last kill before their restart (a claim
    held by a replica killed later runs out later), and the slowest restart.

    A task whose result came from a run that had ended before the kill was done, not orphaned
    (a run still going for an ended task is an overlap, counted as such).
    """
    orphans = kept = 0
    slowest = 0.0
    for task_id in ids:
        task_runs = runs.get(task_id, [])
        by_run = {run.run: run for run in task_runs}
        kept_run = by_run.get(result_run(ends[task_id].text) or "") if task_id in ends else None
        for pid, killed in kills:
            done = kept_run is not None and kept_run.ending == "end" and kept_run.last <= killed
            died = [
                run for run in task_runs if run.pid == pid and run.ending is None and run.started < killed
            ]
            others_alive = any(active_at(run, killed, tempo.gap_s) for run in task_runs if run.pid != pid)
            if done or not died or others_alive:
                continue
            orphans += 1
            restarts = [run.started for run in task_runs if run.started > killed]
            if restarts:
                last_kill = max(moment for _, moment in kills if killed <= moment < min(restarts))
                noticed = min(restarts) - last_kill
            else:
                noticed = float("inf")
            slowest = max(slowest, noticed)
            if noticed > tempo.notice_s:
                kept += 1
    return orphans, kept, slowest


def _early_reruns(runs: dict[str, list[Run]], ids: Sequence[str], tempo: Tempo) -> int:
    """Runs started again while an earlier run of their task was alive (its runner lived)."""
    return sum(
        1
        for task_id in ids
        for index, rerun in enumerate(runs.get(task_id, []))
        if rerun.attempt > 1
        and any(active_at(before, rerun.started, tempo.gap_s) for before in runs[task_id][:index])
    )


def _seconds(value: float) -> str:
    return "never" if value == float("inf") else f"{value:.2f} s"


# --- waiting on marks -------------------------------------------------------------------------------


def _runs_on(marks: Sequence[dict[str, Any]], pid: int) -> dict[str, Run]:
    """Task id to the latest run of that task on process ``pid``."""
    found: dict[str, Run] = {}
    for task_id, task_runs in runs_by_task(marks).items():
        mine = [run for run in task_runs if run.pid == pid]
        if mine:
            found[task_id] = mine[-1]
    return found


def _worked(ids: Sequence[str], pid: int, seconds: float) -> Callable[[list[dict[str, Any]]], bool]:
    """Every task has a run on ``pid`` that has worked ``seconds`` (marks that far apart)."""

    def wanted(marks: list[dict[str, Any]]) -> bool:
        runs = _runs_on(marks, pid)
        return all(
            task_id in runs and runs[task_id].last - runs[task_id].started >= seconds for task_id in ids
        )

    return wanted


def _rerun_by(
    ids: Sequence[str], pids: Sequence[int], after: float
) -> Callable[[list[dict[str, Any]]], bool]:
    """Every task has a run started after ``after`` by one of ``pids``."""

    def wanted(marks: list[dict[str, Any]]) -> bool:
        runs = runs_by_task(marks)
        return all(
            any(run.pid in pids and run.started > after for run in runs.get(task_id, [])) for task_id in ids
        )

    return wanted


async def _fault_lasts(since: float, seconds: float) -> None:
    """The fault's own length: it lasts at least ``seconds`` from ``since`` (a timed wait by design)."""
    await anyio.sleep(max(0.0, since + seconds - time.time()))


async def _settled(made: Cluster, within: float) -> None:
    """Every run on a process still alive has ended (returned or been cancelled), within a bound:
    a run still going then is counted as it is (its overlap so far)."""
    alive = {replica.pid for replica in made.replicas if replica.killed_at is None}

    def wanted(marks: list[dict[str, Any]]) -> bool:
        return all(
            run.ending is not None
            for task_runs in runs_by_task(marks).values()
            for run in task_runs
            if run.pid in alive
        )

    with anyio.move_on_after(within):
        await made.marks.until(wanted, within=within, what="every run ended")


def _labels(scenario: str, count: int, prefix: str = "") -> list[str]:
    return [f"{scenario}-{prefix}{index}" for index in range(count)]


# --- the scenarios ----------------------------------------------------------------------------------


async def _pause_outside_writes(made: Cluster, replica: Replica) -> tuple[float, int]:
    """SIGSTOP ``replica``; on SQLite, again a moment later if it stopped holding the write lock
    (looked for briefly: a replica held stopped while the lock is probed is a pause too)."""
    probe_s = min(0.1, made.lease_s / 5)
    tries = 0
    try:
        with anyio.fail_after(BOUND_S):  # a bound on finding it outside a write, not a count of tries
            while True:
                replica.pause()
                stopped = time.time()
                if made.store_kind != "sqlite" or await anyio.to_thread.run_sync(
                    lambda: sqlite_write_lock_free(made.sqlite_path, wait_s=probe_s)
                ):
                    return stopped, tries
                replica.resume()
                tries += 1
                await anyio.sleep(0.05)  # let it finish its write before stopping it again
    except TimeoutError:
        raise RuntimeError(
            f"replica {replica.name} held the SQLite write lock at every try ({tries} in {BOUND_S:g} s)"
        ) from None


async def pause(store: str, tempo: Tempo, folder: Path) -> Figures:
    """A replica stopped (SIGSTOP) past its lease while it runs tasks, woken (SIGCONT) once the
    other replica has started them again: its runs must stop within a second of waking, and
    each task keep the re-run's result."""
    async with cluster(store, folder, lease_s=tempo.lease_s) as made:
        a, b = await made.start("A", "B")
        ids = await start_tasks(a.url, _labels("pause", tempo.tasks), tempo.work)
        bound = BOUND_S + tempo.run_s
        await made.marks.until(_worked(ids, a.pid, tempo.fault_at_s), within=bound, what="A's runs working")
        stopped, retried = await _pause_outside_writes(made, a)
        await made.marks.until(_rerun_by(ids, [b.pid], stopped), within=bound, what="B's re-runs")
        await _fault_lasts(stopped, tempo.fault_s)
        a.resume()
        woke = time.time()
        ends = await outcomes(b.url, ids, within=tempo.stuck_after_s)
        await _settled(made, tempo.run_s + BOUND_S)
        figures, runs = _count("pause", store, ids, ends, made.marks.read(), tempo, fault=[(stopped, woke)])
    late = _stopped_after(runs, ids, a.pid, woke)
    figures.details["stopped"] = f"{woke - stopped:.1f} s" + (
        f" (stopped again {retried}x: it held the SQLite write lock)" if retried else ""
    )
    figures.details["A's runs went on after waking"] = _seconds(late)
    if late > ALLOWED_OVERLAP_S:
        figures.broken.append(f"the paused replica's runs went on {late:.2f} s after it woke")
    return figures


async def partition(store: str, tempo: Tempo, folder: Path) -> Figures:
    """Replica A reaches Redis through a relay, cut (connections closed, new ones refused) while A
    runs tasks, until B has started them again, then healed: A's runs must stop within a second
    of the heal, and each task keep the re-run's result. (While cut, A cannot know its claims were
    taken: the overlap inside the cut is shown, not counted.)"""
    if store != "redis":
        raise ValueError("the partition scenario cuts a replica from Redis")
    async with cluster(store, folder, lease_s=tempo.lease_s) as made:
        assert made.redis is not None
        async with relay_to(made.redis.port) as relay:
            (a,) = await made.start("A", store_url=relay.url())
            (b,) = await made.start("B")
            ids = await start_tasks(a.url, _labels("partition", tempo.tasks), tempo.work)
            bound = BOUND_S + tempo.run_s
            await made.marks.until(
                _worked(ids, a.pid, tempo.fault_at_s), within=bound, what="A's runs working"
            )
            relay.cut()
            cut = time.time()
            await made.marks.until(_rerun_by(ids, [b.pid], cut), within=bound, what="B's re-runs")
            await _fault_lasts(cut, tempo.fault_s)
            relay.heal()
            healed = time.time()
            ends = await outcomes(b.url, ids, within=tempo.stuck_after_s)
            await _settled(made, tempo.run_s + BOUND_S)
            marks = made.marks.read()
        figures, runs = _count("partition", store, ids, ends, marks, tempo, fault=[(cut, healed)])
    late = _stopped_after(runs, ids, a.pid, healed)
    during = max(
        (
            overlap_s(first, second, tempo.gap_s)
            - overlap_s(first, second, tempo.gap_s, leaving_out=[(cut, healed)])
            for task_id in ids
            for index, first in enumerate(runs.get(task_id, []))
            for second in runs.get(task_id, [])[index + 1 :]
        ),
        default=0.0,
    )
    figures.details["cut"] = f"{healed - cut:.1f} s"
    figures.details["overlap while cut"] = f"{during:.2f} s"
    figures.details["A's runs went on after the heal"] = _seconds(late)
    if late > ALLOWED_OVERLAP_S:
        figures.broken.append(f"the cut-off replica's runs went on {late:.2f} s after the heal")
    return figures


async def skew(store: str, tempo: Tempo, folder: Path, *, skew_s: float) -> Figures:
    """Replica S's wall clock is ``skew_s`` off (libfaketime), N's is true; both run tasks. No task
    may be started again while its runner lives (an early re-run), and when the replica whose
    clock is ahead is killed, its tasks must be started again within the lease and a sweep (a
    dead task kept alive by its lease in the future)."""
    name = f"skew{skew_s:+g}"
    async with cluster(store, folder, lease_s=tempo.lease_s) as made:
        (normal,) = await made.start("N")
        (skewed,) = await made.start("S", env=skewed_environment(skew_s), skew_s=skew_s)
        ids = await start_tasks(normal.url, _labels(name, tempo.tasks, "n"), tempo.work)
        ids += await start_tasks(skewed.url, _labels(name, tempo.tasks, "s"), tempo.work)
        bound = BOUND_S + tempo.run_s
        for replica, own in ((normal, ids[: tempo.tasks]), (skewed, ids[tempo.tasks :])):
            await made.marks.until(
                _worked(own, replica.pid, tempo.fault_at_s), within=bound, what=f"{replica.name}'s runs"
            )
        # A re-run that must not come can only be watched for: as long as a lease and a sweep
        # (and the slack), from when every run had started.
        watch_from = time.time()
        await _fault_lasts(watch_from, tempo.notice_s)
        ahead, behind = (skewed, normal) if skew_s > 0 else (normal, skewed)
        killed = ahead.kill()
        orphaned = [
            task for task, run in _runs_on(made.marks.read(), ahead.pid).items() if run.ending is None
        ]
        with anyio.move_on_after(tempo.notice_s):
            await made.marks.until(
                _rerun_by(orphaned, [behind.pid], killed), within=tempo.notice_s, what="the re-runs"
            )
        ends = await outcomes(behind.url, ids, within=tempo.stuck_after_s)
        await _settled(made, tempo.run_s + BOUND_S)
        figures, runs = _count(name, store, ids, ends, made.marks.read(), tempo)
    early = _early_reruns(runs, ids, tempo)
    orphans, kept, slowest = _orphans_kept(runs, ids, ends, [(ahead.pid, killed)], tempo)
    figures.details["early re-runs"] = str(early)
    figures.details["killed"] = f"{ahead.name} ({'skewed' if ahead is skewed else 'true clock'})"
    figures.details["dead tasks kept"] = f"{kept} of {orphans}"
    figures.details["re-run after the kill"] = _seconds(slowest)
    if early:
        figures.broken.append(f"{early} early re-runs (started while their runner lived)")
    if kept:
        figures.broken.append(f"{kept} dead tasks kept past {tempo.notice_s:g} s (lease, sweep, slack)")
    if not orphans:
        figures.broken.append("the kill left no task to start again: the scenario tested nothing")
    return figures


async def step(store: str, tempo: Tempo, folder: Path) -> Figures:
    """The host's clock steps ahead by :data:`STEP_S` (more than a lease: NTP, a VM resumed) under
    two replicas on one SQLite file, both running tasks: every process alive, so no task may be
    started again, failed or run twice; watched for a lease and a sweep after every process saw
    the step (a timed watch: a re-run that must not come)."""
    if store != "sqlite":
        raise ValueError("the step scenario steps the clock of the host a SQLite file is shared on")
    clock_file = folder / "faketime.rc"
    await anyio.Path(folder).mkdir(parents=True, exist_ok=True)
    async with cluster(store, folder, lease_s=tempo.lease_s) as made:
        a, b = await made.start("A", "B", env=stepped_environment(clock_file))
        ids = await start_tasks(a.url, _labels("step", tempo.tasks, "a"), tempo.work)
        ids += await start_tasks(b.url, _labels("step", tempo.tasks, "b"), tempo.work)
        bound = BOUND_S + tempo.run_s
        for replica, own in ((a, ids[: tempo.tasks]), (b, ids[tempo.tasks :])):
            await made.marks.until(
                _worked(own, replica.pid, tempo.fault_at_s), within=bound, what=f"{replica.name}'s runs"
            )
        step_clock(clock_file, STEP_S)
        stepped = time.time()
        await _fault_lasts(stepped, CLOCK_FILE_READ_S + tempo.notice_s)
        watched = time.time() - stepped
        ends = await outcomes(b.url, ids, within=tempo.stuck_after_s)
        await _settled(made, tempo.run_s + BOUND_S)
        figures, runs = _count("step", store, ids, ends, made.marks.read(), tempo)
    early = _early_reruns(runs, ids, tempo)
    twice = sum(1 for task_id in ids if len(runs.get(task_id, [])) > 1)
    figures.details["stepped"] = f"{STEP_S:+g} s, watched {watched:.1f} s (lease {tempo.lease_s:g} s)"
    figures.details["early re-runs"] = str(early)
    figures.details["tasks started twice"] = str(twice)
    if early or twice:
        figures.broken.append(f"{twice} tasks started twice ({early} while their runner lived)")
    still = [run for task_runs in runs.values() for run in task_runs if run.last > stepped + watched]
    if len(still) < len(ids):
        figures.broken.append("runs ended before the watch did: the step scenario tested too little")
    return figures


async def kill(store: str, tempo: Tempo, folder: Path) -> Figures:
    """Three replicas; A, running every task, is killed (SIGKILL); the first replica seen starting
    one of them again is killed as it does (its sweep may be mid-claim on the others); the third
    must finish every task, none lost or stuck, each started again within a lease and a sweep."""
    async with cluster(store, folder, lease_s=tempo.lease_s) as made:
        a, b, c = await made.start("A", "B", "C")
        ids = await start_tasks(a.url, _labels("kill", tempo.tasks), tempo.work)
        bound = BOUND_S + tempo.run_s
        await made.marks.until(_worked(ids, a.pid, tempo.fault_at_s), within=bound, what="A's runs working")
        first_kill = a.kill()

        def claimed(marks: list[dict[str, Any]]) -> bool:
            return any(mark["pid"] in (b.pid, c.pid) and mark["k"] == "start" for mark in marks)

        marks = await made.marks.until(claimed, within=bound, what="a re-run on B or C")
        claimer_pid = next(m["pid"] for m in marks if m["pid"] in (b.pid, c.pid) and m["k"] == "start")
        claimer = b if claimer_pid == b.pid else c
        second_kill = claimer.kill()
        survivor = c if claimer is b else b
        ends = await outcomes(survivor.url, ids, within=tempo.stuck_after_s)
        await _settled(made, tempo.run_s + BOUND_S)
        figures, runs = _count("kill", store, ids, ends, made.marks.read(), tempo)
    kills = [(a.pid, first_kill), (claimer.pid, second_kill)]
    orphans, kept, slowest = _orphans_kept(runs, ids, ends, kills, tempo)
    taken = sum(1 for task_id in ids if any(run.pid == claimer.pid for run in runs.get(task_id, [])))
    figures.details["re-runs started by the killed claimer"] = str(taken)
    figures.details["dead tasks kept"] = f"{kept} of {orphans}"
    figures.details["re-run after a kill"] = _seconds(slowest)
    if kept:
        figures.broken.append(f"{kept} dead tasks kept past {tempo.notice_s:g} s (lease, sweep, slack)")
    return figures


async def outage(store: str, tempo: Tempo, folder: Path) -> Figures:
    """Redis stopped (its data kept on disk) longer than the lease while every run ends, then
    started again: each run that ended in the outage must be its task's result."""
    if store != "redis":
        raise ValueError("the outage scenario stops redis-server")
    async with cluster(store, folder, lease_s=tempo.lease_s) as made:
        assert made.redis is not None
        redis = made.redis
        a, b = await made.start("A", "B")
        ids = await start_tasks(a.url, _labels("outage", tempo.tasks), tempo.work)
        bound = BOUND_S + tempo.run_s
        await made.marks.until(_worked(ids, a.pid, tempo.fault_at_s), within=bound, what="A's runs started")
        await anyio.to_thread.run_sync(redis.stop)
        down = time.time()
        await _fault_lasts(down, tempo.fault_s)
        await anyio.to_thread.run_sync(redis.start)
        up = time.time()
        ends = await outcomes(b.url, ids, within=tempo.stuck_after_s)
        await _settled(made, tempo.run_s + BOUND_S)
        figures, runs = _count("outage", store, ids, ends, made.marks.read(), tempo, fault=[(down, up)])
    ended_in = [
        run
        for task_id in ids
        for run in runs.get(task_id, [])
        if run.ending == "end" and down <= run.last <= up
    ]
    kept = [run for run in ended_in if result_run(ends[run.task].text) == run.run]
    figures.details["down"] = f"{up - down:.1f} s (lease {tempo.lease_s:g} s)"
    figures.details["runs ended in the outage, their result kept"] = f"{len(kept)} of {len(ended_in)}"
    if len(kept) < len(ended_in):
        figures.broken.append(f"{len(ended_in) - len(kept)} runs ended in the outage lost their result")
    if not ended_in:
        figures.broken.append("no run ended inside the outage: the scenario tested nothing")
    return figures


Scenario = Callable[[str, Tempo, Path], Awaitable[Figures]]


async def _skew_ahead(store: str, tempo: Tempo, folder: Path) -> Figures:
    return await skew(store, tempo, folder, skew_s=SKEW_S)


async def _skew_behind(store: str, tempo: Tempo, folder: Path) -> Figures:
    return await skew(store, tempo, folder, skew_s=-SKEW_S)


SCENARIOS: Final[dict[str, tuple[str, Scenario]]] = {
    "pause": ("pause", pause),
    "partition": ("partition", partition),
    f"skew+{SKEW_S:g}": ("skew", _skew_ahead),
    f"skew-{SKEW_S:g}": ("skew", _skew_behind),
    f"step+{STEP_S:g}": ("step", step),
    "kill": ("kill", kill),
    "outage": ("outage", outage),
}
"""Scenario name to its tempo's key and its function."""

MATRIX: Final = [
    ("pause", "redis"),
    ("pause", "sqlite"),
    ("partition", "redis"),
    (f"skew+{SKEW_S:g}", "redis"),
    (f"skew-{SKEW_S:g}", "redis"),
    (f"skew+{SKEW_S:g}", "sqlite"),
    (f"skew-{SKEW_S:g}", "sqlite"),
    (f"step+{STEP_S:g}", "sqlite"),
    ("kill", "redis"),
    ("kill", "sqlite"),
    ("outage", "redis"),
]
"""Every scenario on every store it means something on (``nox -s chaos`` plays them all)."""


async def play(name: str, store: str, folder: Path, *, tempos: dict[str, Tempo] = FAST) -> Figures:
    """Play scenario ``name`` on ``store`` (``redis`` or ``sqlite``) in ``folder``; its figures."""
    key, scenario = SCENARIOS[name]
    started = time.monotonic()
    tempo = tempos[f"{key}/{store}"] if f"{key}/{store}" in tempos else tempos[key]
    figures = await scenario(store, tempo, folder)
    figures.seconds = time.monotonic() - started
    return figures
