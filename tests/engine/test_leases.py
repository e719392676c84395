"""Leases judged on the observer's monotonic clock (``_engine/leases.py``; issue 44, item 5).

The judge on a clock of the test's own: a holder that renews is never judged, whatever its
timestamps say (a clock ahead, behind, stepped); a holder that stops is judged a lease after the
observer first saw its last renewal, never sooner; a fresh observer waits one lease; a write of
the observer's own that failed or stalled (a lock), or a read held up behind one, restarts every
window, and nothing is judged at a look whose own write did not land. Hypothesis plays renewals
and looks at random times and holds the judge to both sides. Then the sweeper on a real SQLite
file: a dead holder's lease in the far future is judged within a lease, a live holder's lease in
the past is not, and a file held locked by another writer judges nothing.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path

import anyio.to_thread
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_tasks_compat._engine import TaskEngine
from mcp_tasks_compat._engine.leases import LeaseJudge
from mcp_tasks_compat._engine.stores import SqliteTaskStore, TaskState
from mcp_tasks_compat.core._model import Task, TaskStatus
from mcp_tasks_compat.dialects import DIALECT_2026_07_28

LEASE_S = 3.0
T0 = datetime(2026, 12, 8, tzinfo=timezone.utc)


class Clock:
    """A monotonic clock moved by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _state(claim: int = 1, lease_until: datetime = T0, runner: str = "host/1/a") -> TaskState:
    task = Task("t1", TaskStatus.WORKING, T0, T0, None, None, None)
    return TaskState(
        task, DIALECT_2026_07_28, None, "build", runner=runner, lease_until=lease_until, claim=claim
    )


def _look(
    judge: LeaseJudge, state: TaskState, *, write_s: float = 0.0, landed: bool = True
) -> list[TaskState]:
    """One look as the sweeper makes it: read, a write probe when something is overdue, judge."""
    if judge.look([state]):
        judge.wrote(took_s=write_s, landed=landed)
    return judge.ran_out([state])


def test_a_lease_runs_out_a_lease_after_its_marker_was_first_seen_and_not_sooner() -> None:
    clock = Clock()
    judge = LeaseJudge(LEASE_S, clock=clock)
    stale = _state(lease_until=T0 - timedelta(hours=1))  # long past on any wall clock: not what counts
    assert _look(judge, stale) == []  # a fresh observer: counts from now
    clock.now += LEASE_S - 0.01
    assert _look(judge, stale) == []
    clock.now += 0.01
    assert _look(judge, stale) == [stale]


def test_a_holder_that_renews_is_never_judged_whatever_its_timestamps_say() -> None:
    clock = Clock()
    judge = LeaseJudge(LEASE_S, clock=clock)
    # Its clock an hour behind, then stepped a day ahead, then back: only the changes count.
    for index, shift in enumerate([-3600.0, -3599.0, 86400.0, 86401.0, 5.0] * 4):
        clock.now += LEASE_S / 3
        assert _look(judge, _state(lease_until=T0 + timedelta(seconds=shift + index))) == []


def test_a_new_claim_or_runner_is_a_new_marker() -> None:
    clock = Clock()
    judge = LeaseJudge(LEASE_S, clock=clock)
    assert _look(judge, _state()) == []
    clock.now += LEASE_S
    assert _look(judge, _state(claim=2)) == []  # claimed again: counted from now
    clock.now += LEASE_S
    assert _look(judge, _state(claim=2, runner="host/2/b")) == []


@pytest.mark.parametrize(
    ("write_s", "landed", "read_s"),
    [(0.0, False, 0.0), (LEASE_S / 2, True, 0.0), (0.0, True, LEASE_S / 2)],
    ids=["write failed", "write stalled", "read held up"],
)
def test_an_own_write_that_failed_or_stalled_restarts_every_window(
    write_s: float, landed: bool, read_s: float
) -> None:
    """The store locked by another program: nobody could renew, so time before it says nothing."""
    clock = Clock()
    judge = LeaseJudge(LEASE_S, clock=clock)
    stale = _state()
    assert _look(judge, stale) == []
    clock.now += 10 * LEASE_S
    assert judge.look([stale], read_s=read_s)
    judge.wrote(took_s=write_s, landed=landed)
    assert judge.ran_out([stale]) == []  # nothing at the look that met the lock
    clock.now += LEASE_S - 0.01
    assert _look(judge, stale) == []  # nor within a lease after it
    clock.now += 0.01
    assert _look(judge, stale) == [stale]


def test_nothing_is_judged_at_a_look_without_an_own_write_that_landed() -> None:
    clock = Clock()
    judge = LeaseJudge(LEASE_S, clock=clock)
    stale = _state()
    judge.look([stale])
    clock.now += 2 * LEASE_S
    assert judge.look([stale])  # overdue: a write is wanted...
    assert judge.ran_out([stale]) == []  # ...and none was made


def test_a_complete_look_forgets_what_it_no_longer_sees() -> None:
    clock = Clock()
    judge = LeaseJudge(LEASE_S, clock=clock)
    judge.look([_state()])
    assert judge.watched() == 1
    judge.look([], complete=False)
    assert judge.watched() == 1  # a partial look: it may be past the page
    judge.look([])
    assert judge.watched() == 0


def test_a_lease_must_be_positive() -> None:
    with pytest.raises(ValueError, match="lease_s must be positive"):
        LeaseJudge(0)


