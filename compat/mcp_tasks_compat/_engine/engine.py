"""The task engine: creates a task, runs its work, applies the outcome, wakes waiters, cancels.

The engine is the only writer of a record's task (:class:`~.state.TaskWriter`); its input relay
(:attr:`TaskEngine.inputs`) and its sweeper (:attr:`TaskEngine.expiry`) change tasks through it.
"""

from __future__ import annotations

import contextvars
import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import anyio
import anyio.abc

from ..core.lifecycle import TaskEvent, next_status
from ..core.model import JsonRpcError, Task, TaskStatus, utc_now
from ..dialects import DIALECT_2025_11_25, Dialect
from ..errors import INTERNAL_ERROR, INVALID_PARAMS, PeerProtocolError, TaskStateError
from .expiry import Sweeper
from .inputs import InputRelay
from .state import TaskRecord, ToolCallFailure, new_task_id
from .store import InMemoryTaskStore, TaskStore

__all__ = ["DEFAULT_TTL_FLOOR_MS", "PollPolicy", "TaskEngine", "current_run", "report_status"]

logger = logging.getLogger("mcp_tasks_compat.engine")

DEFAULT_TTL_FLOOR_MS = 3_600_000
"""Real long runs need an hour; a client asking for less gets the floor."""

Work = Callable[[], Awaitable[Mapping[str, Any]]]


@dataclass(frozen=True)
class PollPolicy:
    """The adaptive ``pollInterval(Ms)`` hint: short while a task is young, longer later.

    hint = clamp(age * ratio, minimum_ms, maximum_ms).
    """

    minimum_ms: int = 100
    maximum_ms: int = 5_000
    ratio: float = 0.1

    def hint_ms(self, age_ms: float) -> int:
        return int(min(self.maximum_ms, max(self.minimum_ms, age_ms * self.ratio)))


_current: contextvars.ContextVar[tuple[TaskEngine, TaskRecord] | None] = contextvars.ContextVar(
    "mcp_tasks_compat_current_run", default=None
)


def current_run() -> tuple[TaskEngine, TaskRecord] | None:
    """The engine and record of the task whose work is running in this context, if any."""
    return _current.get()


async def report_status(message: str) -> bool:
    """Set the running task's status message; ``False`` (and nothing happens) outside a task."""
    run = current_run()
    if run is None:
        return False
    engine, record = run
    await engine.set_status_message(record.task.task_id, message)
    return True


def _ending_changes(
    status: TaskStatus,
    *,
    result: Mapping[str, Any] | None,
    error: JsonRpcError | None,
    message: str | None,
) -> dict[str, Any]:
    """What a terminal transition changes: the status, the outcome, and no input outstanding."""
    changes: dict[str, Any] = {"status": status, "input_requests": {}}
    if result is not None:
        changes["result"] = dict(result)
    if error is not None:
        changes["error"] = error
        changes["status_message"] = message or error.message
    elif message is not None:
        changes["status_message"] = message
    return changes


async def _tell_listeners(record: TaskRecord) -> None:
    """Give every status listener the task as it is now; a dead peer must not break the task."""
    snapshot = record.task
    for listener in list(record.listeners):
        try:
            await listener(snapshot)
        except Exception:
            logger.debug("task %s status listener failed", snapshot.task_id, exc_info=True)


