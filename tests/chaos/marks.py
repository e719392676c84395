"""What the tool's marks say: the runs of each task, when each was really running, and the figures.

A run is alive over the stretches where its marks come at most ``gap_s`` apart (a stretch is a
*segment*); a run whose process is stopped, or cut off mid-step, leaves a gap there. Two runs of
one task *overlap* for the time both were alive. Everything here is a pure function of the marks
(read back from the file the replicas append to) and of the tasks' outcomes as a client reads
them: the figures are computed, never assumed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

__all__ = [
    "MarksFile",
    "Outcome",
    "Run",
    "Window",
    "active_at",
    "latest_run",
    "overlap_s",
    "result_run",
    "runs_by_task",
    "segments",
]

Window = tuple[float, float]
"""A span of wall time (seconds since the epoch), start and end."""

_RESULT_RUN = re.compile(r" done by run (\S+) \(pid")


@dataclass
class Run:
    """One run of a task's work on one replica, from its marks."""

    run: str
    task: str
    label: str
    pid: int
    attempt: int
    times: list[float] = field(default_factory=lambda: list[float]())
    ending: str | None = None
    """``"end"`` (returned), ``"stop"`` (cancelled) or ``None`` (neither seen: killed, or still going)."""

    @property
    def started(self) -> float:
        return self.times[0]

    @property
    def last(self) -> float:
        return self.times[-1]


@dataclass(frozen=True)
class Outcome:
    """A task as the client reads it at the end: its status, and its result's text when completed."""

    task: str
    status: str
    """A task status (``completed``, ``failed``...), or ``unknown`` when the server no longer knows it."""
    text: str | None = None
    message: str | None = None


class MarksFile:
    """The marks file, read as it grows (what is new since the last read)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.marks: list[dict[str, Any]] = []
        self._offset = 0
        self._partial = b""

    def read(self) -> list[dict[str, Any]]:
        """Every mark so far (the new ones parsed since the last read)."""
        if self.path.exists():
            with self.path.open("rb") as file:
                file.seek(self._offset)
                data = file.read()
            self._offset += len(data)
            *lines, self._partial = (self._partial + data).split(b"\n")
            self.marks.extend(json.loads(line) for line in lines if line.strip())
        return self.marks

    async def until(
        self, wanted: Callable[[list[dict[str, Any]]], bool], *, within: float, what: str
    ) -> list[dict[str, Any]]:
        """Read every 20 ms until ``wanted(marks)``, failing after ``within`` seconds.

        The marks are the tool's own events, written by other processes: reading the file is how
        they are heard (there is no other channel), not a timed wait.
        """
        try:
            with anyio.fail_after(within):
                while True:
                    if wanted(self.read()):
                        break
                    await anyio.sleep(0.02)
        except TimeoutError:
            raise TimeoutError(f"{what}: not seen within {within:g} s") from None
        return self.marks

    def runs(self) -> dict[str, list[Run]]:
        return runs_by_task(self.read())


def runs_by_task(marks: Iterable[dict[str, Any]]) -> dict[str, list[Run]]:
    """Task id to its runs, each run's marks in time order, runs in the order they started."""
    runs: dict[str, Run] = {}
    for mark in marks:
        run = runs.get(mark["run"])
        if run is None:
            run = runs[mark["run"]] = Run(
                mark["run"], mark["task"], mark["label"], int(mark["pid"]), int(mark["attempt"])
            )
        run.times.append(float(mark["t"]))
        if mark["k"] in ("end", "stop"):
            run.ending = mark["k"]
    by_task: dict[str, list[Run]] = {}
    for run in runs.values():
        run.times.sort()
        by_task.setdefault(run.task, []).append(run)
    for task_runs in by_task.values():
        task_runs.sort(key=lambda run: run.started)
    return by_task


def segments(run: Run, gap_s: float) -> list[Window]:
    """The stretches over which ``run`` was alive: its marks, joined where at most ``gap_s`` apart."""
    found: list[Window] = []
    start = previous = run.times[0]
    for moment in run.times[1:]:
        if moment - previous > gap_s:
            found.append((start, previous))
            start = moment
        previous = moment
    found.append((start, previous))
    return found


def _length(windows: Sequence[Window]) -> float:
    return sum(max(0.0, end - start) for start, end in windows)


def _intersect(left: Sequence[Window], right: Sequence[Window]) -> list[Window]:
    both: list[Window] = []
    for a_start, a_end in left:
        for b_start, b_end in right:
            start, end = max(a_start, b_start), min(a_end, b_end)
            if end > start:
                both.append((start, end))
    return both


def _minus(windows: Sequence[Window], cut: Sequence[Window]) -> list[Window]:
    """``windows`` without the time in ``cut``."""
    left = list(windows)
    for cut_start, cut_end in cut:
        kept: list[Window] = []
        for start, end in left:
            if end <= cut_start or start >= cut_end:
                kept.append((start, end))
                continue
            if start < cut_start:
                kept.append((start, cut_start))
            if end > cut_end:
                kept.append((cut_end, end))
        left = kept
    return left


def overlap_s(first: Run, second: Run, gap_s: float, *, leaving_out: Sequence[Window] = ()) -> float:
    """How long both runs were alive at once, leaving out the ``leaving_out`` windows."""
    both = _intersect(segments(first, gap_s), segments(second, gap_s))
    return _length(_minus(both, leaving_out))


def active_at(run: Run, moment: float, gap_s: float) -> bool:
    """Whether ``run`` was alive across ``moment``: it left marks at most ``gap_s`` apart on both
    sides of it (a stopped or killed run left none after)."""
    return any(start <= moment <= end for start, end in segments(run, gap_s))


def latest_run(runs: Sequence[Run]) -> Run:
    """The run of the newest claim: the highest attempt, the later start between equals."""
    return max(runs, key=lambda run: (run.attempt, run.started))


def result_run(text: str | None) -> str | None:
    """The run a result names (the tool's :data:`~tests.chaos.server.RESULT_FORMAT`)."""
    found = _RESULT_RUN.search(text or "")
    return found.group(1) if found else None
