"""Task runs on worker processes: the server queues a task, a worker takes, claims and runs it.

A server whose tools run on workers creates each task *queued* (``TaskState.run_on="workers"``,
no runner) and runs nothing of it; the store's queue (:mod:`.stores.queue`) hands it to one
worker. A worker (:class:`WorkerRuns`) takes as many entries as it has free slots, claims each
task by compare-and-set on the claim it was queued under (the next fencing token, this worker its
runner, a lease), acks the entry, and runs the tool as a re-run does, without a request
(through the worker's host, :meth:`.hosting.EngineHost.run_tool`, in the app's lifespan). From
there the run is like any other on a shared store: its writes are fenced, its lease renewed, a
cancel or an answer given through any server reaches it through the store, and a worker that dies
leaves its runs to the lease (queued again for a tool declared safe to run again, else failed
with the reason). A worker stopped gracefully stops taking, lets its runs finish within a grace,
and gives the rest back to the queue (:meth:`WorkerRuns.give_back`).
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Callable, Mapping
from contextlib import suppress
from typing import Any, Final

import anyio
import anyio.abc

from .._observe import metrics
from .._observe.otel import metering
from ..core._lifecycle import TaskEvent
from ..core._model import JsonRpcError
from ..errors import INTERNAL_ERROR, TaskStoreError
from .queueing import gave_back
from .reader import TaskReader
from .records import TaskRecord
from .replicas import ReplicaLink
from .reruns import TaskStart
from .runs import Work
from .stores import TaskState
from .stores.queue import QueueEntry, TaskQueue, queue_of
from .writer import TaskWriter

__all__ = ["GIVE_BACK_RETRY_FIRST_S", "GIVE_BACK_RETRY_MAX_S", "TAKE_WAIT_S", "WorkerRuns"]

logger = logging.getLogger("mcp_tasks_compat.worker")

TAKE_WAIT_S: Final = 1.0
"""How long one take waits for an entry before looking again (a stop is seen at least this often)."""

GIVE_BACK_RETRY_FIRST_S: Final = 0.05
GIVE_BACK_RETRY_MAX_S: Final = 2.0
"""Between tries of a stopping worker's give-back while the store does not answer: doubling,
jittered, capped, as a run's outcome (so it lands well within a lease of the store's return)."""


class WorkerRuns:
    """One worker's runs: takes queued tasks while it has free slots, claims and runs each."""

    def __init__(
        self,
        reader: TaskReader,
        writer: TaskWriter,
        replicas: ReplicaLink,
        *,
        start: TaskStart,
        work_for: Callable[[str, Mapping[str, Any]], Work | None],
        concurrency: int,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1; got {concurrency}")
        queue = queue_of(reader.store) if reader.store.shared else None
        if queue is None:
            raise ValueError(
                f"a worker needs a task store with a queue that the servers share: sqlite:///PATH, "
                f"redis://HOST:PORT/DB or postgresql://USER@HOST/DB; got {reader.store.describe}"
            )
        self.queue: TaskQueue = queue
        self.concurrency = concurrency
        self.worker_id = writer.replica_id
        self._reader = reader
        self._writer = writer
        self._replicas = replicas
        self._start = start
        self._work_for = work_for
        self._running: dict[str, TaskRecord] = {}
        self._slot_freed: anyio.Event | None = None
        self._loop_done = anyio.Event()
        self.taking = True
        """Cleared by a graceful stop: no new entry is taken."""

    @property
    def running(self) -> list[TaskRecord]:
        return list(self._running.values())

    async def serve(self, stopping: anyio.Event, *, grace_s: float) -> None:
        """Take and run queued tasks (inside the engine's host, whose background renews the leases
        and sweeps) until ``stopping`` is set; then stop taking, let the runs finish within
        ``grace_s``, give the rest back, and return once every outcome is written."""
        async with anyio.create_task_group() as run_group:  # left once every run is over
            run_group.start_soon(self.take_and_run, run_group, name="mcp-tasks worker queue")
            await stopping.wait()
            await self.stop_taking()
            held = len(self._running)
            logger.info("worker %s: stopping; %d run(s) have %g s to finish", self.worker_id, held, grace_s)
            await self.drain(grace_s)
            await self.give_back()

    async def stop_taking(self) -> None:
        """Take nothing more; returns once the take under way (at most :data:`TAKE_WAIT_S`) is
        over and what it took is claimed and started (to be drained or given back with the rest)."""
        self.taking = False
        if self._slot_freed is not None:
            self._slot_freed.set()
        await self._loop_done.wait()

    async def take_and_run(self, group: anyio.abc.TaskGroup) -> None:
        """Take entries while :attr:`taking` and slots are free; runs start in ``group``."""
        try:
            await self._take_while_taking(group)
        finally:
            self._loop_done.set()

    async def _take_while_taking(self, group: anyio.abc.TaskGroup) -> None:
        while self.taking:
            free = self.concurrency - len(self._running)
            if free <= 0:
                self._slot_freed = freed = anyio.Event()
                await freed.wait()
                continue
            try:
                entries = await self.queue.take(
                    self.worker_id, free, wait_s=TAKE_WAIT_S, redeliver_after_s=self._replicas.lease_s
                )
            except TaskStoreError as exc:
                self._writer.health.failed(exc, "taking queued tasks", writing=False)
                await anyio.sleep(TAKE_WAIT_S)  # a back-off while the store is down
                continue
            for entry in entries:
                await self._claim_and_start(entry, group)
            if metering():  # the queue's depth as this worker sees it (a read only when measured)
                with suppress(TaskStoreError):
                    metrics.queue_depth(await self.queue.depth())

    async def _claim_and_start(self, entry: QueueEntry, group: anyio.abc.TaskGroup) -> None:
        try:
            record = await self._claim(entry)
            await self.queue.ack(entry)
        except TaskStoreError as exc:  # the entry is handed again after the redelivery bound
            self._writer.health.failed(exc, f"claiming queued task {entry.task_id}")
            return
        if record is None:
            return
        state = record.state
        metrics.queue_wait(state.tool_name, max(0.0, (self._reader.now() - entry.queued_at).total_seconds()))
        work = self._work_for(state.tool_name, dict(state.arguments or {}))
        if work is None:
            failure = JsonRpcError(INTERNAL_ERROR, f"worker {self.worker_id} has no tool {state.tool_name!r}")
            await self._writer.finish(record, TaskEvent.FAIL, error=failure, fence=state.claim)
            self._reader.records.release_if_idle(record)  # ended: the store has it
            return
        metrics.worker_run(state.tool_name)
        logger.info("task %s (%s): claimed by worker %s", state.task_id, state.tool_name, self.worker_id)
        self._running[state.task_id] = record
        self._start(record, self._tracked(record, work), group)

    def _tracked(self, record: TaskRecord, work: Work) -> Work:
        """``work``, whose end frees its slot here (whatever ends it)."""

        async def run() -> Mapping[str, Any]:
            try:
                return await work()
            finally:
                self._running.pop(record.task.task_id, None)
                if self._slot_freed is not None:
                    self._slot_freed.set()

        return run

    async def _claim(self, entry: QueueEntry) -> TaskRecord | None:
        """The entry's task claimed here (compare-and-set on the claim it was queued under), or
        ``None``: gone, ended, or claimed by someone else meanwhile (the entry is stale)."""
        state = await self._reader.store.get(entry.task_id)
        if state is None or not state.queued or state.claim != entry.claim:
            return None
        attempt = f"attempt {state.attempt}: " if state.attempt > 1 else ""
        message = f"{attempt}running on worker {self.worker_id}"

        def claim(current: TaskState) -> TaskState | None:
            if not current.queued or current.claim != entry.claim:
                return None
            task = current.task.evolve(status_message=message)
            return self._replicas.claim(current).evolve(task=task)

        record = self._reader.record_of(state)
        if not await self._writer.mutate(record, claim, force_notify=True):
            return None
        self._reader.records.add(record)
        return record

    async def drain(self, grace_s: float) -> None:
        """Wait up to ``grace_s`` for the runs here to end (after :meth:`stop_taking`)."""
        with anyio.move_on_after(grace_s if math.isfinite(grace_s) else None):
            await self._until_no_runs()

    async def _until_no_runs(self) -> None:
        """Return once no run is held here (each run's end frees its slot and sets the event)."""
        while self._running:
            self._slot_freed = freed = anyio.Event()
            await freed.wait()

    async def give_back(self) -> int:
        """Stop the runs still here and queue each again for another worker (not failed: the same
        attempt). A give-back the store cannot take now is written again until it can (as a run's
        outcome is): a worker stopped during an outage waits for the store, saying so once, and the
        orchestrator's kill decides how long (killed, its runs are left to their lease). A give-back
        the store refuses (a newer claim, the task ended) is not retried. How many were given back."""
        held = [(record, record.run_claim) for record in self._running.values()]
        for record, _claim in held:
            if record.scope is not None:
                record.scope.cancel()
        with anyio.move_on_after(self._replicas.lease_s):  # the runs end at their next checkpoint
            await self._until_no_runs()
        given = 0
        with anyio.CancelScope(shield=True):
            given = await _give_back_each(self._writer, self.worker_id, held)
        return given


async def _give_back_each(
    writer: TaskWriter, worker_id: str, held: list[tuple[TaskRecord, int | None]]
) -> int:
    """Write the give-back of each run ``held`` by ``worker_id`` (with the claim it ran under),
    retried (doubling, jittered) while the store does not answer; how many landed. Waiting for
    the store is said when it begins and when it ends."""
    given, delay, began = 0, GIVE_BACK_RETRY_FIRST_S, anyio.current_time()
    waiting = False
    pending = list(held)
    while pending:
        record, claim = pending[0]
        try:
            if await writer.mutate(record, gave_back(worker_id), force_notify=True, fence=claim):
                given += 1
            pending.pop(0)
            continue
        except TaskStoreError as exc:
            writer.health.failed(exc, f"giving back task {record.task.task_id}")
        if not waiting:
            waiting = True
            logger.warning(
                "worker %s: stopping, but the task store does not answer: waiting for it to give back"
                " %d run(s) to the queue (killed meanwhile, they are left to their lease)",
                worker_id,
                len(pending),
            )
        await anyio.sleep(delay * random.uniform(0.5, 1.0))  # a back-off, not a synchronisation
        delay = min(delay * 2, GIVE_BACK_RETRY_MAX_S)
    if waiting:
        waited_s = anyio.current_time() - began
        logger.warning(
            "worker %s: the task store answers again: gave back %d running task(s) to the queue"
            " after waiting %.1f s",
            worker_id,
            given,
            waited_s,
        )
    elif given:
        logger.info("worker %s: gave back %d running task(s) to the queue", worker_id, given)
    return given
