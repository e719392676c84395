"""Pushed 2026-07-28 task states: one ``subscriptions/listen`` stream per connection.

A :class:`PushLink` keeps one stream open, asking for ``notifications.taskIds`` of every task
the connection follows. A stream's filter is fixed when it is opened (SEP-2575 has no way to
amend it), so tasks followed later are covered by a replacement asking for the whole set; the old
stream is closed once the new one has acknowledged (make before break, so no change falls
between the two), and at most one replacement is on its way at a time. Replacements are
batched, never one per task: one opens at once when no stream is open or the tasks waiting for
one are at least a :data:`REGROW_SHARE` of those covered, else after a batching window that grows
with the tasks covered (:data:`BATCH_SECONDS_PER_TASK` each, between :data:`BATCH_SECONDS` and
:data:`MAX_BATCH_SECONDS`). Each replacement costs the server a read and a push of every task it
asks for, so a window of fixed length made a session creating tasks one after another pay for
its tasks' square (issue 43: 200 tasks, about 5,000 re-read tasks, creation at half FastMCP 4's
rate); with the window growing with the set, a replacement's cost is bounded by the time since
the last one, and a fast creator's streams grow geometrically (their count with the logarithm of
the tasks).

A task is *covered* while the current stream has acknowledged its id, and *pushed*
(:meth:`PushLink.pushes`) while it is covered or, once the server has shown it pushes (a stream
of this connection acknowledged), a stream asking for it is on its way: a follower
of a pushed task waits on an event (its wake-up) instead of polling, and still polls at the
slower safety pace :data:`~.protocols.SAFETY_POLL_SECONDS`, so a state the transport lost is seen within
seconds. It goes back to polling the moment its task is not pushed (the stream was refused,
dropped, or not acknowledged within the connection's ack bound), and polls once at once when
its task stops being covered. A dropped stream is opened again at once, at most
:data:`MAX_REOPENS` times per connection; a server that refuses, or acknowledges without
``taskIds`` (it does not push), is not asked again on this connection. A stream not acknowledged
within the ack bound (first :data:`ACK_TIMEOUT_SECONDS`) is given up and asked again at once with
the bound doubled, up to :data:`MAX_ACK_TIMEOUT_SECONDS` (a loaded server's late acks must not
make the connection poll everything for good); each ack sets the bound to a few times what it
took, within the same limits.

The adapter opens the stream (:data:`OpenStream`) and hands in what arrives: the
acknowledgement (:meth:`PushLink.acknowledged`) and each ``notifications/tasks``
(:meth:`PushLink.deliver`).
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import anyio

from ..core import _codec_2026 as codec_2026
from ..core._model import Task
from .poller import StatusListeners
from .protocols import RemoteError, StatusListener

__all__ = [
    "ACK_TIMEOUT_SECONDS",
    "BATCH_SECONDS",
    "BATCH_SECONDS_PER_TASK",
    "MAX_ACK_TIMEOUT_SECONDS",
    "MAX_BATCH_SECONDS",
    "MAX_PUSHED_TASKS",
    "REGROW_SHARE",
    "OpenStream",
    "PushLink",
    "Spawn",
]

logger = logging.getLogger("mcp_tasks_compat.client")

ACK_TIMEOUT_SECONDS: Final = 2.0
"""How long a connection's first stream may take to acknowledge before it is asked again."""
MAX_ACK_TIMEOUT_SECONDS: Final = 16.0
"""The longest ack bound: late acks double it up to here (a stream is then asked again at most
once per this many seconds)."""
ACK_BOUND_FACTOR: Final = 4.0
"""An acknowledged stream sets the ack bound to this many times what its ack took (clamped)."""
MAX_PUSHED_TASKS: Final = 256
"""Most task ids one stream asks for; tasks beyond them are polled."""
MAX_REOPENS: Final = 3
"""How often a dropped stream is opened again at once on one connection (later: at the next task)."""
BATCH_SECONDS: Final = 0.05
"""The shortest batching window: how long newly followed tasks may wait for a replacement stream
while they are few next to those covered (they are not polled meanwhile: their states come with
its acknowledgement)."""
BATCH_SECONDS_PER_TASK: Final = 0.005
"""The batching window per task covered: a replacement re-reads each, so it waits in proportion."""
MAX_BATCH_SECONDS: Final = 0.5
"""The longest batching window: a newly followed task's states are pushed within this (plus the
acknowledgement) whatever the number of tasks covered."""
REGROW_SHARE: Final = 1.0
"""Waiting tasks that make a replacement open at once, as a share of the tasks covered (1: a fast
creator's stream doubles its tasks each time, so its streams number the logarithm of its tasks)."""

