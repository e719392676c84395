"""What the engine reports of itself to OpenTelemetry: its runs as spans, its store's operations.

:func:`traced_run` and :func:`traced_inline` wrap a run's work in its span when a tracer
provider is set (else they return the work itself).

:func:`metrics_hook` is a hook on the engine's one store layer (:mod:`.stores.delegating`, beside
the health's, :mod:`.outage`) only when a meter provider is set as the engine is built, so an
engine without an SDK has nothing of this module between it and its store. The hook times every
operation, the workers' queue's included, and counts those that raise
(:class:`~..errors.TaskStoreError` and anything else; a compare-and-set conflict is an answer,
not an error), by store kind and operation.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

from .._observe import metering, metrics, traces, tracing
from ..core._model import utc_now
from .records import TaskRecord
from .stores import ActiveLimitReached, StoreConflict, TaskStore
from .stores.delegating import StoreOperation

__all__ = [
    "MetricsHook",
    "joined",
    "metrics_hook",
    "note_read",
    "store_kind",
    "traced_inline",
    "traced_run",
]

_Work = Callable[[], Awaitable[Mapping[str, Any]]]

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


def metrics_hook(store: TaskStore) -> MetricsHook | None:
    """The hook timing ``store``'s operations (:class:`MetricsHook`) when metering, else ``None``
    (nothing between the engine and its store for metrics)."""
    return MetricsHook(store_kind(store)) if metering() else None


class MetricsHook:
    """Times each operation of a store (``kind``: :func:`store_kind`) and its workers' queue, on
    the engine's one store layer (:mod:`.stores.delegating`), and counts those that raise."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def before(self, operation: StoreOperation) -> float:
        return time.perf_counter()

    def succeeded(self, operation: StoreOperation, mark: float) -> None:
        metrics.store_operation(self.kind, operation.name, time.perf_counter() - mark, failed=False)

    def raised(self, operation: StoreOperation, mark: float, exc: BaseException) -> None:
        """Timed too; counted as an error unless it is an answer (a lost compare-and-set, the
        per-owner limit) or a cancellation (nothing failed)."""
        failed = isinstance(exc, Exception) and not isinstance(exc, (StoreConflict, ActiveLimitReached))
        metrics.store_operation(self.kind, operation.name, time.perf_counter() - mark, failed=failed)


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
