"""Pushed 2026-07-28 task states: one ``subscriptions/listen`` stream per connection.

A :class:`PushLink` keeps one stream open, asking for ``notifications.taskIds`` of every task
the connection follows. A stream's filter is fixed when it is opened (SEP-2575 has no way to
amend it), so tasks followed later are covered by a replacement asking for the whole set; the old
stream is closed once the new one has acknowledged (make before break, so no change falls
between the two), and at most one replacement is on its way at a time. Replacements are
batched, never one per task: one opens at once when no stream is open or the tasks waiting for
one are at least a :data:`REGROW_SHARE` of those covered, else :data:`BATCH_SECONDS` after the
first of them (so a session creating tasks one after another pays a number of streams that
grows with the logarithm of its tasks, not with the tasks).

A task is *covered* while the current stream has acknowledged its id, and *pushed*
(:meth:`PushLink.pushes`) while it is covered or, once the server has shown it pushes (a stream
of this connection acknowledged), a stream asking for it is on its way: a follower
of a pushed task waits on an event (its wake-up) instead of polling, and still polls at the
slower safety pace :data:`~.protocols.SAFETY_POLL_SECONDS`, so a state the transport lost is seen within
seconds. It goes back to polling the moment its task is not pushed (the stream was refused,
dropped, or never acknowledged within :data:`ACK_TIMEOUT_SECONDS`), and polls once at once when
its task stops being covered. A dropped stream is opened again at once, at most
:data:`MAX_REOPENS` times per connection; a server that refuses, or acknowledges without
``taskIds`` (it does not push), is not asked again on this connection.

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
    "MAX_PUSHED_TASKS",
    "REGROW_SHARE",
    "OpenStream",
    "PushLink",
    "Spawn",
]

logger = logging.getLogger("mcp_tasks_compat.client")

ACK_TIMEOUT_SECONDS: Final = 2.0
"""How long a new stream may take to acknowledge before the connection stops asking for push."""
MAX_PUSHED_TASKS: Final = 256
"""Most task ids one stream asks for; tasks beyond them are polled."""
MAX_REOPENS: Final = 3
"""How often a dropped stream is opened again at once on one connection (later: at the next task)."""
BATCH_SECONDS: Final = 0.05
"""How long newly followed tasks may wait for a replacement stream while they are few next to
those covered (they are not polled meanwhile: their states come with its acknowledgement)."""
REGROW_SHARE: Final = 0.25
"""Waiting tasks that make a replacement open at once, as a share of the tasks covered."""

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
        if self.refused is not None or self._pending is not None:
            return
        wanted = self._wanted()
        current = self._current if self._current is not None and not self._current.ended else None
        if not wanted or (current is not None and current.task_ids >= wanted):
            return
        delay = 0.0
        if current is not None:
            waiting = len(wanted - current.task_ids)
            if waiting < max(1.0, REGROW_SHARE * len(current.acked or ())):
                delay = BATCH_SECONDS  # few next to those covered: let more join this replacement
        stream = _Stream(f"push-{next(_stream_ids)}", anyio.CancelScope())
        self._pending = stream
        self._spawn(lambda: self._drive(stream, delay))

    async def _drive(self, stream: _Stream, delay: float) -> None:
        why: str | None = None
        with stream.scope:
            if delay > 0:
                await anyio.sleep(delay)  # a batching window: the tasks followed meanwhile join
            stream.task_ids, stream.sent = self._wanted(), True
            stream.scope.deadline = anyio.current_time() + ACK_TIMEOUT_SECONDS
            try:
                await self._open(stream.stream_id, sorted(stream.task_ids))
            except RemoteError as error:
                if stream.acked is None:
                    why = f"subscriptions/listen was refused ({error.code}: {error.message})"
                else:
                    logger.debug("task push stream %s ended: %s", stream.stream_id, error)
            except Exception as error:  # a dropped stream: the followers poll again
                logger.debug("task push stream %s dropped: %r", stream.stream_id, error)
            else:
                if stream.acked is None and not stream.ended:
                    why = "subscriptions/listen ended before it acknowledged"
        if stream.scope.cancelled_caught and stream.acked is None and why is None and not stream.ended:
            why = f"subscriptions/listen was not acknowledged within {ACK_TIMEOUT_SECONDS:g} s"
        self._ended(stream, why)

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


def _decode_pushed(raw: object, where: str) -> Task:
    return codec_2026.decode_task(raw, where=where)
