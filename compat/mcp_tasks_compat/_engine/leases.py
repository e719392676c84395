"""Whether another process's lease on a run ran out, judged on this process's monotonic clock.

A run on a shared store is held by the process that claimed it (a replica or a worker), which
renews its lease every third of ``lease_s``; each renewal writes a new ``lease_until`` into the
task's state. Those timestamps come from the holder's wall clock (or the store's), and wall clocks
step (NTP, a VM resumed) and disagree between processes: a lease judged by comparing
``lease_until`` with the observer's wall clock was taken from every live holder when the host's
clock stepped ahead by more than a lease, and kept for a dead holder whose clock was ahead.

So no timestamp is compared with any clock here. The holder, its claim and ``lease_until``
together are a *renewal marker*, an opaque value that changes at each renewal. The observer
(:class:`LeaseJudge`, one per engine, used by the sweeper) remembers, for each run of another
process, the marker it saw last and from when it has seen it, on its own ``time.monotonic()``;
the lease ran out once the marker has not changed for ``lease_s`` of that time, counted from the
look that first saw it (the renewal came before: the holder gets at least its full lease). An
observer that just started counts from its first look, so it waits one lease before judging
anything; looks come every third of a lease (at most a second apart), so a dead holder's runs
are judged within a lease and a look of its last renewal.

A holder that cannot write is not dead. While a SQLite file is locked by another program (a
backup, a long transaction) nobody can renew, but everyone can still read; an observer that only
reads would see every marker stand still. So the observer judges only through time in which its
own writes landed: at each look where a marker is overdue (unchanged for a third of a lease, a
renewal missed) it writes too (:meth:`LeaseJudge.wrote`, the sweeper's write probe), and a write
of its own that failed or took longer than a third of a lease restarts every window where it
ended; a lease runs out only at a look whose own write landed at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Final

from ..errors import TaskStoreError
from .outage import StoreHealth
from .stores import TaskState, TaskStore

__all__ = ["EVERY_LEASE", "LEASE_SCAN_LIMIT", "WRITE_PROBE_ID", "LeaseJudge", "LeaseWatch", "renewal_marker"]

EVERY_LEASE: Final = datetime(9999, 1, 1, tzinfo=timezone.utc)
"""Handed to a store's ``lease_expired(now)`` as ``now``: every run that holds a lease, whatever its
``lease_until`` says (the marker, not the time, is what is judged)."""

LEASE_SCAN_LIMIT: Final = 1000
"""How many leased runs one look reads (oldest ``lease_until`` first: a dead holder's runs stop
moving up, so they come first)."""

WRITE_PROBE_ID: Final = "mcp-tasks-compat/write-probe"
"""The task id the write probe deletes: no task has it (ids are made by the engine), so the
delete changes nothing, but it needs the store's write path as a renewal does."""

Marker = tuple[str | None, int, datetime | None]
"""A run's renewal marker: its runner, its claim and its ``lease_until`` (opaque: only compared)."""


def renewal_marker(state: TaskState) -> Marker:
    """What changes at each claim or renewal of ``state``'s run, and at nothing else of its holder's."""
    return (state.runner, state.claim, state.lease_until)


@dataclass
class _Seen:
    marker: Marker
    since: float
    """From when (on the judge's clock) the marker is taken to have stood still."""
    looked: float
    """The last look that saw it."""


