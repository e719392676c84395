"""What a shared store (SQLite, Redis) needs of a serving engine: leases and the notifier.

Each run's state names its runner (:func:`new_replica_id`: host, pid, random) and until when the
runner's lease holds. The serving engine renews the leases of its runs, and follows the store's
notifier so a cancel or an answer given on another replica reaches the work here. At start it
fails at once the runs of a process of this host that is gone (:func:`runner_died_on_this_host`,
a server killed and restarted; :mod:`.serving`), or starts them again where their tool is declared
safe to run again (:mod:`.reruns`). Runs of live processes, or of other hosts, are left to their
leases: the sweeper fails them when a lease runs out.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
from contextlib import suppress
from datetime import timedelta
from typing import Literal

import anyio

from .._observe import metrics
from ..errors import TaskStoreError
from .reader import TaskReader
from .records import TaskRecord
from .stores import SilentNotifier, TaskState
from .writer import TaskWriter

__all__ = [
    "HELD_POLL_S",
    "RENEW_RETRY_S",
    "ReplicaLink",
    "new_replica_id",
    "runner_died_on_this_host",
    "runner_liveness",
]

HELD_POLL_S = 0.25
"""On a store without a notifier (SQLite), how often the tasks this process holds are re-read."""

RENEW_RETRY_S = 0.2
"""After a renewal the store refused, how soon the next try comes (if sooner than a third of the
lease): once the store is back, the runs' leases are renewed before other replicas judge them."""

logger = logging.getLogger("mcp_tasks_compat.engine")


def new_replica_id() -> str:
    """``host/pid/random``: unique per engine, and telling which process on which host runs a task."""
    return f"{socket.gethostname()}/{os.getpid()}/{secrets.token_hex(4)}"


def runner_died_on_this_host(runner: str) -> bool:
    """Whether ``runner`` (a :func:`new_replica_id`) was a process of this host that is gone.

    ``False`` when unsure (another host, an id of another shape, a pid now reused): the lease
    then decides, later but safely.
    """
    return runner_liveness(runner) == "gone"


def runner_liveness(runner: str) -> Literal["gone", "alive", "unknown"]:
    """What this host knows of ``runner`` (a :func:`new_replica_id`): a process of this host that
    is ``gone`` or ``alive`` (this process included), or ``unknown`` (another host, an id of
    another shape). Said in a lost run's reason: a run whose lease ran out while its process was
    alive was cut off from the store (paused, or partitioned), not stopped."""
    host, _, rest = runner.partition("/")
    pid_text = rest.partition("/")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return "unknown"
    pid = int(pid_text)
    if pid == os.getpid():
        return "alive"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return "gone"
    except OSError:
        return "alive"  # it exists (another user's, say)
    return "alive"


class ReplicaLink:
    """The serving engine's link to the other processes sharing its store."""

    def __init__(self, reader: TaskReader, writer: TaskWriter, *, lease_s: float) -> None:
        if lease_s <= 0:
            raise ValueError("lease_s must be positive")
        self._reader = reader
        self._writer = writer
        self.lease_s = lease_s
        # A store that can publish from inside its save (Redis) saves a round trip per change.
        reader.store.notifier.announce_saves_as(writer.replica_id)

    def claim(self, state: TaskState) -> TaskState:
        """``state`` claimed to run here: this replica its runner, the next fencing token its
        ``claim`` (saved by compare-and-set, so of two replicas claiming one task only one wins),
        the lease starting now on the store's clock."""
        return self._leased(state).evolve(claim=state.claim + 1)

    def _leased(self, state: TaskState) -> TaskState:
        lease_until = self._reader.now() + timedelta(seconds=self.lease_s)
        return state.evolve(runner=self._writer.replica_id, lease_until=lease_until)

    def _renewed(self, state: TaskState) -> TaskState | None:
        return None if state.is_terminal else self._leased(state)

    async def renew_leases(self) -> None:
        """Keep the leases of the runs held here from running out (every third of the lease),
        each renewal fenced by the run's claim, after reading the store's clock again.

        A renewal that loses its compare-and-set takes the winner's state, so a run cancelled on
        another process (even one without a notifier), or claimed by another replica once this
        one's lease ran out (this process paused, or cut off from the store), is stopped here at
        the latest then.
        """
        every_s = self.lease_s / 3
        while True:
            await anyio.sleep(every_s)
            every_s = self.lease_s / 3
            with suppress(TaskStoreError):  # the renewals below say it, once per task
                await self._reader.sync_clock()
            for record in self._reader.records.running():
                try:
                    renewed = await self._writer.mutate(
                        record, self._renewed, force_notify=False, announce=False, fence=record.run_claim
                    )
                    if renewed:
                        metrics.lease_renewed()
                except TaskStoreError as exc:
                    every_s = min(every_s, RENEW_RETRY_S)  # tried again soon: renewed once the store is back
                    self._writer.health.failed(exc, f"renewing the lease of task {record.task.task_id}")

    async def follow_other_replicas(self) -> None:
        """Hear what other processes did to tasks this one runs or waits on; resubscribe on a drop.

        An event only says which task changed: the task is re-read, whatever was done to it, and
        the state read decides what happens here (``records.adopt``): the waiters wake, a run whose
        task ended there is stopped, an answer given there reaches the work waiting for it.
        Everything held is re-read on each (re)subscription, for the events missed meanwhile. A
        shared store that cannot notify (SQLite) is polled instead: what this process holds is
        re-read every :data:`HELD_POLL_S` (a cancel or an answer given by another process reaches
        a run here within that).
        """
        if isinstance(self._reader.store.notifier, SilentNotifier):
            await self._poll_held()
            return
        while True:
            try:
                async with self._reader.store.notifier.subscribe() as events:
                    for record in self._reader.records.all():
                        await self._followed(record)  # what was missed while not subscribed
                    async for event in events:
                        record = self._reader.records.get(event.task_id)
                        if record is not None and event.origin != self._writer.replica_id:
                            await self._followed(record)
            except TaskStoreError as exc:
                self._writer.health.failed(exc, "following other replicas (the notifier)", writing=False)
                await anyio.sleep(1.0)  # a back-off before reconnecting, not a synchronisation

    async def _followed(self, record: TaskRecord) -> None:
        """``record`` re-read; a change made elsewhere (a worker's status, another replica's
        cancel) is told to its status listeners here, as this process's own changes are."""
        if await self._reader.refresh(record):
            await record.tell_listeners()

    async def _poll_held(self) -> None:
        while True:
            await anyio.sleep(HELD_POLL_S)  # a poll period: the store cannot tell this process
            for record in self._reader.records.all():
                try:
                    await self._followed(record)
                except TaskStoreError as exc:
                    self._writer.health.failed(exc, "re-reading the tasks held here", writing=False)
                    break
