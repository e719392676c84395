"""What the engine keeps per task, and the errors work raises to end or refuse it.

A :class:`TaskRecord` is a task's persisted :class:`~.persisted.TaskState` (what every process
sharing the store sees) plus the live objects this process holds for it (cancel scope, change
event, status listeners, input relays). Records change only through a :class:`TaskWriter` (the
engine), so every status change passes the lifecycle table and is saved before anyone hears of it.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Any, Protocol

import anyio

from ..core.lifecycle import TaskEvent
from ..core.model import JsonRpcError, Task
from ..dialects import Dialect
from .persisted import TaskState

__all__ = [
    "InputRefused",
    "InputSender",
    "RunStop",
    "StateChange",
    "TaskRecord",
    "TaskWriter",
    "ToolCallFailure",
    "new_task_id",
]


def new_task_id() -> str:
    """256 bits from ``secrets``: unguessable, never reused. Never starting with ``-``, which a
    command line (``mcp-tasks-compat tasks show ID``, argparse) reads as an option, not an id."""
    while True:
        task_id = secrets.token_urlsafe(32)
        if not task_id.startswith("-"):
            return task_id


class ToolCallFailure(Exception):
    """Raised by work to end its task ``failed`` with a specific JSON-RPC error."""

    def __init__(self, error: JsonRpcError) -> None:
        self.error = error
        super().__init__(error.message)


class InputRefused(Exception):
    """Raised by a relay's ``send`` when the client answered an input request with a JSON-RPC error."""

    def __init__(self, error: JsonRpcError) -> None:
        self.error = error
        super().__init__(error.message)


class RunStop(Protocol):
    """What stops a run here: an anyio ``CancelScope``, or the run's own task handle (see
    :mod:`.runs`). ``cancel_called``: a stop was asked for (the run may still be unwinding)."""

    @property
    def cancel_called(self) -> bool: ...

    def cancel(self) -> None: ...


InputSender = Callable[[str, Mapping[str, Any]], Awaitable[Mapping[str, Any]]]
"""``send(key, request) -> answer``: one input request to the client and its result (wire JSON)."""


class TaskRecord:
    """A task as this process sees it: its latest :class:`TaskState` plus its live run, if any.

    The state is what the store holds (the same on every replica); the rest exists only here: the
    run's cancel scope (set only where the work runs), the change event waiters wait on, the
    status listeners of the sessions following it, and which input requests a stream of this
    process is relaying. One record per task per process, so all of them share one event.

    Slotted, and the event and containers are made on first use: a held task that nobody waits
    on, follows or relays for carries none of them (thousands of tasks are held at once).
    """

    __slots__ = ("_changed", "_input_claims", "_listeners", "last_notified", "scope", "state")

    def __init__(self, state: TaskState, scope: RunStop | None = None) -> None:
        self.state = state
        self.scope = scope
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


StateChange = Callable[[TaskState], "TaskState | None"]
"""A change to a task as a function of its current state (``None``: nothing to do).

Applied by :meth:`TaskWriter.mutate`, which runs it again on the state another process wrote
meanwhile, so a transition is always judged against the latest status."""


class TaskWriter(Protocol):
    """How the engine's collaborators (the input relay, the sweeper) read and change tasks.

    The engine implements it; the collaborators never change a record's state themselves, so every
    change is saved (compare-and-set), stamped, wakes the waiters and reaches the listeners in one
    place.
    """

    def now(self) -> datetime:
        """The engine's wall clock (deadlines and leases are on it)."""
        ...

    async def lookup(self, task_id: str, owner: str | None) -> TaskRecord: ...

    async def refresh(self, record: TaskRecord) -> None:
        """Re-read the record's state from the store (another process may have changed it)."""
        ...

    async def mutate(
        self,
        record: TaskRecord,
        change: StateChange,
        *,
        force_notify: bool,
        stop: RunStop | None = None,
        announce: bool = True,
    ) -> bool:
        """Apply ``change`` and save it; ``False`` when it had nothing to do or the task is gone."""
        ...

    def record_of(self, state: TaskState) -> TaskRecord:
        """This process's record for ``state`` (a fresh one if nothing of it lives here)."""
        ...

    def watch(self, record: TaskRecord) -> TaskRecord:
        """Register interest in a task's changes; returns the canonical record of this process."""
        ...

    def unwatch(self, record: TaskRecord) -> None: ...

    async def finish(
        self,
        record: TaskRecord,
        event: TaskEvent,
        *,
        result: Mapping[str, Any] | None = None,
        error: JsonRpcError | None = None,
        message: str | None = None,
        stop_work: bool = False,
    ) -> None: ...

    async def forget(self, task_id: str) -> None:
        """Delete the task from the store and this process."""
        ...

    async def set_status_message(self, task: TaskRecord | str, message: str) -> None:
        """Set a task's status message (rate-bounded notification)."""
        ...
