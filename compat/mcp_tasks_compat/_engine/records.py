"""A task as this process sees it (:class:`TaskRecord`), and the records this process holds.

A task's state lives in the store (:class:`~.stores.TaskState`, the same on every replica); a
record is that state plus what exists only here: the run's stop handle, the change event waiters
wait on, the status listeners, the input requests a stream of this process relays. A record
exists in a process only while something of the task lives there (its run, a waiter, a relay),
so every waiter of the process shares one change event, and a newer state read from the store
(written by another replica) reaches all of them (:func:`adopt`).

A task that ended while held here is remembered for a moment after its record goes
(:meth:`LiveRecords.recently_ended`): the read that follows an end (``tasks/result``, the last
``tasks/get``) is then answered without asking the store, since an ended state never changes
again; the store could only say that it was deleted meanwhile, which the sweeper does at the
deadline (checked by the reader) and ``tasks purge`` at the operator's word.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, Protocol

import anyio

from .._observe import metrics
from .._observe.traces import RunSpan
from ..core._model import Task
from ..dialects import Dialect
from .stores import TaskState

__all__ = [
    "ENDED_KEPT",
    "ENDED_KEPT_S",
    "LiveRecords",
    "RunStop",
    "TaskRecord",
    "adopt",
    "new_task_id",
    "stop_lost_run",
]

logger = logging.getLogger("mcp_tasks_compat.engine")

ENDED_KEPT_S: Final = 1.0
"""How long an ended task is remembered after its record goes: the reads that follow its end come
within it; a ``tasks purge`` from elsewhere is seen here at the latest that long after."""

ENDED_KEPT: Final = 1024
"""The most ended tasks remembered at once (the oldest are forgotten first)."""


def new_task_id() -> str:
    """256 bits from ``secrets``: unguessable, never reused. Never starting with ``-``, which a
    command line (``mcp-tasks-compat tasks show ID``, argparse) reads as an option, not an id."""
    while True:
        task_id = secrets.token_urlsafe(32)
        if not task_id.startswith("-"):
            return task_id


class RunStop(Protocol):
    """What stops a run here: an anyio ``CancelScope``, or the run's own task handle (see
    :mod:`.runs`). ``cancel_called``: a stop was asked for (the run may still be unwinding)."""

    @property
    def cancel_called(self) -> bool: ...

    def cancel(self) -> None: ...


class TaskRecord:
    """A task as this process sees it: its latest :class:`TaskState` plus its live run, if any.

    The state is what the store holds (the same on every replica); the rest exists only here:
    ``scope``, what stops the run (a :class:`RunStop`, set only where the work runs), its
    ``run_span`` (only while tracing), the change
    event waiters wait on, the status listeners of the sessions following it, and which input
    requests a stream of this process is relaying. One record per task per process, so all of
    them share one event.

    Slotted, and the event and containers are made on first use: a held task that nobody waits
    on, follows or relays for carries none of them (thousands of tasks are held at once).
    """

    __slots__ = (
        "_changed",
        "_input_claims",
        "_listeners",
        "last_notified",
        "run_claim",
        "run_span",
        "scope",
        "state",
    )

    def __init__(self, state: TaskState, scope: RunStop | None = None) -> None:
        self.state = state
        self.scope = scope
        self.run_claim: int | None = None
        """The claim (fencing token) the run held here was started under; ``None``: no run here.
        The run's own writes carry it, and the store refuses them once a newer claim exists."""
        self.run_span: RunSpan | None = None
        """The span of the run held here while tracing (ended when the outcome is saved)."""
        self.last_notified = 0.0
        self._changed: anyio.Event | None = None
        self._listeners: list[Callable[[Task], Awaitable[None]]] | None = None
        self._input_claims: set[str] | None = None

    @property
    def changed(self) -> anyio.Event:
        """The event the next change sets (made when someone first waits)."""
        if self._changed is None:
            self._changed = anyio.Event()
        return self._changed

    @property
    def listeners(self) -> list[Callable[[Task], Awaitable[None]]]:
        """Status listeners of the sessions following the task (made on first use)."""
        if self._listeners is None:
            self._listeners = []
        return self._listeners

    async def tell_listeners(self) -> None:
        """Give every status listener the task as it is now; a dead peer must not break the task."""
        if not self._listeners:
            return
        snapshot = self.task
        for listener in list(self._listeners):
            try:
                await listener(snapshot)
            except Exception:
                logger.debug("task %s status listener failed", snapshot.task_id, exc_info=True)

    @property
    def input_claims(self) -> set[str]:
        """Keys a stream of this process is relaying to the client right now (2025-11-25)."""
        if self._input_claims is None:
            self._input_claims = set()
        return self._input_claims

    @property
    def task(self) -> Task:
        return self.state.task

    @property
    def owner(self) -> str | None:
        return self.state.owner

    @property
    def dialect(self) -> Dialect:
        return self.state.dialect

    @property
    def tool_name(self) -> str:
        return self.state.tool_name

    @property
    def input_responses(self) -> Mapping[str, Mapping[str, Any]]:
        """Answers to ``input_requests`` (by key) not yet picked up by the work that asked."""
        return self.state.input_responses

    @property
    def runs_here(self) -> bool:
        return self.scope is not None

    def wake_waiters(self) -> None:
        """Wake everyone waiting on ``changed``; the next wait gets a fresh event (never reused)."""
        event, self._changed = self._changed, None
        if event is not None:  # else nobody waits
            event.set()


