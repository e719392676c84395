"""One fast case of each chaos scenario (short leases), in the default suite; ``nox -s chaos``
plays them all with issue 33's figures. Each asserts the guarantees: no two runs of a task alive
together for more than a second outside the fault, no stale outcome, nothing lost or stuck, and
the scenario's own (a paused or cut-off replica's runs stop within a second of waking or the
heal; no early re-run and no dead task kept under a 30 s clock skew, on Redis and on SQLite; no task
started twice or failed when the SQLite host's clock steps 60 s ahead; every run that ended in a
store outage is its task's result). The figures are computed from the tool's marks."""

from __future__ import annotations

from pathlib import Path

import pytest

from .cluster import REDIS_MISSING
from .faults import FAKETIME_MISSING, faketime_library, redis_server_executable
from .report import text
from .scenarios import FAST, play

pytestmark = pytest.mark.anyio

CASES = [
    ("pause", "redis"),
    ("pause", "sqlite"),
    ("partition", "redis"),
    ("skew+30", "redis"),
    ("skew-30", "redis"),
    ("skew+30", "sqlite"),
    ("skew-30", "sqlite"),
    ("step+60", "sqlite"),
    ("kill", "redis"),
    ("outage", "redis"),
]


@pytest.mark.parametrize(("scenario", "store"), CASES, ids=[f"{name}-{store}" for name, store in CASES])
async def test_the_guarantees_hold_under_the_fault(tmp_path: Path, scenario: str, store: str) -> None:
    if store == "redis" and redis_server_executable() is None:
        pytest.skip(REDIS_MISSING)
    if scenario.startswith(("skew", "step")) and faketime_library() is None:
        pytest.skip(FAKETIME_MISSING)
    figures = await play(scenario, store, tmp_path, tempos=FAST)
    print(f"\n{text([figures])}")
    assert figures.holds, f"{'; '.join(figures.broken)}\n{text([figures])}"
