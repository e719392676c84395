"""What a serving engine runs beside its tasks: the store opened, recovery, the sweeper, the leases.

Reading and changing tasks needs only the store opened (the CLI's ``tasks`` commands stop there);
serving them needs the background too: the TTL sweep, and on a shared store the lease renewal, the
notifier (so a cancel or an answer given on another replica arrives) and the re-runs, which start
in the background's task group and live as long as it.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import ExitStack, asynccontextmanager
from functools import partial

import anyio
import anyio.abc

from .expiry import Sweeper
from .reader import TaskReader
from .replicas import ReplicaLink, runner_died_on_this_host
from .reruns import Reruns

__all__ = ["Serving"]


class Serving:
    """Opens the store, recovers what a killed server left, and runs the background of a server."""

    def __init__(self, reader: TaskReader, expiry: Sweeper, replicas: ReplicaLink, reruns: Reruns) -> None:
        self._reader = reader
        self._store = reader.store
        self._expiry = expiry
        self._replicas = replicas
        self._reruns = reruns
        self._opened = False
        self._recovered = False

    async def open(self) -> None:
        """Open the store (idempotent). Reading and changing tasks needs nothing more; serving
        them needs :meth:`background` too."""
        if not self._opened:
            await self._store.open()
            if self._store.shared:
                await self._reader.sync_clock()  # leases and deadlines on the store's clock
            self._opened = True

    async def recover(self) -> int:
        """At a server's start on a shared store: fail the runs of dead processes of this host
        (once; those whose tool may run again are left for :meth:`background` to start)."""
        if not self._store.shared or self._recovered:
            return 0
        self._recovered = True
        return await self._expiry.sweep_lost_runs(runner_is_dead=runner_died_on_this_host)

    async def background(self, *, max_sleep_s: float = 1.0) -> None:
        """What a server runs beside its tasks: the sweeper and, on a shared store, the lease
        renewal and the notifier (so a cancel or an answer given on another replica arrives)."""
        await self.open()
        await self.recover()
        with ExitStack() as lent:  # re-runs start in this group, and live, as long as it does
            async with anyio.create_task_group() as group:
                if self._reruns.wanted:
                    lent.enter_context(self._reruns.starting_in(group))
                    # what recover() left for now, as its tool may run again: started, or failed
                    await self._expiry.sweep_lost_runs(runner_is_dead=runner_died_on_this_host)
                group.start_soon(partial(self._expiry.run, max_sleep_s=max_sleep_s), name="mcp-tasks sweeper")
                if self._store.shared:
                    group.start_soon(self._replicas.renew_leases, name="mcp-tasks leases")
                    group.start_soon(self._replicas.follow_other_replicas, name="mcp-tasks notifier")

    @asynccontextmanager
    async def running(self) -> AsyncGenerator[anyio.abc.TaskGroup, None]:
        """A task group for runs plus :meth:`background`; leaving it cancels every run still going."""
        await self.open()
        await self.recover()  # before the first request can read a run left by a killed server
        async with anyio.create_task_group() as group:
            group.start_soon(self.background, name="mcp-tasks background")
            try:
                yield group
            finally:
                group.cancel_scope.cancel()