@given(
    gaps=st.lists(st.floats(min_value=0.01, max_value=LEASE_S * 0.99), min_size=1, max_size=30),
    looks=st.lists(st.floats(min_value=0.01, max_value=LEASE_S), min_size=1, max_size=60),
    stamps=st.permutations(range(-15, 16)),
    stops_after=st.integers(min_value=0, max_value=30),
)
def test_judged_only_after_a_lease_without_renewal_and_then_within_a_look(
    gaps: list[float], looks: list[float], stamps: list[int], stops_after: int
) -> None:
    """The holder renews ``stops_after`` times, each within a lease of the last (its timestamps
    anything: ``stamps``, whole hours apart, back and forth), then stops; the observer looks at
    random intervals. Judged only once the marker it saw stood still a lease on its clock; and
    then at the first look a lease after it first saw the last marker."""
    renewals = [sum(gaps[:index]) for index in range(min(stops_after, len(gaps)) + 1)]
    clock = Clock()
    start = clock.now
    judge = LeaseJudge(LEASE_S, clock=clock)
    first_seen: dict[int, float] = {}
    # The random looks, then looks a third of a lease apart until well past the last renewal.
    tail = [LEASE_S / 3] * (3 * round((sum(looks) + renewals[-1]) / LEASE_S) + 12)
    for gap in [*looks, *tail]:
        clock.now += gap
        held = max(index for index, at in enumerate(renewals) if start + at <= clock.now)
        first_seen.setdefault(held, clock.now)
        state = _state(lease_until=T0 + timedelta(hours=stamps[held]))
        out = _look(judge, state)
        last_renewal = start + renewals[held]
        if out:
            assert held == len(renewals) - 1, "a holder that renews within its lease was judged"
            assert clock.now - last_renewal >= LEASE_S
            assert clock.now - first_seen[held] >= LEASE_S
            return
        assert clock.now - first_seen[held] < LEASE_S, "not judged a lease after its last marker"
    raise AssertionError("never judged")  # pragma: no cover - the looks go on past a lease


# --- the sweeper on a real SQLite file ---------------------------------------------------------


async def _holder_and_observer(path: Path) -> tuple[TaskEngine, TaskEngine, Clock]:
    holder, observer = TaskEngine(store=SqliteTaskStore(path, busy_timeout=0.2), lease_s=LEASE_S), None
    observer = TaskEngine(store=SqliteTaskStore(path, busy_timeout=0.2), lease_s=LEASE_S)
    clock = Clock()
    observer.expiry.leases.judge.clock = clock
    await holder.open()
    await observer.open()
    return holder, observer, clock


async def _running(holder: TaskEngine, lease_until: datetime) -> TaskState:
    record = await holder.create(dialect=DIALECT_2026_07_28, owner=None, tool_name="build", ttl_ms=None)
    return await holder.store.save(record.state.evolve(runner="elsewhere/1/x", lease_until=lease_until))


@pytest.mark.anyio
async def test_a_dead_holders_lease_in_the_far_future_runs_out_within_a_lease(tmp_path: Path) -> None:
    """Its clock was a day ahead when it last renewed: judged on the observer's clock all the same."""
    holder, observer, clock = await _holder_and_observer(tmp_path / "tasks.db")
    state = await _running(holder, holder.reader.now() + timedelta(days=1))
    assert await observer.expiry.sweep_lost_runs() == 0
    clock.now += LEASE_S
    assert await observer.expiry.sweep_lost_runs() == 1
    failed = await observer.store.get(state.task_id)
    assert failed is not None
    assert failed.task.status is TaskStatus.FAILED
    await holder.store.close()
    await observer.store.close()


@pytest.mark.anyio
async def test_a_live_holders_lease_in_the_past_is_left_alone(tmp_path: Path) -> None:
    """Its clock an hour behind (or the observer's stepped ahead): it renews, so it lives."""
    holder, observer, clock = await _holder_and_observer(tmp_path / "tasks.db")
    state = await _running(holder, holder.reader.now() - timedelta(hours=1))
    for _ in range(6):
        assert await observer.expiry.sweep_lost_runs() == 0
        clock.now += LEASE_S / 2
        state = await holder.store.save(state.evolve(lease_until=state.lease_until + timedelta(seconds=1)))
    stored = await observer.store.get(state.task_id)
    assert stored is not None
    assert stored.task.status is TaskStatus.WORKING
    await holder.store.close()
    await observer.store.close()


@pytest.mark.anyio
async def test_a_file_locked_by_another_writer_judges_nothing_until_a_lease_after_it(tmp_path: Path) -> None:
    """A backup holds the write lock: nobody renews, the observer still reads; it writes first."""
    path = tmp_path / "tasks.db"
    holder, observer, clock = await _holder_and_observer(path)
    state = await _running(holder, holder.reader.now())
    assert await observer.expiry.sweep_lost_runs() == 0
    backup = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    await anyio.to_thread.run_sync(backup.execute, "BEGIN EXCLUSIVE")
    clock.now += 10 * LEASE_S
    assert await observer.expiry.sweep_lost_runs() == 0  # its write probe failed: nothing judged
    await anyio.to_thread.run_sync(backup.execute, "ROLLBACK")
    backup.close()
    assert await observer.expiry.sweep_lost_runs() == 0  # the window starts again at the failure
    clock.now += LEASE_S
    assert await observer.expiry.sweep_lost_runs() == 1
    failed = await observer.store.get(state.task_id)
    assert failed is not None
    assert failed.task.status is TaskStatus.FAILED
    await holder.store.close()
    await observer.store.close()
