"""TTL expiry and lost runs: each task's deadline, its retention once it ends, and the sweeps.

Deadlines are wall-clock times kept in the task's state, so they mean the same after a restart
and on every replica; the store hands out what is due in deadline order, so a sweep never scans
every task. A task that expires while still running is failed and kept readable for a grace
period, not silently dropped; an ended task is kept for its TTL counted from its end. On a
shared store a task whose replica stopped renewing its lease is failed too, saying so (or started
again); whether it stopped is judged on this process's monotonic clock (:mod:`.leases`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta

import anyio
import anyio.lowlevel

from .._observe import metrics
from ..core._lifecycle import TaskEvent
from ..core._model import JsonRpcError, format_timestamp
from ..errors import INTERNAL_ERROR, TaskStoreError
from .leases import LeaseJudge, LeaseWatch
from .reader import TaskReader
from .replicas import runner_liveness
from .stores import TaskState, TaskStore
from .writer import TaskWriter

__all__ = [
    "EXPIRED_GRACE_MS",
    "SERVER_STOPPED",
    "SWEEP_BATCH",
    "WORKER_STOPPED",
    "Sweeper",
    "lost_run_reasons",
]

SERVER_STOPPED = "the server stopped while this task ran"
"""Why a task still working when its server (or replica) went away ended failed."""

SERVER_STOPPED_SHORT = "its server stopped"
"""The same, in the status message of a run started again."""

WORKER_STOPPED = "the worker running this task stopped"
WORKER_STOPPED_SHORT = "its worker stopped"
"""The same two for a task of the workers' (``run_on="workers"``)."""


def lost_run_reasons(state: TaskState, *, lease_ran_out: bool) -> tuple[str, str]:
    """Why the run of ``state`` was lost, as a failed task says it and (shorter) as a re-run's
    status message does. At a server's start its runner is known gone; when its lease ran out, the
    runner may still be alive, cut off from the store (paused, partitioned): this host tells for
    its own processes (:func:`.replicas.runner_liveness`), and for another host both are said."""
    kind = "worker" if state.run_on == "workers" else "server"  # the process that held the run
    stopped, stopped_short = (
        (WORKER_STOPPED, WORKER_STOPPED_SHORT) if kind == "worker" else (SERVER_STOPPED, SERVER_STOPPED_SHORT)
    )
    if not lease_ran_out or state.lease_until is None:
        return stopped, stopped_short
    since = f"its lease ran out at {format_timestamp(state.lease_until)}"
    liveness = runner_liveness(state.runner) if state.runner else "unknown"
    if liveness == "gone":
        return f"{stopped} ({since})", f"{stopped_short} ({since})"
    if liveness == "alive":
        return (
            f"the {kind} running this task could not reach the task store while it ran (alive, but"
            f" paused or partitioned; {since})",
            f"its {kind} could not reach the task store ({since})",
        )
    return (
        f"the {kind} running this task stopped, or could not reach the task store, while it ran ({since})",
        f"its {kind} stopped or could not reach the task store ({since})",
    )


EXPIRED_GRACE_MS = 60_000
"""How long a task that expired while running stays readable (as failed) before it is dropped."""


SWEEP_BATCH = 100
"""How many due tasks one store call hands out; a sweep takes batches until none is left."""


