"""The arithmetic behind the chaos figures, on hand-made marks: segments, overlaps, liveness."""

from __future__ import annotations

from typing import Any

import pytest

from .marks import active_at, latest_run, overlap_s, result_run, runs_by_task, segments
from .server import RESULT_FORMAT

GAP_S = 0.5


def _marks(
    run: str, pid: int, attempt: int, times: list[float], ending: str | None = "end"
) -> list[dict[str, Any]]:
    kinds = ["start"] + ["beat"] * (len(times) - 2) + [ending or "beat"]
    return [
        {"k": kind, "t": moment, "pid": pid, "task": "t1", "label": "x", "run": run, "attempt": attempt}
        for kind, moment in zip(kinds, times, strict=True)
    ]


def _steps(start: float, end: float, step: float = 0.1) -> list[float]:
    return [round(start + index * step, 3) for index in range(round((end - start) / step) + 1)]


def test_a_stopped_run_has_a_gap_and_overlaps_only_while_both_ran() -> None:
    # A runs 0-2, is stopped 2-5, runs again 5-6; B, the re-run, runs 3-8.
    paused = _marks("a", 1, 1, _steps(0, 2) + _steps(5, 6))
    rerun = _marks("b", 2, 2, _steps(3, 8))
    (a_run, b_run) = runs_by_task(paused + rerun)["t1"]
    assert segments(a_run, GAP_S) == [(0.0, 2.0), (5.0, 6.0)]
    assert overlap_s(a_run, b_run, GAP_S) == pytest.approx(1.0)
    assert overlap_s(a_run, b_run, GAP_S, leaving_out=[(4.0, 5.5)]) == pytest.approx(0.5)
    assert not active_at(a_run, 3.0, GAP_S)  # stopped when B started: not an early re-run
    assert active_at(b_run, 5.5, GAP_S)
    assert latest_run([a_run, b_run]) is b_run


def test_a_killed_run_is_alive_only_up_to_its_last_mark() -> None:
    killed = _marks("a", 1, 1, _steps(0, 1), ending=None)
    (run,) = runs_by_task(killed)["t1"]
    assert run.ending is None
    assert active_at(run, 0.5, GAP_S)
    assert not active_at(run, 1.2, GAP_S)


def test_the_result_names_its_run() -> None:
    text = RESULT_FORMAT.format(label="x", run="123-abcdef", pid=123, attempt=2)
    assert result_run(text) == "123-abcdef"
    assert result_run("something else") is None
