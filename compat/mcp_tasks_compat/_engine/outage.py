"""The store's health as the log tells it: one line when it goes away, one when it is back.

While the store (Redis, a SQLite file) is away, every part of a serving engine that needs it fails
on each try: a run's outcome retried, a status message dropped, a lease not renewed, the notifier
resubscribing every second. Each used to log a warning (most with a traceback), about forty per
replica for a five-second Redis outage. They report to the engine's one :class:`StoreHealth`
instead (:meth:`StoreHealth.failed`), which logs the first failure of an outage in one line::

    task store redis://10.0.0.5:6379/0 unreachable (ConnectionError: Error 111 connecting to
    10.0.0.5:6379. Connection refused.): renewing the lease of task 3f2a... failed; until it
    answers, what fails is counted, not logged

and counts the rest (each at DEBUG, with its traceback: ``-v`` shows them). The engine's store is
wrapped (:func:`watched`) so that the first operation that succeeds after the outage began ends
it, in one line with the count::

    task store redis://10.0.0.5:6379/0 back after 5.2 s; 37 calls failed meanwhile

"Succeeds" asks as much as failed: once a write failed, only a write that lands ends the outage
(a SQLite file locked by another process still serves reads), and an operation that began before
the outage proves nothing. A refused request is answered to its client (-32603 with the store's
message) and is not counted here. A store that cannot fail (``memory:``, not shared) is not
wrapped: its calls go straight to it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from ..errors import CompatError
from .stores import EVERY_OWNER, Notifier, TaskState, TaskStore
from .stores.contract import EveryOwner

__all__ = ["StoreHealth", "WatchedStore", "watched"]

logger = logging.getLogger("mcp_tasks_compat.engine")


def _reason(exc: BaseException) -> tuple[str, str]:
    """How the store is (``unreachable``: a connection failed or timed out; else ``failing``),
    and why in a few words: the driver's error under ours (its type and text) when there is one
    (``raise ... from``, or the error being handled), else ours."""
    cause = exc.__cause__ or exc.__context__ or exc
    lost = isinstance(cause, OSError) or type(cause).__name__.endswith(("ConnectionError", "TimeoutError"))
    text = cause.message if isinstance(cause, CompatError) else str(cause)
    return ("unreachable" if lost else "failing"), f"{type(cause).__name__}: {text}"


class StoreHealth:
    """Whether the engine's store answers, as its parts found: an outage is logged when it begins
    and when it ends, and what failed in between is counted.

    One per engine (``engine.health``), handed to its writer; the parts that reach the store
    through the writer report there. ``clock``: seconds, for the outage's length.
    """

    def __init__(self, describe: str, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.describe = describe
        self._clock = clock
        self._since: float | None = None  # when the outage began; None: the store answers
        self._failures = 0  # what failed since
        self._writes_failed = False  # a write failed since: only a write that lands ends it
        self._failed_at = float("-inf")  # when a part last saw the store fail
        self.epoch = 0
        """How many outages began so far: an operation notes it when it starts, and its success
        ends an outage only if none began meanwhile (:meth:`succeeded`)."""

    @property
    def down(self) -> bool:
        """An outage began and nothing has succeeded since."""
        return self._since is not None

    def quiet_for(self, seconds: float) -> bool:
        """No part saw the store fail for at least ``seconds``: what the sweeper asks before it
        judges leases (while the store was away nobody could renew one). Failures only: it does not
        wait for a success, which an idle replica may not have."""
        return self._clock() - self._failed_at >= seconds

    def failed(self, exc: BaseException, what: str, *, writing: bool = True) -> None:
        """``what`` (a phrase: "renewing the lease of task X") failed because the store did
        (``exc``, a :class:`~..errors.TaskStoreError`); ``writing``: it needed a write. The first
        failure of an outage is logged in one line, the others counted (at DEBUG, with traceback)."""
        self._failures += 1
        self._failed_at = self._clock()
        self._writes_failed = self._writes_failed or writing
        if self._since is not None:
            logger.debug("task store %s: %s failed", self.describe, what, exc_info=exc)
            return
        self._since = self._clock()
        self.epoch += 1
        state, reason = _reason(exc)
        logger.warning(
            "task store %s %s (%s): %s failed; until it answers, what fails is counted, not logged",
            self.describe,
            state,
            reason,
            what,
        )
        logger.debug("task store %s: %s failed", self.describe, what, exc_info=exc)

    def succeeded(self, epoch: int, *, writing: bool) -> None:
        """An operation begun at ``epoch`` (:attr:`epoch` then) succeeded; ``writing``: it wrote.
        Ends the outage, in one line, unless it began before the outage or only read while a
        write had failed."""
        since = self._since
        if since is None or epoch != self.epoch or (self._writes_failed and not writing):
            return
        failures = self._failures
        self._since, self._failures, self._writes_failed = None, 0, False
        logger.warning(
            "task store %s back after %.1f s; %d %s failed meanwhile",
            self.describe,
            self._clock() - since,
            failures,
            "call" if failures == 1 else "calls",
        )


def watched(store: TaskStore, health: StoreHealth) -> TaskStore:
    """``store`` reporting its successes to ``health`` (:class:`WatchedStore`); a store that is
    not shared (``memory:``: one process, nothing to go away) as it is."""
    return WatchedStore(store, health) if store.shared else store


class WatchedStore:
    """A :class:`TaskStore` that tells its :class:`StoreHealth` of every operation that succeeds
    (whether it wrote), and is otherwise the store it wraps. Failures are reported by the parts,
    which know what failed (:meth:`StoreHealth.failed`).

    The operations take what the wrapped store's take and hand it on as given, so a store's own
    keywords pass through."""

    def __init__(self, inner: TaskStore, health: StoreHealth) -> None:
        self.inner = inner
        self.health = health

    @property
    def shared(self) -> bool:
        return self.inner.shared

    @property
    def notifier(self) -> Notifier:
        return self.inner.notifier

    @property
    def describe(self) -> str:
        return self.inner.describe

    async def open(self) -> None:
        await self.inner.open()

    async def close(self) -> None:
        await self.inner.close()

    # Each operation inline (not through a helper coroutine): one frame more per store call, no more.

    async def create(self, state: TaskState, *args: Any, **kwargs: Any) -> None:
        epoch = self.health.epoch
        await self.inner.create(state, *args, **kwargs)
        self.health.succeeded(epoch, writing=True)

    async def get(self, task_id: str, *args: Any, **kwargs: Any) -> TaskState | None:
        epoch = self.health.epoch
        state = await self.inner.get(task_id, *args, **kwargs)
        self.health.succeeded(epoch, writing=False)
        return state

    async def save(self, state: TaskState, *args: Any, **kwargs: Any) -> TaskState:
        epoch = self.health.epoch
        saved = await self.inner.save(state, *args, **kwargs)
        self.health.succeeded(epoch, writing=True)
        return saved

    async def delete(self, task_id: str, *args: Any, **kwargs: Any) -> None:
        epoch = self.health.epoch
        await self.inner.delete(task_id, *args, **kwargs)
        self.health.succeeded(epoch, writing=True)

    async def count_active(self, owner: str | None, *, at_most: int) -> int:
        epoch = self.health.epoch
        count = await self.inner.count_active(owner, at_most=at_most)
        self.health.succeeded(epoch, writing=False)
        return count

    async def due_for_expiry(self, now: datetime, *, limit: int = 100) -> list[TaskState]:
        epoch = self.health.epoch
        due = await self.inner.due_for_expiry(now, limit=limit)
        self.health.succeeded(epoch, writing=False)
        return due

    async def next_expiry(self) -> datetime | None:
        epoch = self.health.epoch
        soonest = await self.inner.next_expiry()
        self.health.succeeded(epoch, writing=False)
        return soonest

    async def lease_expired(self, now: datetime, *, limit: int = 100) -> list[TaskState]:
        epoch = self.health.epoch
        lost = await self.inner.lease_expired(now, limit=limit)
        self.health.succeeded(epoch, writing=False)
        return lost

    async def list_tasks(
        self, *, owner: str | EveryOwner | None = EVERY_OWNER, cursor: str | None = None, limit: int = 100
    ) -> tuple[list[TaskState], str | None]:
        epoch = self.health.epoch
        page = await self.inner.list_tasks(owner=owner, cursor=cursor, limit=limit)
        self.health.succeeded(epoch, writing=False)
        return page

    def __getattr__(self, name: str) -> object:
        """Anything else a store has (a test's or a tool's look inside) is the wrapped store's."""
        return getattr(self.inner, name)