class Sweeper:
    """Expires what is due; woken early only for a deadline before its next round.

    The expiry sweep and the lease check run on timers of their own: a create costs the store
    nothing here unless its deadline comes before the sweeper would look anyway.
    """

    def __init__(
        self,
        reader: TaskReader,
        writer: TaskWriter,
        *,
        lease_s: float,
        rerun: Callable[[TaskState, str], Awaitable[bool]] | None = None,
    ) -> None:
        self._reader = reader
        self._lease_s = lease_s
        self._health = writer.health
        self._writer = writer
        self._store = reader.store
        self._rerun = rerun
        self.leases = LeaseWatch(self._store, writer.health, LeaseJudge(lease_s))
        """Whose lease ran out, on this process's monotonic clock (:mod:`.leases`)."""
        self._wakeup = anyio.Event()
        self._wake_at: float | None = None  # when (anyio.current_time()) it looks next; None: not running
        self._runners = 0  # an engine may serve two lifespans at once (the same tasks on two servers)

    def wake(self) -> None:
        """Sweep now."""
        self._wake_at = float("-inf")
        self._wakeup.set()

    def wake_for(self, deadline: datetime | None) -> None:
        """A task with ``deadline`` was created: sweep then if that is before the next round (not
        now, when nothing is due yet; and not at all when the next round comes first)."""
        if deadline is None or self._wake_at is None:
            return
        left_s = (deadline - self._reader.now()).total_seconds()
        at = anyio.current_time() + max(left_s, 0.0)
        if at < self._wake_at:
            self._wake_at = at
            self._wakeup.set()

    async def sweep(self) -> int:
        """Expire everything due now: running tasks fail (kept for a grace period), ended ones go.

        The store hands out due tasks a batch at a time; the sweep takes batches until one comes
        back short, so 10,000 tasks that expire together go in one sweep, not 100 per wake-up.
        A batch that changes nothing (a store refusing the deletes) ends the sweep rather than
        spinning on it.
        """
        removed = 0
        now = self._reader.now()
        seen: set[str] = set()
        while True:
            due = await self._store.due_for_expiry(now, limit=SWEEP_BATCH)
            fresh = [state for state in due if state.task_id not in seen]
            for state in fresh:
                seen.add(state.task_id)
                if state.is_terminal:
                    await self._writer.forget(state.task_id)
                    removed += 1
                    continue
                ttl = state.task.ttl_ms
                error = JsonRpcError(INTERNAL_ERROR, f"Task exceeded its TTL of {ttl} ms and was stopped")
                grace = timedelta(milliseconds=min(ttl or EXPIRED_GRACE_MS, EXPIRED_GRACE_MS))
                await self._fail(state, error, keep_until=now + grace)
            if len(due) < SWEEP_BATCH or not fresh:
                return removed
            await anyio.lowlevel.checkpoint()  # let requests in between batches

    async def sweep_lost_runs(self, *, runner_is_dead: Callable[[str], bool] | None = None) -> int:
        """Fail the tasks whose replica stopped: their lease ran out, or (``runner_is_dead``, at a
        server's start) their runner is known to be gone. A run whose tool may run again is
        handed to ``rerun`` instead (which says whether it took it)."""
        if runner_is_dead is None:
            lost = await self.leases.run_out(self._runs_here)
            metrics.lease_expired(len(lost))
        else:
            lost = [s for s in await _all_running(self._store) if s.runner and runner_is_dead(s.runner)]
        for state in lost:
            why, short = lost_run_reasons(state, lease_ran_out=runner_is_dead is None)
            if state.rerun and self._rerun is not None and await self._rerun(state, short):
                continue
            attempts = f"failed after {state.attempt} attempts: " if state.attempt > 1 else ""
            error = JsonRpcError(INTERNAL_ERROR, f"{attempts}{why}")
            await self._fail(state, error, keep_until=None)
        return len(lost)

    def _runs_here(self, state: TaskState) -> bool:
        """Whether ``state``'s run is alive in this process under the claim stored: its lease ran
        out only because this process could not renew it (paused, or the store away), so it is
        not lost; the renewal that comes next extends it."""
        record = self._reader.records.get(state.task_id)
        return record is not None and record.runs_here and record.run_claim == state.claim

    async def _fail(self, state: TaskState, error: JsonRpcError, *, keep_until: datetime | None) -> None:
        record = self._reader.record_of(state)
        await self._writer.finish(record, TaskEvent.FAIL, error=error, stop_work=True)
        if keep_until is not None and record.task.is_terminal:

            def keep(current: TaskState) -> TaskState | None:
                return current.evolve(expires_at=keep_until)

            await self._writer.mutate(record, keep, force_notify=False, announce=False)

    async def run(self, *, max_sleep_s: float = 1.0) -> None:
        """Sweep forever: expiry at most every ``max_sleep_s`` (sooner for a deadline before that,
        :meth:`wake_for`), and the leases every ``max_sleep_s`` on a timer of their own."""
        self._runners += 1
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self._check_leases, max_sleep_s)
                await self._expire(max_sleep_s)
        finally:
            self._runners -= 1
            if not self._runners:
                self._wake_at = None

    async def _expire(self, max_sleep_s: float) -> None:
        while True:
            # Set before the sweep: a deadline heard of during it re-plans the sleep after it.
            self._wake_at = anyio.current_time() + max_sleep_s
            try:
                await self.sweep()
            except TaskStoreError as exc:  # the store is unreachable for now: the next round tries again
                self._health.failed(exc, "sweeping expired tasks", writing=False)
            while True:  # sleep until the next round, or an earlier deadline heard of meanwhile
                self._wakeup = anyio.Event()
                left_s = self._wake_at - anyio.current_time()  # not None while a runner runs
                if left_s <= 0:
                    break
                with anyio.move_on_after(left_s):
                    await self._wakeup.wait()

    async def _check_leases(self, every_s: float) -> None:
        """Look at leases every ``every_s`` (a third of a lease if shorter), but judge none within a
        lease (and a round) of a store outage seen here (``engine.health``, any part): while the
        store was away no one could renew; once it is back the runners renew within a third of a
        lease, before anyone judges them."""
        every_s = min(every_s, self._lease_s / 3)
        while True:
            if self._health.quiet_for(self._lease_s + every_s):
                try:
                    await self.sweep_lost_runs()
                except TaskStoreError as exc:  # as above
                    self._health.failed(exc, "judging the leases of running tasks", writing=False)
            else:
                self.leases.judge.held_up()
            await anyio.sleep(every_s)


async def _all_running(store: TaskStore) -> list[TaskState]:
    found: list[TaskState] = []
    cursor: str | None = None
    while True:
        page, cursor = await store.list_tasks(cursor=cursor, limit=500)
        found.extend(state for state in page if not state.is_terminal)
        if cursor is None:
            return found
