"""The store's health as the log tells it: one line when it goes away, one when it is back.

While the store (Redis, a SQLite file) is away, every part of a serving engine that needs it fails
on each try: a run's outcome retried, a status message dropped, a lease not renewed, the notifier
resubscribing every second. Each used to log a warning (most with a traceback), about forty per
replica for a five-second Redis outage. They report to the engine's one :class:`StoreHealth`
instead (:meth:`StoreHealth.failed`), which logs the first failure of an outage in one line::

    task store redis://10.0.0.5:6379/0 unreachable (ConnectionError: Error 111 connecting to
    10.0.0.5:6379. Connection refused.): renewing the lease of task 3f2a... failed; until it
    answers, what fails is counted, not logged

and counts the rest (each at DEBUG, with its traceback: ``-v`` shows them). Every operation of the
engine's store, its workers' queue included, is told to the health (:class:`HealthHook`, a hook
on the engine's one store layer, :mod:`.stores.delegating`) so that the first operation that
succeeds after the outage began ends it, in one line with the count::

    task store redis://10.0.0.5:6379/0 back after 5.2 s; 37 calls failed meanwhile

"Succeeds" asks as much as failed: once a write failed, only a write that lands ends the outage
(a SQLite file locked by another process still serves reads), and an operation that began before
the outage proves nothing. A refused request is answered to its client (-32603 with the store's
message) and is not counted here. A store that cannot fail (``memory:``, not shared) has no
health hook.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from ..errors import CompatError
from .stores import TaskStore
from .stores.delegating import StoreOperation

__all__ = ["HealthHook", "StoreHealth", "health_hook"]

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


def health_hook(store: TaskStore, health: StoreHealth) -> HealthHook | None:
    """The hook telling ``health`` of ``store``'s operations that succeed (:class:`HealthHook`);
    ``None`` for a store that is not shared (``memory:``: one process, nothing to go away)."""
    return HealthHook(health) if store.shared else None


class HealthHook:
    """Tells a :class:`StoreHealth` of every store operation that succeeds (and whether it
    wrote), on the engine's one store layer (:mod:`.stores.delegating`), the workers' queue
    included. Failures are reported by the parts, which know what failed
    (:meth:`StoreHealth.failed`): told here too, one outage would be two failures per call and
    its first line would name the operation, not what the server was doing."""

    def __init__(self, health: StoreHealth) -> None:
        self.health = health

    def before(self, operation: StoreOperation) -> int:
        return self.health.epoch  # an outage begun meanwhile is not ended by this operation

    def succeeded(self, operation: StoreOperation, mark: int) -> None:
        self.health.succeeded(mark, writing=operation.writes)

    def raised(self, operation: StoreOperation, mark: int, exc: BaseException) -> None:
        """Nothing: the part that called reports it, with what it was doing."""