OpenStream = Callable[[str, Sequence[str]], Awaitable[None]]
"""``open(stream_id, task_ids)``: run one listen stream until it ends (returns on a graceful
close, raises :class:`RemoteError` when refused and anything else when dropped)."""
Spawn = Callable[[Callable[[], Coroutine[Any, Any, None]]], object]
"""Start a coroutine function in a task group that lives as long as the session."""

_stream_ids = itertools.count(1)


@dataclass(eq=False)
class _Stream:
    """One listen request: the ids it asked for, what it acknowledged, and its cancel scope."""

    stream_id: str
    scope: anyio.CancelScope
    task_ids: frozenset[str] = frozenset()
    """The ids asked for, decided when the request is sent (after any batching delay)."""
    sent: bool = False
    sent_at: float = 0.0
    go: anyio.Event = field(default_factory=anyio.Event)
    """Set when enough tasks wait for this stream that it should not wait out its batching window."""
    acked: frozenset[str] | None = None
    ended: bool = False
    subscription_ids: set[object] = field(default_factory=lambda: set[object]())


class PushLink:
    """One connection's ``notifications/tasks`` stream and which followed tasks it covers."""

    def __init__(self, open_stream: OpenStream, spawn: Spawn) -> None:
        self._open = open_stream
        self._spawn = spawn
        self._statuses = StatusListeners(decode=_decode_pushed, where="notifications/tasks")
        self._followed: dict[str, int] = {}
        self._wakers: dict[str, list[Callable[[], None]]] = {}
        self._current: _Stream | None = None
        self._pending: _Stream | None = None
        self.refused: str | None = None
        """Why this connection does not push (``None`` while it may)."""
        self._reopens = 0
        self._pushed_once = False
        """A stream of this connection acknowledged ``taskIds`` once: the server pushes."""
        self.ack_bound = ACK_TIMEOUT_SECONDS
        """How long the next stream may take to acknowledge before it is given up and asked again."""

    # --- what followers see ------------------------------------------------------------------

    def follow(self, task_id: str, listener: StatusListener, wake: Callable[[], None]) -> Callable[[], None]:
        """Follow ``task_id``: its pushed states go to ``listener``, coverage changes call ``wake``."""
        unlisten = self._statuses.listen(task_id, listener)
        self._followed[task_id] = self._followed.get(task_id, 0) + 1
        self._wakers.setdefault(task_id, []).append(wake)
        self._relisten()

        def unfollow() -> None:
            unlisten()
            wakers = self._wakers.get(task_id, [])
            if wake in wakers:
                wakers.remove(wake)
            left = self._followed.get(task_id, 0) - 1
            if left > 0:
                self._followed[task_id] = left
                return
            self._followed.pop(task_id, None)
            self._wakers.pop(task_id, None)
            if not self._followed:
                self._close_all()  # nothing left to push: no idle stream stays open

        return unfollow

    def covers(self, task_id: str) -> bool:
        """Whether a live stream has acknowledged ``task_id`` (its states are pushed now)."""
        current = self._current
        return current is not None and not current.ended and task_id in (current.acked or ())

    def pushes(self, task_id: str) -> bool:
        """Whether ``task_id``'s states are pushed: it is covered, or (once a stream of this
        connection was acknowledged) a stream on its way asks for it or will, once sent; its
        follower waits for them instead of polling."""
        if self.covers(task_id):
            return True
        if not self._pushed_once:
            return False  # nothing says the server pushes yet: the first tasks are polled meanwhile
        pending = self._pending
        if pending is None or pending.ended or task_id not in self._followed:
            return False
        return task_id in self._wanted()  # in the stream on its way, or in the one after it

    # --- what the adapter hands in ------------------------------------------------------------

    def acknowledged(self, subscription_id: object, task_ids: Sequence[str] | None) -> bool:
        """An acknowledgement arrived; ``True`` when it was for one of this link's streams.

        ``task_ids`` is the ack's ``notifications.taskIds`` (``None``: the key was absent, so the
        server does not push task states).
        """
        stream = self._stream_for(subscription_id)
        if stream is None:
            return False
        if stream.acked is not None:
            return True
        if task_ids is None:
            self._refuse("the server acknowledged subscriptions/listen without taskIds (it does not push)")
            return True
        stream.acked = frozenset(task_ids) & stream.task_ids
        self._pushed_once = True
        self.ack_bound = _ack_bound(ACK_BOUND_FACTOR * (anyio.current_time() - stream.sent_at))
        stream.scope.deadline = math.inf
        if stream is self._pending:
            old, self._current, self._pending = self._current, stream, None
            if old is not None:
                old.scope.cancel()
            self._wake_all()
            self._relisten()  # tasks followed while this stream was opening get the next one
        return True

    def deliver(self, raw: object) -> None:
        """One ``notifications/tasks`` params object (malformed: ignored)."""
        self._statuses.deliver(raw)

    # --- streams -----------------------------------------------------------------------------

    def _wanted(self) -> frozenset[str]:
        return frozenset(itertools.islice(self._followed, MAX_PUSHED_TASKS))

    def _stream_for(self, subscription_id: object) -> _Stream | None:
        for stream in (self._pending, self._current):
            if stream is not None and subscription_id in stream.subscription_ids:
                return stream
        pending = self._pending
        if pending is not None and pending.sent and pending.acked is None and not pending.subscription_ids:
            # The SDK mints the request id; the first unclaimed ack is the pending stream's.
            pending.subscription_ids.add(subscription_id)
            return pending
        return None

    def _relisten(self) -> None:
        if self.refused is not None:
            return
        pending = self._pending
        if pending is not None:
            if not pending.sent and self._batch_delay() == 0:
                pending.go.set()  # enough tasks joined: open it now rather than at the window's end
            return
        wanted = self._wanted()
        current = self._live_current()
        if not wanted or (current is not None and current.task_ids >= wanted):
            return
        delay = self._batch_delay()
        stream = _Stream(f"push-{next(_stream_ids)}", anyio.CancelScope())
        self._pending = stream
        self._spawn(lambda: self._drive(stream, delay))

    def _live_current(self) -> _Stream | None:
        current = self._current
        return current if current is not None and not current.ended else None

    def _batch_delay(self) -> float:
        current = self._live_current()
        if current is None:
            return 0.0
        return batch_window(len(current.acked or ()), len(self._wanted() - current.task_ids))

    async def _drive(self, stream: _Stream, delay: float) -> None:
        why: str | None = None
        with stream.scope:
            if delay > 0:
                with anyio.move_on_after(delay):
                    await stream.go.wait()  # a batching window: the tasks followed meanwhile join
            stream.task_ids, stream.sent = self._wanted(), True
            stream.sent_at = anyio.current_time()
            stream.scope.deadline = stream.sent_at + self.ack_bound
            why = await _run_stream(self._open, stream)
        unanswered = stream.acked is None and not stream.ended
        timed_out = unanswered and why is None and stream.scope.cancelled_caught
        self._ended(stream, why)
        if timed_out:  # a late ack is not a refusal: asked again at once, with a longer bound
            logger.info("task push stream %s not acknowledged within %g s", stream.stream_id, self.ack_bound)
            self.ack_bound = _ack_bound(2 * self.ack_bound)
            self._relisten()

    def _ended(self, stream: _Stream, refusal: str | None) -> None:
        closed_here = stream.ended
        stream.ended = True
        if stream is self._pending:
            self._pending = None
            self._wake_all()  # its tasks are not on their way any more: their followers poll
        if stream is self._current:
            self._current = None
            self._wake_all()  # the followers poll at once, so nothing is missed meanwhile
            if not closed_here and self._reopens < MAX_REOPENS:
                self._reopens += 1
                self._relisten()  # the server did push: listen again (no replay; the snapshot follows)
        if refusal is not None:
            self._refuse(refusal)

    def _refuse(self, why: str) -> None:
        if self.refused is None:
            logger.info("task states are polled on this connection: %s", why)
            self.refused = why
        self._close_all()

    def _close_all(self) -> None:
        for stream in (self._pending, self._current):
            if stream is not None:
                stream.ended = True
                stream.scope.cancel()
        self._pending = self._current = None
        self._wake_all()

    def _wake_all(self) -> None:
        for wakers in list(self._wakers.values()):
            for wake in list(wakers):
                wake()


