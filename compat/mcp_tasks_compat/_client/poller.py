"""The poll loop both dialects share, and what it reports.

* ``pollInterval`` / ``pollIntervalMs`` re-read on every answer and clamped to [floor, 30 s], the
  floor a tenth of the task's age between 5 and 100 ms (:func:`poll_floor_seconds`);
* while a ``subscriptions/listen`` stream pushes the task's states (:mod:`.push`), a wait on an
  event with only a safety poll (:data:`~.protocols.SAFETY_POLL_SECONDS` at the least): the pushed
  states are reported, and a pushed terminal state that carries its outcome ends the wait;
* every ``tasks/get`` bounded (the interval plus :data:`REQUEST_BOUND_SECONDS`): one whose answer
  the transport lost is given up and sent again, never waited on for ever;
* the TTL backstop: a task past ``createdAt + ttl`` is reported expired, never polled forever;
* ``tasks/get`` with its error answers mapped to the ``Task*Error`` family;
* ``on_status`` fed each distinct status once, never backwards, pushed statuses included;
* the shielded, time-bounded, best-effort ``tasks/cancel`` for a call that ends early.

A follower (``follow_2025.py``, ``follow_2026.py``) subclasses :class:`Poller` and says how its
dialect turns a terminal task into a result.
"""

from __future__ import annotations

import abc
import inspect
import logging
import math
import random
import time
from collections.abc import Callable
from typing import Any, Final, Generic, TypeVar

import anyio

from ..core import _codec_2025 as codec_2025
from ..core._model import Progress, Task, TaskStatus
from ..errors import INVALID_PARAMS, PeerProtocolError
from .outcomes import expired_error, lookup_error
from .protocols import (
    DEFAULT_POLL_SECONDS,
    MAX_POLL_SECONDS,
    MIN_POLL_SECONDS,
    SAFETY_POLL_SECONDS,
    OnStatus,
    RemoteError,
    ResultT,
    StatusListener,
    TaskWire,
)

__all__ = [
    "Expiry",
    "Poller",
    "Reporter",
    "StatusListeners",
    "best_effort_cancel",
    "clamp_poll_seconds",
    "poll_floor_seconds",
]

WireT = TypeVar("WireT", bound="TaskWire[Any]")

logger = logging.getLogger("mcp_tasks_compat.client")


REQUEST_BOUND_SECONDS: Final = 10.0
"""How long past its poll interval a ``tasks/get`` may go unanswered before it is sent again."""
MATURE_POLL_FLOOR_SECONDS: Final = 0.1
"""The floor once a task is a second old: no server's hint makes this client poll faster."""
POLL_FLOOR_AGE_RATIO: Final = 0.1


def poll_floor_seconds(age_s: float | None) -> float:
    """The least pause between two ``tasks/get`` of one task: a tenth of its age, in [5 ms, 100 ms].

    Why for every server: a young task is where a short pause pays (a quick tool's result arrives
    within milliseconds instead of a hundred), and a floor that grows with the age still bounds
    the requests per task whatever the hint says (even 0): about 10 * ln(age / 50 ms) + 10 in the
    first second, then at most ten a second. ``None`` (age unknown) is the mature floor.
    """
    if age_s is None or not math.isfinite(age_s):
        return MATURE_POLL_FLOOR_SECONDS
    return min(MATURE_POLL_FLOOR_SECONDS, max(MIN_POLL_SECONDS, age_s * POLL_FLOOR_AGE_RATIO))


def clamp_poll_seconds(
    poll_interval_ms: int | None, *, fallback: float = DEFAULT_POLL_SECONDS, age_s: float | None = None
) -> float:
    """The server's poll hint in seconds, clamped to [floor, 30 s] (no hint: ``fallback``).

    The floor is :func:`poll_floor_seconds` of the task's age ``age_s``.
    """
    seconds = fallback if poll_interval_ms is None else poll_interval_ms / 1000
    if not math.isfinite(seconds):
        seconds = MAX_POLL_SECONDS
    return min(MAX_POLL_SECONDS, max(poll_floor_seconds(age_s), seconds))


