"""Re-run by choice: a run lost to a stopped replica is started again, for a tool declared safe.

Which tools may run again (``engine.reruns``: tool name to how many times) is the server's
declaration; how to call a tool without a request (``engine.rerun_work``) is the adapter's. A lost
run of such a tool is left ``working`` when its server stops (a stop is not a cancel), and started
again by the replica that claims it first: at a server's start for the runs of dead processes of
its host, or when the sweeper finds a lease run out. Every other lost run is failed, saying why.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Mapping
from contextlib import contextmanager
from typing import Any

import anyio.abc

from .._observe import metrics
from .queueing import requeued
from .records import TaskRecord
from .replicas import ReplicaLink
from .runs import Work
from .stores import TaskState
from .writer import TaskWriter

__all__ = ["RerunWork", "Reruns", "TaskStart"]

logger = logging.getLogger("mcp_tasks_compat.engine")

RerunWork = Callable[[str, Mapping[str, Any]], Work | None]
"""The adapter's way to run a tool again without a request: ``(tool_name, arguments)`` to its work,
or ``None`` when that tool cannot be called so here."""

TaskStart = Callable[[TaskRecord, Work, anyio.abc.TaskGroup], None]
"""The engine's way to start a task's run in a task group (``engine.start``)."""


class Reruns:
    """Whether a lost run starts again here, and starting it while an engine serves."""

    def __init__(self, writer: TaskWriter, replicas: ReplicaLink, *, start: TaskStart) -> None:
        self.counts: dict[str, int] = {}
        """Tool name to how many times a run of it lost to a stopped replica is started again."""
        self.work: RerunWork | None = None
        """Set by the server adapter that can call a tool without a request (else nothing re-runs)."""
        self._writer = writer
        self._replicas = replicas
        self._start = start
        self._group: anyio.abc.TaskGroup | None = None

    @property
    def wanted(self) -> bool:
        """Whether any lost run can start again: a shared store and a tool declared for it."""
        return self._writer.shared and bool(self.counts)

    def may_rerun(self, state: TaskState) -> bool:
        """Whether ``state``'s run, if lost, is started again (here, or queued again for the
        workers) rather than failed."""
        return (
            state.rerun
            and state.arguments is not None
            and (self.work is not None or state.run_on == "workers")
            and state.attempt <= self.counts.get(state.tool_name, 0)
        )

    def leaves_for_rerun(self, state: TaskState) -> bool:
        """A run stopped by its server's stop (not by ``tasks/cancel``) is left ``working`` for a
        re-run, on a shared store, when its tool may run again: a stop is not a cancel. A run of
        the workers' is always left so: the stopping worker gives it back to the queue."""
        return self._writer.shared and (state.run_on == "workers" or self.may_rerun(state))

    @contextmanager
    def starting_in(self, group: anyio.abc.TaskGroup) -> Generator[None]:
        """Re-runs start in a serving engine's ``group`` (and live as long as it) while this lasts."""
        self._group = group
        try:
            yield
        finally:
            if self._group is group:  # another background (a second lifespan) keeps its own
                self._group = None

    async def rerun_lost(self, state: TaskState, why: str) -> bool:
        """Start again here the run of ``state``, lost to a stopped replica; ``False``: fail it.

        The claim is a compare-and-set on the lost run's claim (its fencing token), so of several
        replicas sweeping the same lease only one runs it, and the lost run, should it wake, writes
        nothing more. Before the engine serves (no task group yet) the
        task is left as it is, for the serving engine's own pass (:mod:`.serving`).
        """
        if not self.may_rerun(state) or state.arguments is None:
            return False
        if state.run_on == "workers":
            return await self._queue_again(state, why)
        if self.work is None:
            return False
        group = self._group
        if group is None:
            return True
        work = self.work(state.tool_name, state.arguments)
        if work is None:
            return False
        attempt = state.attempt + 1
        message = f"attempt {attempt} of {self.counts[state.tool_name] + 1}: started again after {why}"

        def claim(current: TaskState) -> TaskState | None:
            if current.is_terminal or current.claim != state.claim:
                return None  # ended meanwhile, or another replica took it first
            task = current.task.evolve(status_message=message)
            return self._replicas.claim(current).evolve(task=task, attempt=attempt)

        record = self._writer.reader.record_of(state)
        if record.runs_here:
            return True  # a lost run of it is still stopping here: the next sweep starts it again
        if await self._writer.mutate(record, claim, force_notify=True):
            logger.info("task %s: %s", state.task_id, message)
            self._writer.reader.records.add(record)
            metrics.rerun(state.tool_name)
            self._start(record, work, group)  # its span joins the trace that created the task
        return True

    async def _queue_again(self, state: TaskState, why: str) -> bool:
        """A lost run of the workers' queued again (the next attempt), for any worker to take;
        compare-and-set on the lost run's claim, as :meth:`rerun_lost`."""
        attempt = state.attempt + 1
        message = f"attempt {attempt} of {self.counts[state.tool_name] + 1}: queued again after {why}"

        def queue_again(current: TaskState) -> TaskState | None:
            if current.is_terminal or current.claim != state.claim:
                return None
            return requeued(current, message, attempt=attempt)

        record = self._writer.reader.record_of(state)
        if await self._writer.mutate(record, queue_again, force_notify=True):
            logger.info("task %s: %s", state.task_id, message)
            metrics.rerun(state.tool_name)
        self._writer.reader.records.release_if_idle(record)
        return True
