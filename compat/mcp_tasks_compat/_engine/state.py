"""What the engine keeps per task, and the errors work raises to end or refuse it.

A :class:`TaskRecord` is the canonical :class:`~..core.model.Task` plus what only the server
knows (owner, dialect, tool, deadline) and the live objects of its run (cancel scope, change
event, status listeners, input bookkeeping). Records change only through a :class:`TaskWriter`
(the engine), so every status change passes the lifecycle table.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio

from ..core.lifecycle import TaskEvent
from ..core.model import JsonRpcError, Task
from ..dialects import Dialect

__all__ = [
    "InputRefused",
    "InputSender",
    "TaskRecord",
    "TaskWriter",
    "ToolCallFailure",
    "new_task_id",
]


def new_task_id() -> str:
    """256 bits from ``secrets``: unguessable, never reused."""
    return secrets.token_urlsafe(32)


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


InputSender = Callable[[str, Mapping[str, Any]], Awaitable[Mapping[str, Any]]]
"""``send(key, request) -> answer``: one input request to the client and its result (wire JSON)."""


@dataclass
class TaskRecord:
    """A task plus what only the server knows: owner, dialect, tool, run state, waiters."""

    task: Task
    dialect: Dialect
    owner: str | None
    tool_name: str
    expires_at: float = math.inf  # monotonic deadline; inf = unlimited
    scope: anyio.CancelScope | None = None
    changed: anyio.Event = field(default_factory=anyio.Event)
    listeners: list[Callable[[Task], Awaitable[None]]] = field(
        default_factory=lambda: list[Callable[[Task], Awaitable[None]]]()
    )
    last_notified: float = 0.0
    input_responses: dict[str, Mapping[str, Any]] = field(
        default_factory=lambda: dict[str, Mapping[str, Any]]()
    )
    """Answers to ``input_requests`` (by key) not yet picked up by the work that asked."""
    input_serial: int = 0
    """How many input requests this task has made: keys carry it, so none is ever reused."""
    input_claims: set[str] = field(default_factory=lambda: set[str]())
    """Keys an adapter is relaying to the client right now (2025-11-25), so no other relays them."""

    def wake_waiters(self) -> None:
        """Wake everyone waiting on ``changed``; the next wait gets a fresh event (never reused)."""
        event, self.changed = self.changed, anyio.Event()
        event.set()


class TaskWriter(Protocol):
    """How the engine's collaborators (the input relay, the sweeper) read and change tasks.

    The engine implements it; the collaborators never change ``record.task`` themselves, so every
    change is stamped, wakes the waiters and reaches the listeners in one place.
    """

    def monotonic(self) -> float:
        """The engine's clock (deadlines are on it)."""
        ...

    async def lookup(self, task_id: str, owner: str | None) -> TaskRecord: ...

    async def update(
        self,
        record: TaskRecord,
        changes: dict[str, Any],
        *,
        force_notify: bool,
        stop: anyio.CancelScope | None = None,
    ) -> None: ...

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
