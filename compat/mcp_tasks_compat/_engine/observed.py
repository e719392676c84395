"""What the engine reports of itself to OpenTelemetry: its runs as spans, its store's operations.

:func:`traced_run` and :func:`traced_inline` wrap a run's work in its span when a tracer
provider is set (else they return the work itself).

:func:`observed` wraps a store only when a meter provider is set as the engine is built, so an
engine without an SDK calls its store directly (nothing of this module between; a shared store
is watched for its health, :mod:`.outage`). The wrapper times every
operation and counts those that raise (:class:`~..errors.TaskStoreError` and anything else;
a compare-and-set conflict is an answer, not an error), by store kind and operation, and is
otherwise the store itself.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Any, Final, TypeVar

from .._observe import metering, metrics, traces, tracing
from ..core._model import utc_now
from .records import TaskRecord
from .stores import EVERY_OWNER, ActiveLimitReached, Notifier, StoreConflict, TaskState, TaskStore
from .stores.contract import EveryOwner

__all__ = ["ObservedStore", "joined", "note_read", "observed", "store_kind", "traced_inline", "traced_run"]

_Work = Callable[[], Awaitable[Mapping[str, Any]]]

T = TypeVar("T")

_KINDS: Final = {"InMemoryTaskStore": "memory", "SqliteTaskStore": "sqlite", "RedisTaskStore": "redis"}


def traced_run(record: TaskRecord, work: _Work) -> _Work:
    """``work`` run inside its task's run span (a child of the trace that created the task, kept
    with the task: the same on a re-run or another replica); ``work`` itself when not tracing.

    The span ends when the outcome is saved (:mod:`.writer`), or here when the task was ended
    meanwhile by someone else (a cancel through another replica, read back from the store).
    """
    if not tracing():
        return work

    async def run() -> Mapping[str, Any]:
        state = record.state
        span = traces.start_run(
            state.tool_name, state.dialect, state.task_id, state.trace_context, attempt=state.attempt
        )
        if span is None:
            return await work()
        record.run_span = span
        try:
            with span.current():
                return await work()
        finally:
            _end_if_ended_elsewhere(record, span)

    return run


def traced_inline(
    work: _Work, *, tool_name: str, dialect: str, record_of: Callable[[], TaskRecord | None]
) -> _Work:
    """``work`` of a call not yet known to be a task (the inline grace), in a run span made now, a
    child of the request's; ``record_of()``: the task it became, if it did, which then owns the span."""
    if not tracing():
        return work

    async def run() -> Mapping[str, Any]:
        span = traces.start_run(tool_name, dialect, "", None)
        if span is None:
            return await work()
        try:
            with span.current():
                return await work()
        finally:
            record = record_of()
            if record is None:
                span.end("answered", None)  # answered plainly: no task
            elif record.task.is_terminal:
                _end_if_ended_elsewhere(record, span)
            else:
                span.task(record.task.task_id)
                record.run_span = span  # the saved outcome ends it

    return run


def _end_if_ended_elsewhere(record: TaskRecord, span: traces.RunSpan) -> None:
    task = record.task
    if task.is_terminal and record.run_span in (span, None):
        record.run_span = None
        span.status(task.status.value, task.status_message)
        span.end(task.status.value, None)


def store_kind(store: TaskStore) -> str:
    """``memory``, ``sqlite``, ``redis``, or the class name of another store (bounded: one per class)."""
    name = type(store).__name__
    return _KINDS.get(name, name)


def observed(store: TaskStore) -> TaskStore:
    """``store`` timed when metering, else ``store`` itself."""
    if not metering() or isinstance(store, ObservedStore):
        return store
    return ObservedStore(store)


class ObservedStore:
    """A :class:`TaskStore` that times each operation of the one it wraps."""

    def __init__(self, inner: TaskStore) -> None:
        self.inner = inner
        self.kind = store_kind(inner)

    async def _timed(self, operation: str, call: Callable[[], Awaitable[T]]) -> T:
        started = time.perf_counter()
        failed = False
        try:
            return await call()
        except (StoreConflict, ActiveLimitReached):  # answers, not store failures
            raise
        except Exception:
            failed = True
            raise
        finally:
            metrics.store_operation(self.kind, operation, time.perf_counter() - started, failed=failed)

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
        await self._timed("open", self.inner.open)

    async def close(self) -> None:
        await self.inner.close()

    async def create(self, state: TaskState, *, active_limit: int | None = None) -> None:
        await self._timed("create", lambda: self.inner.create(state, active_limit=active_limit))

    async def get(self, task_id: str) -> TaskState | None:
        return await self._timed("get", lambda: self.inner.get(task_id))

    async def save(self, state: TaskState, *, fence: int | None = None) -> TaskState:
        return await self._timed("save", lambda: self.inner.save(state, fence=fence))

    async def delete(self, task_id: str) -> None:
        await self._timed("delete", lambda: self.inner.delete(task_id))

    async def count_active(self, owner: str | None, *, at_most: int) -> int:
        return await self._timed("count_active", lambda: self.inner.count_active(owner, at_most=at_most))

    async def due_for_expiry(self, now: datetime, *, limit: int = 100) -> list[TaskState]:
        return await self._timed("due_for_expiry", lambda: self.inner.due_for_expiry(now, limit=limit))

    async def next_expiry(self) -> datetime | None:
        return await self._timed("next_expiry", self.inner.next_expiry)

    async def lease_expired(self, now: datetime, *, limit: int = 100) -> list[TaskState]:
        return await self._timed("lease_expired", lambda: self.inner.lease_expired(now, limit=limit))

    async def list_tasks(
        self, *, owner: str | EveryOwner | None = EVERY_OWNER, cursor: str | None = None, limit: int = 100
    ) -> tuple[list[TaskState], str | None]:
        return await self._timed(
            "list_tasks", lambda: self.inner.list_tasks(owner=owner, cursor=cursor, limit=limit)
        )

    def __getattr__(self, name: str) -> object:
        """Anything else a store has (a test's or a tool's look inside) is the wrapped store's."""
        return getattr(self.inner, name)


def joined(record: TaskRecord, method: str) -> traces.CallSpan | traces.NoSpan:
    """A span in ``record``'s own trace for ``method`` done to it here (``tasks/update``, say),
    linked to the request's span: whichever replica serves it."""
    state = record.state
    return traces.joined_span(
        method, state.trace_context, task_id=state.task_id, tool=state.tool_name, dialect=state.dialect
    )


def note_read(record: TaskRecord, *, poll: bool) -> None:
    """A read answered to a client: a poll (``tasks/get``) counted, and an ended task's result
    delivered measured from the end of its run (each delivery counts)."""
    if not metering():
        return
    state = record.state
    if poll:
        metrics.polled(state.tool_name, state.dialect)
    if state.is_terminal:
        seconds = (utc_now() - state.task.last_updated_at).total_seconds()
        metrics.result_delivered(state.tool_name, state.dialect, seconds)