class TaskEngine:
    """Creates, runs, reads, cancels and expires tasks for one server."""

    def __init__(
        self,
        *,
        store: TaskStore | None = None,
        ttl_floor_ms: int = DEFAULT_TTL_FLOOR_MS,
        default_ttl_ms: int | None = None,
        poll_policy: PollPolicy | None = None,
        status_interval_s: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if ttl_floor_ms < 0:
            raise ValueError("ttl_floor_ms must be >= 0")
        self.store: TaskStore = store if store is not None else InMemoryTaskStore()
        self.ttl_floor_ms = ttl_floor_ms
        self.default_ttl_ms = default_ttl_ms if default_ttl_ms is not None else ttl_floor_ms
        self.poll_policy = poll_policy or PollPolicy()
        self.status_interval_s = status_interval_s
        self._clock = clock
        self.inputs = InputRelay(self)
        self.expiry = Sweeper(self, self.store)

    def monotonic(self) -> float:
        return self._clock()

    def effective_ttl(self, requested_ms: int | None, *, requested: bool) -> int | None:
        """The TTL a task gets: the request's (floored), or the default; ``None`` stays unlimited."""
        if not requested:
            return self.default_ttl_ms
        if requested_ms is None:
            return None
        return max(requested_ms, self.ttl_floor_ms)

    async def create(
        self,
        *,
        dialect: Dialect,
        owner: str | None,
        tool_name: str,
        ttl_ms: int | None,
        status_message: str | None = None,
    ) -> TaskRecord:
        """Create a ``working`` task, readable before this returns."""
        now = utc_now()
        task = Task(
            task_id=new_task_id(),
            status=TaskStatus.WORKING,
            created_at=now,
            last_updated_at=now,
            ttl_ms=ttl_ms,
            poll_interval_ms=self.poll_policy.minimum_ms,
            status_message=status_message,
        )
        expires = self.expiry.deadline(ttl_ms)
        record = TaskRecord(task=task, dialect=dialect, owner=owner, tool_name=tool_name, expires_at=expires)
        await self.store.add(record)
        self.expiry.wake()
        return record

    def start(self, record: TaskRecord, work: Work, task_group: anyio.abc.TaskGroup) -> None:
        """Run ``work`` in ``task_group``; its outcome ends the task (unless already terminal)."""
        record.scope = anyio.CancelScope()
        task_group.start_soon(self._run, record, work, name=f"mcp-task {record.task.task_id[:8]}")

    async def _run(self, record: TaskRecord, work: Work) -> None:
        assert record.scope is not None
        token = _current.set((self, record))
        try:
            with record.scope:
                try:
                    result = await work()
                except ToolCallFailure as failure:
                    await self.finish(record, TaskEvent.FAIL, error=failure.error)
                    return
                except anyio.get_cancelled_exc_class():
                    raise
                except Exception as exc:  # any failure ends the task, never the session
                    logger.debug("task %s work raised", record.task.task_id, exc_info=True)
                    error = JsonRpcError(INTERNAL_ERROR, str(exc) or type(exc).__name__)
                    await self.finish(record, TaskEvent.FAIL, error=error)
                    return
                failed = record.dialect == DIALECT_2025_11_25 and result.get("isError") is True
                await self.finish(record, TaskEvent.FAIL if failed else TaskEvent.COMPLETE, result=result)
        finally:
            if not record.task.is_terminal:
                # Stopped from outside (the session or the server shutting down: the cancellation
                # comes from an enclosing scope, not from ``record.scope``), not by tasks/cancel.
                # The task must still end rather than stay "working" for its pollers.
                with anyio.CancelScope(shield=True):
                    await self.finish(record, TaskEvent.CANCEL, message="the server stopped this task")
            _current.reset(token)

    async def finish(
        self,
        record: TaskRecord,
        event: TaskEvent,
        *,
        result: Mapping[str, Any] | None = None,
        error: JsonRpcError | None = None,
        message: str | None = None,
        stop_work: bool = False,
    ) -> None:
        """Apply a terminal event; a task that is already terminal keeps its status (sticky).

        ``stop_work`` cancels the run's scope once the status is set and before anyone hears of
        it, so work waiting on the task (for input, say) is cancelled rather than woken to find
        its task ended.
        """
        if record.task.is_terminal:
            return
        status = next_status(record.task.status, event)
        changes = _ending_changes(status, result=result, error=error, message=message)
        await self.update(record, changes, force_notify=True, stop=record.scope if stop_work else None)

    async def update(
        self,
        record: TaskRecord,
        changes: dict[str, Any],
        *,
        force_notify: bool,
        stop: anyio.CancelScope | None = None,
    ) -> None:
        """Change the task (statuses come from the lifecycle), then wake waiters and tell listeners."""
        now = utc_now()
        age_ms = (now - record.task.created_at) / timedelta(milliseconds=1)
        changes.setdefault("poll_interval_ms", self.poll_policy.hint_ms(age_ms))
        record.task = record.task.evolve(last_updated_at=now, **changes)
        if stop is not None:
            stop.cancel()
        await self.expiry.retain_if_ended(record)
        record.wake_waiters()
        mono = self._clock()
        if force_notify or mono - record.last_notified >= self.status_interval_s:
            record.last_notified = mono
            await _tell_listeners(record)

    async def lookup(self, task_id: str, owner: str | None) -> TaskRecord:
        """The record, or ``PeerProtocolError`` -32602 (unknown, expired, or another principal's)."""
        record = await self.store.get(task_id)
        if record is None or (record.owner is not None and record.owner != owner):
            raise PeerProtocolError(f"Task not found: {task_id}", jsonrpc_code=INVALID_PARAMS)
        return record

    async def get(self, task_id: str, owner: str | None) -> Task:
        return (await self.lookup(task_id, owner)).task

    async def set_status_message(self, task_id: str, message: str) -> None:
        """Record a progress message (listeners hear it at most every ``status_interval_s``)."""
        record = await self.store.get(task_id)
        if record is None or record.task.is_terminal:
            return
        await self.update(record, {"status_message": message}, force_notify=False)

    async def cancel(
        self, task_id: str, owner: str | None, *, strict: bool, reason: str = "cancelled by the client"
    ) -> Task:
        """Cancel: the status becomes ``cancelled`` before this returns, then the work is stopped.

        ``strict`` (2025-11-25) raises -32602 for a terminal task; otherwise (2026-07-28) a
        terminal task is left alone and the call is an acknowledgement. ``reason`` becomes the
        status message (an adapter ending a session says so).
        """
        record = await self.lookup(task_id, owner)
        if record.task.is_terminal:
            if strict:
                try:
                    next_status(record.task.status, TaskEvent.CANCEL)
                except TaskStateError as exc:
                    raise PeerProtocolError(exc.message, jsonrpc_code=exc.jsonrpc_code) from None
            return record.task
        await self.finish(record, TaskEvent.CANCEL, message=reason, stop_work=True)
        return record.task

    async def wait_terminal(self, task_id: str, owner: str | None) -> Task:
        """Wait until the task is terminal (any number of concurrent waiters)."""
        record = await self.lookup(task_id, owner)
        while not record.task.is_terminal:
            await record.changed.wait()
        return record.task

    async def owned_by(self, owner: str | None) -> list[Task]:
        return [r.task for r in await self.store.owned_by(owner)]

    async def sweep(self) -> int:
        """One expiry sweep now (:meth:`.expiry.Sweeper.sweep`); the engine's sweeper runs it by itself."""
        return await self.expiry.sweep()

    @asynccontextmanager
    async def running(self) -> AsyncGenerator[anyio.abc.TaskGroup, None]:
        """A task group for runs plus the sweeper; leaving it cancels every run still going."""
        async with anyio.create_task_group() as group:
            group.start_soon(self.expiry.run, name="mcp-tasks sweeper")
            try:
                yield group
            finally:
                group.cancel_scope.cancel()
