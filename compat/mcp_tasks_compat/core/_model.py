"""The canonical task model, shared by both dialects and both SDK majors.

Frozen dataclasses rather than pydantic models: they are compared, hashed and copied on the hot
path of every poll, and the codecs validate input themselves (so decoding is total).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from types import MappingProxyType
from typing import Any, Final, cast

__all__ = [
    "DEFAULT_TTL_MS",
    "PROGRESS_META_KEY",
    "TERMINAL_STATUSES",
    "UNLIMITED_TTL",
    "JsonRpcError",
    "Progress",
    "Task",
    "TaskStatus",
    "format_timestamp",
    "parse_timestamp",
    "utc_now",
]


class TaskStatus(str, enum.Enum):
    """The five statuses both dialects share (a ``str`` enum: ``task.status == "completed"`` works too).

    Example::

        task = await run.status()
        if task is not None and task.status is TaskStatus.INPUT_REQUIRED:
            print("waiting for an answer:", task.status_message)
        elif task is not None and task.status.is_terminal:  # completed, failed or cancelled
            result = await run.result()  # the result, or the Task*Error that says how it ended
    """

    WORKING = "working"
    INPUT_REQUIRED = "input_required"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def is_terminal(self) -> bool:
        return self in TERMINAL_STATUSES


TERMINAL_STATUSES: Final = frozenset({TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED})
"""The statuses a task never leaves. Example: ``if task.status in TERMINAL_STATUSES: ...``."""

UNLIMITED_TTL: Final = None
"""A ``ttl_ms`` of ``None`` means unlimited; both dialects write it as JSON ``null``."""

DEFAULT_TTL_MS: Final = 3_600_000
"""An hour, in milliseconds: a task built without a TTL has it, and it is what this library's
server grants by default and at least (the engine's ``DEFAULT_TTL_FLOOR_MS``): real long runs
need an hour. One constant, so the model and the server cannot disagree."""

_EMPTY: Final[Mapping[str, Any]] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class JsonRpcError:
    """A JSON-RPC error object: how a ``failed`` task ended.

    A task read with ``tasks/get`` carries it on 2026-07-28 (a 2025-11-25 task's error comes with
    its result: :class:`~mcp_tasks_compat.errors.TaskFailedError`). Example::

        task = await run.status()
        if task is not None and task.error is not None:
            print(task.error.code, task.error.message, task.error.data)
    """

    code: int
    message: str
    data: Any = None

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            wire["data"] = self.data
        return wire


PROGRESS_META_KEY: Final = "io.github.mcp-tasks-compat/progress"
"""The status's ``_meta`` key carrying a tool's own ``report_progress`` numbers (this library's)."""


@dataclass(frozen=True, slots=True)
class Progress:
    """A tool's own ``report_progress(progress, total)`` numbers, carried with the status it set.

    Neither dialect has progress for a task (2026-07-28 forbids ``notifications/progress`` on
    tasks), so this library's server puts them in the status's ``_meta`` under
    :data:`PROGRESS_META_KEY` and its client hands them to a progress callback as they were sent.

    Example::

        def on_status(task: Task) -> None:
            if task.progress is not None:  # the tool's report_progress(progress, total, message)
                print(f"{task.progress.progress}/{task.progress.total}: {task.status_message}")
    """

    progress: float
    total: float | None = None

    def to_meta(self) -> dict[str, Any]:
        value: dict[str, Any] = {"progress": self.progress}
        if self.total is not None:
            value["total"] = self.total
        return {PROGRESS_META_KEY: value}

    @classmethod
    def from_meta(cls, meta: object) -> Progress | None:
        """The numbers in a status's ``_meta``; ``None`` when absent or malformed (never raises:
        another server's ``_meta`` is its own business)."""
        if not isinstance(meta, Mapping):
            return None
        value = cast("Mapping[str, object]", meta).get(PROGRESS_META_KEY)
        if not isinstance(value, Mapping):
            return None
        fields = cast("Mapping[str, object]", value)
        progress, total = fields.get("progress"), fields.get("total")
        if not _is_number(progress) or not (total is None or _is_number(total)):
            return None
        return cls(float(progress), None if total is None else float(total))  # pyright: ignore[reportArgumentType]


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True, slots=True)
class Task:
    """One task as either dialect describes it.

    ``result`` is the original request's result as wire JSON (a ``CallToolResult`` dict), present
    once the task completed (and, in 2025-11-25, once a tool error made it ``failed``).
    ``input_requests`` maps request keys to ``{"method": ..., "params": ...}``. ``progress`` is
    the tool's own numbers for ``status_message`` (this library's ``_meta``; ``None`` otherwise).
    The client hands it to ``on_status`` and returns it from ``TaskRun.status()``. Example::

        async def on_status(task: Task) -> None:
            print(task.task_id, task.status.value, task.status_message)

        result = await call_tool(session, "build", {"target": "all"}, on_status=on_status)
    """

    task_id: str
    status: TaskStatus
    created_at: datetime
    last_updated_at: datetime
    ttl_ms: int | None = DEFAULT_TTL_MS
    poll_interval_ms: int | None = None
    status_message: str | None = None
    result: Mapping[str, Any] | None = None
    error: JsonRpcError | None = None
    input_requests: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: _EMPTY)
    progress: Progress | None = None

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES

    def expires_at(self) -> datetime | None:
        """When the TTL, counted from creation, runs out (``None``: never)."""
        if self.ttl_ms is None:
            return None
        from datetime import timedelta

        return self.created_at + timedelta(milliseconds=self.ttl_ms)

    def evolve(self, **changes: Any) -> Task:
        """A copy with ``changes`` applied (the model is immutable)."""
        return replace(self, **changes)


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def format_timestamp(value: datetime) -> str:
    """ISO 8601 in UTC with a ``Z`` suffix, microseconds kept so a round trip is exact."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    elif value.tzinfo is not timezone.utc:  # the engine's own times are UTC already: no conversion
        value = value.astimezone(timezone.utc)
    return value.isoformat().replace("+00:00", "Z")


def parse_timestamp(text: str) -> datetime:
    """Parse ISO 8601 (``Z`` or an offset; naive is taken as UTC). Raises ``ValueError``."""
    candidate = text.strip()
    if candidate.endswith(("Z", "z")):
        candidate = candidate[:-1] + "+00:00"
    parsed = datetime.fromisoformat(candidate)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed.astimezone(timezone.utc)