class LeaseJudge:
    """Remembers other processes' renewal markers and says which leases ran out (module docstring).

    ``clock``: seconds on a clock that never steps (``time.monotonic``; a test's own).
    """

    def __init__(self, lease_s: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        if lease_s <= 0:
            raise ValueError("lease_s must be positive")
        self.lease_s = lease_s
        self.clock = clock
        self._seen: dict[str, _Seen] = {}
        self._troubled_at = float("-inf")  # when an own write last failed or was slow
        self._wrote_at: float | None = None  # when an own write last landed at once
        self._look_at = float("-inf")

    @property
    def slow_write_s(self) -> float:
        """An own write slower than this was held up (a lock): as good as a failed one."""
        return self.lease_s / 3

    def look(self, states: Sequence[TaskState], *, read_s: float = 0.0, complete: bool = True) -> bool:
        """Note the markers of ``states`` (other processes' leased runs, read now, in ``read_s``:
        a read held up as long as a slow write was, behind this process's own writes waiting on
        a lock, is as good as a failed write); ``complete``: every leased run was read, so a run
        not among them ended or lost its lease (forgotten). Whether one of them is overdue (a
        renewal missed): then an own write is wanted now (:meth:`wrote`) before :meth:`ran_out`
        can say anything."""
        now = self._look_at = self.clock()
        if read_s > self.slow_write_s:
            self._troubled_at = now
        found = {state.task_id for state in states}
        for state in states:
            marker = renewal_marker(state)
            seen = self._seen.get(state.task_id)
            if seen is None or seen.marker != marker:
                self._seen[state.task_id] = _Seen(marker, now, now)
            else:
                seen.looked = now
        long_ago = now - 10 * self.lease_s  # a partial look forgets only what it has not seen for long
        gone = [
            t for t, seen in self._seen.items() if t not in found and (complete or seen.looked < long_ago)
        ]
        for task_id in gone:
            del self._seen[task_id]
        return any(now - self._seen[state.task_id].since >= self.lease_s / 3 for state in states)

    def wrote(self, *, took_s: float, landed: bool) -> None:
        """An own write (the write probe) ended now, after ``took_s``; ``landed``: it succeeded."""
        now = self.clock()
        if landed and took_s <= self.slow_write_s:
            self._wrote_at = now
        else:
            self.held_up()

    def held_up(self) -> None:
        """This process saw the store fail now (any part of it): every window restarts."""
        self._troubled_at = self.clock()

    def ran_out(self, states: Sequence[TaskState]) -> list[TaskState]:
        """Those of ``states`` (as passed to the last :meth:`look`) whose marker stood still for a
        lease, counted only since this process's writes last failed or stalled, and only if an own
        write landed at once at this look."""
        now = self._look_at
        if self._wrote_at is None or self._wrote_at < now:
            return []
        return [state for state in states if self._stood_still(state, now)]

    def _stood_still(self, state: TaskState, now: float) -> bool:
        """``state``'s marker is the one seen, unchanged for a lease since the last trouble."""
        seen = self._seen.get(state.task_id)
        if seen is None or seen.marker != renewal_marker(state):
            return False
        return now - max(seen.since, self._troubled_at) >= self.lease_s

    def watched(self) -> int:
        """How many runs of other processes the judge remembers (bounded by what is running)."""
        return len(self._seen)


class LeaseWatch:
    """One look at the leases of other processes' runs, as the sweeper makes it: every leased run
    read, its marker noted, a write probe when a renewal is overdue, then the judgement."""

    def __init__(self, store: TaskStore, health: StoreHealth, judge: LeaseJudge) -> None:
        self.judge = judge
        self._store = store
        self._health = health

    async def run_out(self, runs_here: Callable[[TaskState], bool]) -> list[TaskState]:
        """The leased runs (but those ``runs_here``) whose lease ran out (:class:`LeaseJudge`)."""
        started = self.judge.clock()
        leased = await self._store.lease_expired(EVERY_LEASE, limit=LEASE_SCAN_LIMIT)
        read_s = self.judge.clock() - started
        others = [state for state in leased if not runs_here(state)]
        if self.judge.look(others, read_s=read_s, complete=len(leased) < LEASE_SCAN_LIMIT):
            await self._probe_writes()
        return self.judge.ran_out(others)

    async def _probe_writes(self) -> None:
        """Whether this process's writes land now (a delete of a task no one has: it changes
        nothing, but takes the store's write path as a renewal would), told to the judge; a
        failure is told to the store's health too (a write failed)."""
        started = self.judge.clock()
        try:
            await self._store.delete(WRITE_PROBE_ID)
        except TaskStoreError as exc:  # nothing is judged at this look, nor for a lease after it
            self.judge.wrote(took_s=self.judge.clock() - started, landed=False)
            self._health.failed(exc, "writing before judging the leases of other processes' runs")
            return
        self.judge.wrote(took_s=self.judge.clock() - started, landed=True)
