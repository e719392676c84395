"""Re-run by choice: a run lost to a stopped replica is started again, for a tool declared safe.

Which tools may run again (``engine.reruns``: tool name to how many times) is the server's
declaration; how to call a tool without a request is the host's (:class:`.hosting.EngineHost`,
handed in by whoever serves the engine). A lost run of such a tool is left ``working`` when its
server stops (a stop is not a cancel), and started again by the replica that claims it first: at
a host's start for the runs of dead processes of its host machine, or when the sweeper finds a
lease run out. Every other lost run is failed, saying why.

Who re-runs what: a run of the workers' (``run_on="workers"``) is queued again, for any worker;
a run of a server's own (``run_on="here"``) is started again by whichever process claims it
first, a server replica or a worker of the same app, each through its own host: the tool sees
that process's lifespan value.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Final

import anyio.abc

from .._observe import metrics
from .hosting import EngineHost, Hosts
from .queueing import requeued
from .records import TaskRecord
from .replicas import ReplicaLink
from .runs import Work
from .stores import TaskState
from .writer import TaskWriter

__all__ = ["Reruns", "TaskStart"]

logger = logging.getLogger("mcp_tasks_compat.engine")

TaskStart = Callable[[TaskRecord, Work, anyio.abc.TaskGroup], None]
"""The engine's way to start a task's run in a task group (``engine.start``)."""


class Reruns:
    """Whether a lost run starts again here, and starting it in the engine's host."""

    def __init__(
        self,
        writer: TaskWriter,
        replicas: ReplicaLink,
        hosts: Hosts,
        counts: Mapping[str, int],
        *,
        start: TaskStart,
    ) -> None:
        self.counts: Final = counts
        """Tool name to how many times a run of it lost to a stopped replica is started again."""
        self._writer = writer
        self._replicas = replicas
        self._hosts = hosts
        self._start = start

    @property
    def wanted(self) -> bool:
        """Whether any lost run can start again: a shared store and a tool declared for it."""
        return self._writer.shared and bool(self.counts)

    def may_rerun(self, state: TaskState) -> bool:
        """Whether ``state``'s run, if lost, is started again (here, or queued again for the
        workers) rather than failed. Before any host serves the engine, a run of a declared tool
        is left for the host's first pass."""
        host = self._hosts.current
        return (
            state.rerun
            and state.arguments is not None
            and (state.run_on == "workers" or host is None or host.tools is not None)
            and state.attempt <= self.counts.get(state.tool_name, 0)
        )

    def leaves_for_rerun(self, state: TaskState) -> bool:
        """A run stopped by its server's stop (not by ``tasks/cancel``) is left ``working`` for a
        re-run, on a shared store, when its tool may run again: a stop is not a cancel. A run of
        the workers' is always left so: the stopping worker gives it back to the queue."""
        return self._writer.shared and (state.run_on == "workers" or self.may_rerun(state))

    async def rerun_lost(self, state: TaskState, why: str) -> bool:
        """Start again here the run of ``state``, lost to a stopped replica; ``False``: fail it.

        The claim is a compare-and-set on the lost run's claim (its fencing token), so of several
        replicas sweeping the same lease only one runs it, and the lost run, should it wake, writes
        nothing more. Before a host serves the engine the task is left as it is, for the host's
        own pass (:meth:`.serving.Serving.hosted`).
        """
        if not self.may_rerun(state) or state.arguments is None:
            return False
        if state.run_on == "workers":
            return await self._queue_again(state, why)
        host = self._hosts.current
        if host is None:
            return True
        work = host.run_tool(state.tool_name, state.arguments)
        if work is None:
            return False
        return await self._claim_and_start(state, why, work, host)

    async def _claim_and_start(self, state: TaskState, why: str, work: Work, host: EngineHost) -> bool:
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
            logger.info(
                "task %s (%s): %s, on %s", state.task_id, state.tool_name, message, self._writer.replica_id
            )
            self._writer.reader.records.add(record)
            metrics.rerun(state.tool_name)
            self._start(record, work, host.runs)  # its span joins the trace that created the task
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
