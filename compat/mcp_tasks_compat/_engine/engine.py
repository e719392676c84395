"""The task engine: creates a task, starts its run, cancels it, and holds the parts that do the rest.

:class:`TaskEngine` holds its parts rather than being them: its :attr:`~TaskEngine.reader`
(every read), its :attr:`~TaskEngine.writer` (every change), its runs (:attr:`~TaskEngine.runs`),
input relay (:attr:`~TaskEngine.inputs`), sweeper (:attr:`~TaskEngine.expiry`), link to other
replicas (:attr:`~TaskEngine.replicas`), re-runs (:attr:`~TaskEngine.rerunner`) and background
(:attr:`~TaskEngine.serving`), which read and change tasks through that one reader and writer.
The layers above call the engine; its methods that only hand on say to which part.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from typing import Any, Concatenate, Final, ParamSpec, TypeVar

import anyio
import anyio.abc

from .._observe import traces
from ..core._model import Task, TaskStatus
from ..dialects import Dialect
from .expiry import Sweeper
from .hosting import EngineHost, Hosts
from .inputs import InputRelay
from .observed import metrics_hook, traced_run
from .outage import StoreHealth, health_hook
from .polling import PollPolicy
from .queueing import QUEUED, Queueing
from .reader import TaskReader
from .records import TaskRecord, new_task_id
from .replicas import ReplicaLink, new_replica_id
from .reruns import Reruns
from .runs import ResultRule, TaskRuns, Work, current_run, pending_call, report_status
from .serving import Serving, sweep_interval_s
from .settings import DEFAULT_LEASE_S, DEFAULT_TTL_FLOOR_MS, EngineSettings
from .stores import InMemoryTaskStore, TaskState, check_store
from .stores.delegating import delegating
from .stores.task_state import RunOn
from .writer import CANCELLED_BY_CLIENT, TaskWriter

__all__ = [
    "DEFAULT_LEASE_S",
    "DEFAULT_TTL_FLOOR_MS",
    "PollPolicy",
    "TaskEngine",
    "current_run",
    "pending_call",
    "report_status",
]

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _handing_on(
    to: Callable[Concatenate[Any, _P], _R],
) -> Callable[[Callable[..., Any]], Callable[Concatenate[TaskEngine, _P], _R]]:
    """Types an engine method that only hands on to ``to``, a part's method, as taking what ``to``
    takes, and gives it ``to``'s docstring: the parameters are written once, where the work is,
    and cannot drift apart."""

    def typed(method: Callable[..., Any]) -> Callable[Concatenate[TaskEngine, _P], _R]:
        method.__doc__ = to.__doc__
        return method

    return typed


class TaskEngine:
    """Creates, runs, reads, cancels and expires tasks for one server (one replica of it).

    Its parts do the rest (:attr:`reader`, :attr:`writer`, :attr:`runs`, :attr:`inputs`,
    :attr:`expiry`, :attr:`replicas`, :attr:`rerunner`, :attr:`serving`); the methods after
    :meth:`cancel` only hand on to one of them, for the layers above.
    """

    def __init__(
        self,
        settings: EngineSettings | None = None,
        /,
        *,
        reruns: dict[str, int] | None = None,
        result_rules: dict[Dialect, ResultRule] | None = None,
        clock: Callable[[], float] = time.time,
        **fields: Any,
    ) -> None:
        """An engine built from ``settings`` (``fields``: its keywords, to build or amend it); ``reruns``
        and ``result_rules`` are tables shared with whoever fills them (the policy, its services)."""
        if fields:
            settings = replace(settings, **fields) if settings is not None else EngineSettings(**fields)
        settings = settings if settings is not None else EngineSettings()
        self.settings: Final = settings
        """What this engine was built from: a worker of the same server is built from it too."""
        inner = check_store(settings.store) if settings.store is not None else InMemoryTaskStore()
        self.health = StoreHealth(inner.describe)
        """Whether the store answers (the parts report its failures there): an outage is two log lines."""
        # one layer, its queue included (:mod:`.stores.delegating`): health told, operations timed
        self.store = delegating(inner, health_hook(inner, self.health), metrics_hook(inner))
        self.poll_policy = settings.poll_policy
        self.limits = settings.limits
        self.shared = self.store.shared
        """Other processes may use the store: leases, the notifier and re-reads matter."""
        self.ttl_floor_ms = settings.ttl_floor_ms
        self.default_ttl_ms = settings.granted_default_ttl_ms
        self.reader = TaskReader(self.store, poll_policy=self.poll_policy, limits=self.limits, clock=clock)
        self.writer = TaskWriter(
            self.reader,
            status_interval_s=settings.status_interval_s,
            replica_id=new_replica_id(),
            health=self.health,
        )
        self.replicas = ReplicaLink(self.reader, self.writer, lease_s=settings.lease_s)
        self.reruns: Final[dict[str, int]] = reruns if reruns is not None else {}
        """Tool name to how many times a lost run of it starts again (one table: never replaced)."""
        hosts = Hosts()
        self.rerunner = Reruns(self.writer, self.replicas, hosts, self.reruns, start=self.start)
        self.runs = TaskRuns(
            self.writer,
            self.reader.records,
            host=self,
            left_for_rerun=self.rerunner.leaves_for_rerun,
            result_rules=result_rules,
        )
        self.inputs = InputRelay(self.reader, self.writer)
        self.expiry = Sweeper(
            self.reader, self.writer, rerun=self.rerunner.rerun_lost, lease_s=settings.lease_s
        )
        self.serving = Serving(
            self.reader,
            self.expiry,
            self.replicas,
            hosts,
            sweep_every_s=sweep_interval_s(settings.ttl_floor_ms),
        )
        self.queueing = Queueing(self.store, max_queued=settings.max_queued)
        """The workers' queue as this engine uses it (:mod:`.workers`): room checked, depth read."""

    @property
    def host(self) -> EngineHost | None:
        """The host serving this engine now (:meth:`hosted`), if any: where runs with no request
        start, how they call a tool, the lifespan value they see."""
        return self.serving.hosts.current

    def effective_ttl(self, requested_ms: int | None, *, requested: bool) -> int | None:
        """The TTL a task gets (:meth:`.limits.TaskLimits.granted_ttl`, this engine's floor and default)."""
        floor, default = self.ttl_floor_ms, self.default_ttl_ms
        return self.limits.granted_ttl(requested_ms, requested=requested, floor_ms=floor, default_ms=default)

    async def create(
        self,
        *,
        dialect: Dialect,
        owner: str | None,
        tool_name: str,
        ttl_ms: int | None,
        status_message: str | None = None,
        arguments: Mapping[str, Any] | None = None,
        run_on: RunOn = "here",
    ) -> TaskRecord:
        """Create a ``working`` task, durably stored (readable by any replica) before this returns.

        ``arguments`` (the call's) are kept only for a tool declared safe to run again
        (:attr:`reruns`), for that run, or for a task queued for the workers (``run_on="workers"``:
        nothing runs here; the store's queue hands it to one worker, :mod:`.workers`). Refused
        (``PeerProtocolError``) when ``owner`` already has its maximum of active tasks, or the
        workers' queue its maximum of waiting tasks.
        """
        if run_on == "workers":
            await self.queueing.check_room()
            status_message = status_message or QUEUED
        now = self.reader.now()  # the store's clock, as every deadline and lease
        hint = self.poll_policy.hint_ms(0)
        task = Task(new_task_id(), TaskStatus.WORKING, now, now, ttl_ms, hint, status_message)
        deadline = self.reader.deadline(ttl_ms)
        carrier = traces.current_carrier()  # the trace its run and a cancel anywhere join
        state = TaskState(task, dialect, owner, tool_name, expires_at=deadline, trace_context=carrier)
        if self.reruns.get(tool_name, 0) > 0 and arguments is not None:
            state = state.evolve(rerun=True, arguments=dict(arguments))
        if run_on == "workers":  # queued: claimed by the worker that takes it
            state = state.evolve(run_on=run_on, arguments=dict(arguments or {}))
        elif self.shared:
            state = self.replicas.claim(state)
        record = await self.writer.create(state)
        self.expiry.wake_for(state.expires_at)  # only a deadline before its next round
        if run_on == "workers":  # nothing of it runs here: held only by whoever watches it
            self.reader.records.release_if_idle(record)
        return record

    def start(self, record: TaskRecord, work: Work, task_group: anyio.abc.TaskGroup) -> None:
        """Run ``work`` in ``task_group`` as the task's run (:meth:`.runs.TaskRuns.start`), traced."""
        self.runs.start(record, traced_run(record, work), task_group)

    async def cancel(
        self, task_id: str, owner: str | None, *, strict: bool, reason: str = CANCELLED_BY_CLIENT
    ) -> Task:
        """Cancel the owner's task (:meth:`.writer.TaskWriter.cancel`: ``cancelled`` before this
        returns, then the work stopped; ``reason`` its status message); -32602 when unknown. The
        layers above that hold the record already call :meth:`cancel_record` (no second read)."""
        return await self.cancel_record(await self.lookup(task_id, owner), strict=strict, reason=reason)

    # --- handed on to the part that does it: the parameters are that part's (``_handing_on``) ---

    @_handing_on(TaskWriter.cancel)
    async def cancel_record(self, *args: Any, **kwargs: Any) -> Task:
        return await self.writer.cancel(*args, **kwargs)

    @_handing_on(TaskReader.lookup)
    async def lookup(self, *args: Any, **kwargs: Any) -> TaskRecord:
        return await self.reader.lookup(*args, **kwargs)

    @_handing_on(TaskReader.get)
    async def get(self, *args: Any, **kwargs: Any) -> Task:
        return await self.reader.get(*args, **kwargs)

    @_handing_on(TaskReader.shown)
    def shown(self, *args: Any, **kwargs: Any) -> Task:
        return self.reader.shown(*args, **kwargs)

    @_handing_on(TaskReader.list_page)
    async def list_page(self, *args: Any, **kwargs: Any) -> tuple[list[Task], str | None]:
        return await self.reader.list_page(*args, **kwargs)

    @_handing_on(TaskReader.record_of)
    def record_of(self, *args: Any, **kwargs: Any) -> TaskRecord:
        return self.reader.record_of(*args, **kwargs)

    @_handing_on(TaskReader.watch)
    def watch(self, *args: Any, **kwargs: Any) -> TaskRecord:
        return self.reader.watch(*args, **kwargs)

    @_handing_on(TaskReader.unwatch)
    def unwatch(self, *args: Any, **kwargs: Any) -> None:
        self.reader.unwatch(*args, **kwargs)

    @_handing_on(TaskWriter.mutate)
    async def mutate(self, *args: Any, **kwargs: Any) -> bool:
        return await self.writer.mutate(*args, **kwargs)

    @_handing_on(TaskWriter.finish)
    async def finish(self, *args: Any, **kwargs: Any) -> bool:
        return await self.writer.finish(*args, **kwargs)

    @_handing_on(TaskWriter.set_status_message)
    async def set_status_message(self, *args: Any, **kwargs: Any) -> None:
        await self.writer.set_status_message(*args, **kwargs)

    @_handing_on(Reruns.leaves_for_rerun)
    def leaves_for_rerun(self, *args: Any, **kwargs: Any) -> bool:
        return self.rerunner.leaves_for_rerun(*args, **kwargs)

    @_handing_on(Sweeper.sweep)
    async def sweep(self, *args: Any, **kwargs: Any) -> int:
        return await self.expiry.sweep(*args, **kwargs)

    @_handing_on(Serving.open)
    async def open(self, *args: Any, **kwargs: Any) -> None:
        await self.serving.open(*args, **kwargs)

    @_handing_on(Serving.recover)
    async def recover(self, *args: Any, **kwargs: Any) -> int:
        return await self.serving.recover(*args, **kwargs)

    @_handing_on(Serving.hosted)
    def hosted(self, *args: Any, **kwargs: Any) -> AbstractAsyncContextManager[EngineHost]:
        return self.serving.hosted(*args, **kwargs)