def adopt(record: TaskRecord, state: TaskState) -> bool:
    """Take a newer state read from the store, and wake whoever waits on the old one; a run held
    here whose task ended elsewhere, or whose claim a newer one replaced, is stopped. Whether
    ``state`` was newer."""
    if state.version > record.state.version:
        record.state = state
        record.wake_waiters()
        if record.scope is None:
            return True
        if state.is_terminal:
            record.scope.cancel()  # ended elsewhere (cancelled on another replica): stop here
        elif record.run_claim is not None and state.claim != record.run_claim:
            stop_lost_run(record, state)
        return True
    return False


def stop_lost_run(record: TaskRecord, state: TaskState) -> None:
    """Stop the run held here: ``state`` (the stored one) shows a newer claim than the run's, as
    when this process was paused or cut off from the store past its lease and another replica ran
    the task again. Said once; the run writes nothing more (its writes are fenced)."""
    scope = record.scope
    if scope is None or scope.cancel_called:
        return
    logger.warning(
        "task %s: the run here (claim %s) lost its claim to %s (claim %d) after its lease ran out;"
        " stopped, and it writes nothing more",
        state.task_id,
        record.run_claim,
        state.runner or "another run",
        state.claim,
    )
    metrics.run_fenced(state.tool_name)
    scope.cancel()


class LiveRecords:
    """Task id -> the record of this process, with how many waiters hold it."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._records: dict[str, TaskRecord] = {}
        self._watchers: dict[str, int] = {}
        self._clock = clock
        self._ended: dict[str, tuple[float, TaskState]] = {}  # oldest first

    def get(self, task_id: str) -> TaskRecord | None:
        return self._records.get(task_id)

    def add(self, record: TaskRecord) -> None:
        self._records[record.task.task_id] = record

    def all(self) -> list[TaskRecord]:
        return list(self._records.values())

    def running(self) -> list[TaskRecord]:
        """The records whose work runs in this process."""
        return [record for record in self._records.values() if record.scope is not None]

    def record_of(self, state: TaskState) -> TaskRecord:
        """This process's record for ``state`` (a fresh one if nothing of it lives here).

        ``state`` was read from the store; if the task ended here and its record went while that
        read was out (the read answered with the state from before the end), the ended state is
        the one taken: a fresh record of the older state, watched, would wait on a change that
        already happened (this process skips its own saves' events)."""
        record = self._records.get(state.task_id)
        if record is None:
            ended = self.recently_ended(state.task_id)
            return TaskRecord(ended if ended is not None and ended.version > state.version else state)
        adopt(record, state)
        return record

    def recently_ended(self, task_id: str) -> TaskState | None:
        """The ended state of a task whose record went a moment ago (:data:`ENDED_KEPT_S`), else
        ``None`` (read the store)."""
        if not self._ended:
            return None
        self._prune(self._clock())
        kept = self._ended.get(task_id)
        return None if kept is None else kept[1]

    def _remember_ended(self, state: TaskState) -> None:
        now = self._clock()
        self._ended.pop(state.task_id, None)
        self._ended[state.task_id] = (now, state)
        self._prune(now)

    def _prune(self, now: float) -> None:
        """Forget, oldest first, what is too old or over :data:`ENDED_KEPT` (results can be big)."""
        ended = self._ended
        while ended:
            oldest_id, (at, _) = next(iter(ended.items()))
            if len(ended) <= ENDED_KEPT and now - at <= ENDED_KEPT_S:
                break
            del ended[oldest_id]

    def drop(self, task_id: str) -> None:
        """The task is gone from the store: forget it here, and wake its waiters to find out."""
        self._ended.pop(task_id, None)
        record = self._records.pop(task_id, None)
        if record is not None:
            record.wake_waiters()

    def watch(self, record: TaskRecord) -> TaskRecord:
        """Register interest in a task's changes; the canonical record of this process for it."""
        canonical = self._records.setdefault(record.task.task_id, record)
        self._watchers[record.task.task_id] = self._watchers.get(record.task.task_id, 0) + 1
        return canonical

    def unwatch(self, record: TaskRecord) -> None:
        task_id = record.task.task_id
        left = self._watchers.get(task_id, 0) - 1
        if left > 0:
            self._watchers[task_id] = left
            return
        self._watchers.pop(task_id, None)
        self.release_if_idle(record)

    def release_if_idle(self, record: TaskRecord) -> None:
        """Forget a record nothing here uses any more (no run, no waiter): the store has the task
        (an ended one is remembered for a moment: :meth:`recently_ended`)."""
        task_id = record.task.task_id
        if record.scope is None and not self._watchers.get(task_id) and self._records.get(task_id) is record:
            del self._records[task_id]
            if record.state.is_terminal:
                self._remember_ended(record.state)