async def _run_stream(open_stream: OpenStream, stream: _Stream) -> str | None:
    """Run one listen request until it ends; why the server does not push, if it said so."""
    try:
        await open_stream(stream.stream_id, sorted(stream.task_ids))
    except RemoteError as error:
        if stream.acked is None:
            return f"subscriptions/listen was refused ({error.code}: {error.message})"
        logger.debug("task push stream %s ended: %s", stream.stream_id, error)
    except Exception as error:  # a dropped stream: the followers poll again
        logger.debug("task push stream %s dropped: %r", stream.stream_id, error)
    else:
        if stream.acked is None and not stream.ended:
            return "subscriptions/listen ended before it acknowledged"
    return None


def batch_window(covered: int, waiting: int) -> float:
    """How long a replacement waits for more tasks to join it: none when as many wait as are
    covered, else a window growing with the tasks covered (each is re-read by the replacement)."""
    if waiting >= max(1.0, REGROW_SHARE * covered):
        return 0.0
    return min(MAX_BATCH_SECONDS, max(BATCH_SECONDS, BATCH_SECONDS_PER_TASK * covered))


def _ack_bound(seconds: float) -> float:
    return min(MAX_ACK_TIMEOUT_SECONDS, max(ACK_TIMEOUT_SECONDS, seconds))


def _decode_pushed(raw: object, where: str) -> Task:
    return codec_2026.decode_task(raw, where=where)