def _decode_2025(raw: object, where: str) -> Task:
    return codec_2025.decode_task(raw, where=where)


class StatusListeners:
    """Who follows which task on one session, fed by pushed status notifications.

    ``decode`` reads one notification's params (2025-11-25 ``notifications/tasks/status`` by
    default; the push link passes the 2026-07-28 ``notifications/tasks`` decoder).
    """

    def __init__(
        self,
        decode: Callable[[object, str], Task] = _decode_2025,
        *,
        where: str = "notifications/tasks/status",
    ) -> None:
        self._by_task: dict[str, list[StatusListener]] = {}
        self._decode = decode
        self._where = where

    def listen(self, task_id: str, listener: StatusListener) -> Callable[[], None]:
        """Follow ``task_id``; the returned function stops following."""
        self._by_task.setdefault(task_id, []).append(listener)

        def unlisten() -> None:
            entries = self._by_task.get(task_id, [])
            if listener in entries:
                entries.remove(listener)
            if not entries:
                self._by_task.pop(task_id, None)

        return unlisten

    def deliver(self, raw: object) -> None:
        """Decode one notification's params object and pass it on (malformed: ignored)."""
        try:
            task = self._decode(raw, self._where)
        except PeerProtocolError as error:
            logger.debug("ignored a malformed %s: %s", self._where, error)
            return
        for listener in list(self._by_task.get(task.task_id, ())):
            listener(task)


class Reporter:
    """Feeds ``on_status`` each distinct (status, statusMessage, progress numbers), in the order observed.

    Stale answers (an older ``lastUpdatedAt`` than the newest seen) and anything after a
    terminal status are dropped, so a push that overtook a poll never reports backwards.
    """

    def __init__(self, on_status: OnStatus | None) -> None:
        self._on_status = on_status
        self.last: Task | None = None
        self._reported: tuple[TaskStatus, str | None, Progress | None] | None = None
        self._pending: list[Task] = []
        self._wakeup: anyio.Event | None = None
        self._signalled = False
        """Woken before anyone waited: the event, once made, starts set."""

    @property
    def wakeup(self) -> anyio.Event:
        """Set when something was observed (or a follower is woken); cleared by :meth:`flush`.

        Made on first use, so a handle nobody follows (``start_tool`` in a batch) makes none.
        """
        if self._wakeup is None:
            self._wakeup = anyio.Event()
            if self._signalled:
                self._wakeup.set()
        return self._wakeup

    def wake(self) -> None:
        """Wake whoever waits on :attr:`wakeup` (or the next to wait)."""
        if self._wakeup is None:
            self._signalled = True
        else:
            self._wakeup.set()

    @property
    def has_listener(self) -> bool:
        """Whether anyone hears the statuses (``on_status`` was given)."""
        return self._on_status is not None

    def observe(self, task: Task) -> bool:
        """Record ``task`` (synchronous, so safe in a notification handler); :meth:`flush` delivers it.

        ``False`` when it was dropped as stale.
        """
        last = self.last
        if last is not None:
            if last.is_terminal:
                return False
            if task.last_updated_at < last.last_updated_at and not task.is_terminal:
                return False
        self.last = task
        key = (task.status, task.status_message, task.progress)
        if key != self._reported:
            self._reported = key
            self._pending.append(task)
            self.wake()
        return True

    async def flush(self) -> None:
        self._signalled = False
        if self._wakeup is not None and self._wakeup.is_set():
            self._wakeup = None  # the next wait gets a fresh one
        while self._pending:
            task = self._pending.pop(0)
            if self._on_status is None:
                continue
            outcome = self._on_status(task)
            if inspect.isawaitable(outcome):
                await outcome

    async def report(self, task: Task) -> None:
        self.observe(task)
        await self.flush()


