"""An engine brought to life: the store opened, recovery, and the background of a serving engine.

Reading and changing tasks needs only the store opened (the CLI's ``tasks`` commands stop there);
serving them needs a host (:meth:`Serving.hosted`, the one entry for every form that serves):
the TTL sweep, and on a shared store the lease renewal, the notifier (so a cancel or an answer
given on another replica arrives) and the re-runs, which start in the host's task group, call
their tool through the host, and live as long as it.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from functools import partial
from typing import Any

import anyio
import anyio.abc

from .expiry import Sweeper
from .hosting import EngineHost, Hosts, ToolRunner
from .reader import TaskReader
from .replicas import ReplicaLink, runner_died_on_this_host

__all__ = ["Serving", "sweep_interval_s"]


def sweep_interval_s(ttl_floor_ms: int) -> float:
    """How often a serving engine sweeps: a tenth of the TTL floor, between 50 ms and 1 s, so a
    task's expiry is noticed within a tenth of the shortest TTL it can have."""
    return max(0.05, min(1.0, ttl_floor_ms / 10_000))


class Serving:
    """Opens the store, recovers what a killed server left, and hosts the engine while it serves."""

    def __init__(
        self,
        reader: TaskReader,
        expiry: Sweeper,
        replicas: ReplicaLink,
        hosts: Hosts,
        *,
        sweep_every_s: float,
    ) -> None:
        self._reader = reader
        self._store = reader.store
        self._expiry = expiry
        self._replicas = replicas
        self.hosts = hosts
        """The hosts serving this engine now (:meth:`hosted` enters them)."""
        self._sweep_every_s = sweep_every_s
        self._opened = False
        self._recovered = False

    async def open(self) -> None:
        """Open the store (idempotent). Reading and changing tasks needs nothing more; serving
        them needs :meth:`hosted`."""
        if not self._opened:
            await self._store.open()
            if self._store.shared:
                await self._reader.sync_clock()  # leases and deadlines on the store's clock
            self._opened = True

    async def recover(self) -> int:
        """At a server's start on a shared store: the runs of dead processes of this host failed,
        or started again here when their tool may run again and a host can run it (once)."""
        if not self._store.shared or self._recovered:
            return 0
        self._recovered = True
        return await self._expiry.sweep_lost_runs(runner_is_dead=runner_died_on_this_host)

    @asynccontextmanager
    async def hosted(
        self,
        *,
        tools: ToolRunner | None = None,
        lifespan: Callable[[], AbstractAsyncContextManager[Any]] | None = None,
        process: bool = False,
        runs_in: anyio.abc.TaskGroup | None = None,
        max_sleep_s: float | None = None,
    ) -> AsyncGenerator[EngineHost, None]:
        """Serve: the server's lifespan entered, the store opened and recovered, the background
        running, until this is left (then the background and the runs with no request stop,
        before the lifespan closes).

        ``lifespan`` is the server's own (the user's ``lifespan=``), entered here once for this
        host; ``tools`` is how a tool runs with no request here, given that lifespan's value
        (re-runs, a worker's runs; ``None``: a lost run is failed, not re-run, by this host).
        ``process``: this host serves the whole process, and a later entry (a lifespan, a
        session) joins it instead of hosting again. Runs with no request start in ``runs_in``
        (default: the host's own group).
        """
        joined = self.hosts.process
        if joined is not None:  # the process is served already: a lifespan or session joins it
            yield joined
            return
        async with AsyncExitStack() as stack:
            value: Any = {} if lifespan is None else await stack.enter_async_context(lifespan())
            await self.open()
            group = await stack.enter_async_context(anyio.create_task_group())
            host = EngineHost(runs_in or group, tools, value, process)
            stack.enter_context(self.hosts.entered(host))
            await self._recover_hosted()  # before the first request can read a lost run
            group.start_soon(partial(self._background, max_sleep_s), name="mcp-tasks background")
            try:
                yield host
            finally:
                group.cancel_scope.cancel()

    async def _recover_hosted(self) -> None:
        """:meth:`recover`, and again if it ran before this host: what it left for a host (runs
        whose tool may run again) is started here now, or failed when this host cannot run it."""
        if not self._recovered:
            await self.recover()
        elif self._store.shared:
            await self._expiry.sweep_lost_runs(runner_is_dead=runner_died_on_this_host)

    async def _background(self, max_sleep_s: float | None) -> None:
        """The sweeper and, on a shared store, the lease renewal and the notifier."""
        async with anyio.create_task_group() as group:
            every = self._sweep_every_s if max_sleep_s is None else max_sleep_s
            group.start_soon(partial(self._expiry.run, max_sleep_s=every), name="mcp-tasks sweeper")
            if self._store.shared:
                group.start_soon(self._replicas.renew_leases, name="mcp-tasks leases")
                group.start_soon(self._replicas.follow_other_replicas, name="mcp-tasks notifier")