class Expiry:
    """The TTL backstop: ``createdAt + ttl`` on the local monotonic clock.

    A task this client created is anchored at the moment its creation answer arrived; a resumed
    task by the age its own timestamps show (``lastUpdatedAt - createdAt``, both on the server's
    clock, so clock skew can only make the backstop later, never early). ``ttl`` is re-read from
    every answer because servers may change it.
    """

    def __init__(self, task: Task, *, resumed: bool) -> None:
        age = max(0.0, (task.last_updated_at - task.created_at).total_seconds()) if resumed else 0.0
        self._anchor = time.monotonic() - age
        self._ttl_ms = task.ttl_ms

    def update(self, task: Task) -> None:
        self._ttl_ms = task.ttl_ms

    def age(self) -> float:
        """Seconds since the task was created, as this client reckons it."""
        return time.monotonic() - self._anchor

    def remaining(self) -> float | None:
        if self._ttl_ms is None:
            return None
        return self._anchor + self._ttl_ms / 1000 - time.monotonic()

    def passed(self) -> bool:
        remaining = self.remaining()
        return remaining is not None and remaining <= 0


class Poller(abc.ABC, Generic[WireT, ResultT]):
    """Polls one task to a terminal status; a subclass per dialect turns it into a result or an error.

    The loop is never cancelled in the middle of a request: :meth:`stop_polling` lets it end after
    the current one (mcp 1.x sessions die when a request is cancelled just as its answer arrives).
    ``tool`` names the tool whose result is awaited (its output schema checks the result), ``None``
    when unknown (a resumed task).
    """

    def __init__(
        self,
        wire: WireT,
        task: Task,
        reporter: Reporter,
        expiry: Expiry,
        *,
        resumed: bool,
        tool: str | None,
    ) -> None:
        self.wire = wire
        self.tool = tool
        self.task_id = task.task_id
        self.reporter = reporter
        self.expiry = expiry
        self.resumed = resumed
        self.first = task
        self.stopped = False
        self.min_interval_s = 0.0
        """A floor under the poll interval, for a poll that only watches (see ``Follower2025``)."""
        self.deadline = math.inf
        """When the poll loop gives up (:meth:`watch`); checked between requests, like :attr:`stopped`."""

    @property
    def latest(self) -> Task:
        return self.reporter.last or self.first

    async def run(self) -> ResultT:
        """Follow the task to its result, passing on pushed statuses meanwhile."""
        await self.reporter.report(self.first)  # first: a status replayed on listen is newer
        unsubscribe = self._subscribe()
        try:
            return await self._follow()
        finally:
            unsubscribe()

    @abc.abstractmethod
    def _subscribe(self) -> Callable[[], None]:
        """Hear the task's pushed states (passing each to :meth:`_pushed`); returns the undo."""

    def _pushed(self, task: Task) -> None:
        """A pushed state: reported like a polled one (and acted on, e.g. its input requests)."""
        if self.reporter.observe(task):
            self._observed(task)

    def _wake(self) -> None:
        self.reporter.wake()

    def _covered(self) -> bool:
        """Whether a healthy push stream has acknowledged this task."""
        return False

    def _push_expected(self) -> bool:
        """Whether this task's states are pushed, or a stream asking for them is on its way (so it
        is polled only at the safety pace)."""
        return False

    def _settled_by_push(self, task: Task) -> bool:
        """Whether a pushed terminal ``task`` is the outcome itself, with no ``tasks/get`` to confirm it."""
        del task
        return False

    @abc.abstractmethod
    async def _follow(self) -> ResultT:
        """The dialect's way from the first answer to the result."""

    def _observed(self, task: Task) -> None:
        """Called with every ``tasks/get`` answer once it is reported (a follower may act on it)."""

    def _interval(self) -> float:
        """This task's poll interval now: the hint, clamped (:func:`clamp_poll_seconds`)."""
        return max(
            self.min_interval_s, clamp_poll_seconds(self.latest.poll_interval_ms, age_s=self.expiry.age())
        )

    async def get(self) -> Task | None:
        """One ``tasks/get`` (reported); ``None`` when unanswered within its bound (sent again
        later: an answer the transport lost must not stop the follower for good)."""
        try:
            task = await self.wire.get(self.task_id, read_timeout=self._interval() + REQUEST_BOUND_SECONDS)
        except RemoteError as error:
            if error.timed_out:
                return None
            if error.code == INVALID_PARAMS and self.expiry.passed():
                raise expired_error(self.task_id, self.latest.ttl_ms) from None
            raise lookup_error(
                error, self.task_id, self.wire.dialect, method="tasks/get", resumed=self.resumed
            ) from None
        self.expiry.update(task)
        await self.reporter.report(task)
        self._observed(task)
        return task

    async def _sleep_or_expire(self) -> bool:
        """Sleep one poll interval (passing on pushed statuses); ``True`` when the TTL ran out instead.

        While the task's states are pushed the interval is the safety pace (at least
        :data:`~.protocols.SAFETY_POLL_SECONDS`): the wait ends early on a pushed terminal state, the end
        of coverage (then a poll at once) or the TTL; a push that never came leaves the interval.
        """
        delay = self._interval()
        remaining = self.expiry.remaining()
        now = anyio.current_time()
        ttl_end = math.inf if remaining is None else now + max(0.0, remaining)
        polled_end = min(now + delay, ttl_end, self.deadline)
        safety = max(delay, SAFETY_POLL_SECONDS * random.uniform(0.75, 1.0))
        pushed_end = min(now + safety, ttl_end, self.deadline)
        while not self.stopped:
            covered = self._covered()
            limit = pushed_end if self._push_expected() else polled_end
            if limit - anyio.current_time() <= 0:
                return limit == ttl_end
            left = limit - anyio.current_time()
            with anyio.move_on_after(left):
                await self.reporter.wakeup.wait()
            await self.reporter.flush()
            if self.latest.is_terminal:
                break  # a pushed terminal status: settle it now rather than after the interval
            if covered and not self._covered():
                break  # the stream went away: poll at once, so nothing is missed
            # A push that never came: the loop goes on, to the poll interval's end.
        return False

    def stop_polling(self) -> None:
        """Let the poll loop end after its current request (it is never cancelled mid-request)."""
        self.stopped = True
        self.reporter.wake()

    async def poll_until_terminal(self) -> Task | None:
        """``tasks/get`` until terminal (``None`` once stopped or past the deadline); at the TTL one
        last look, then expired."""
        while True:
            expired = await self._sleep_or_expire()
            if self.stopped or anyio.current_time() >= self.deadline:
                return None
            pushed = self.latest
            if pushed.is_terminal and self._settled_by_push(pushed):
                return pushed
            task = await self.get()
            if task is not None and task.is_terminal:
                return task
            if expired and self.expiry.passed():
                raise expired_error(self.task_id, self.latest.ttl_ms)

    async def watch(self, within: float) -> Task:
        """The task's newest state once it is terminal, or after ``within`` seconds.

        For a task asked to end (``TaskRun.cancel``; 2026-07-28 cancellation is cooperative): one
        ``tasks/get`` at once (most tasks have ended by then), then this loop, hearing pushed
        states, with its pace and floor. Only reads: a follower's input answers and result wait
        stay with :meth:`run`.
        """
        self.deadline = anyio.current_time() + within
        if within <= 0:
            return self.latest
        task = await self.get()
        if task is not None and task.is_terminal:
            return task
        unsubscribe = self._subscribe()
        try:
            return await self.poll_until_terminal() or self.latest
        finally:
            unsubscribe()


async def best_effort_cancel(wire: TaskWire[Any], task_id: str, *, grace: float) -> Task | None:
    """Shielded, time-bounded ``tasks/cancel`` that never raises (the call is already ending)."""
    with anyio.CancelScope(shield=True), anyio.move_on_after(grace):
        try:
            return await wire.cancel(task_id)
        except Exception as error:
            logger.debug("best-effort tasks/cancel for %s failed: %r", task_id, error)
    return None
