"""How a task's end, or a ``tasks/*`` error answer, becomes one of the ``Task*Error`` family."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core._model import Task
from ..dialects import DIALECT_2025_11_25, Dialect
from ..errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    CompatError,
    PeerProtocolError,
    TaskCancelledError,
    TaskExpiredError,
    TaskFailedError,
    TaskNotFoundError,
)
from .auth import sent_credentials
from .protocols import RemoteError

__all__ = [
    "SESSION_SCOPED_2025",
    "cancelled_error",
    "error_from_remote",
    "expired_error",
    "failed_error",
    "is_tool_result",
    "lookup_error",
]


def expired_error(task_id: str, ttl_ms: int | None) -> TaskExpiredError:
    return TaskExpiredError(
        f"task {task_id} outlived its TTL ({ttl_ms} ms from creation) before a terminal status was seen; "
        "the server may already have discarded it",
        task_id=task_id,
    )


SESSION_SCOPED_2025 = (
    "; a 2025-11-25 server keeps an unauthenticated task to the session that created it (servers "
    "built on mcp 1.27.2 or later; mcp-tasks-compat servers unless they set "
    "unauthenticated_2025_scope='task_id'; an authenticated task is its principal's in any session: "
    "https://github.com/mcp-tasks-compat/mcp-tasks-compat/blob/main/docs/deploy.md), so it can only "
    "be read from that session, not from another session or after reconnecting"
)
"""Why a 2025-11-25 task resumed from another session is unknown there: the owner rule of both
kinds of server that may have said so, and what would let it through."""


AUTHENTICATED_UNKNOWN = (
    "; it may have expired, the server may have restarted without a shared store, or it belongs to "
    "another principal (a task is readable only with the credentials that created it)"
)
"""Why a task is unknown to a session that sent credentials: the session rule does not apply."""


def lookup_error(
    error: RemoteError, task_id: str, dialect: Dialect, *, method: str, resumed: bool
) -> CompatError:
    """Map a ``tasks/*`` error answer to the library's errors."""
    if error.code == INVALID_PARAMS:
        message = f"task {task_id} is unknown to the server ({method}: {error.message})"
        if sent_credentials():  # an authenticated task is its principal's, in any session
            message += AUTHENTICATED_UNKNOWN
        elif dialect == DIALECT_2025_11_25:
            message += (
                SESSION_SCOPED_2025 if resumed else "; it may have expired or the server may have restarted"
            )
        return TaskNotFoundError(message, task_id=task_id)
    return PeerProtocolError(
        f"{method} for task {task_id} failed: {error.message} (code {error.code})",
        jsonrpc_code=error.code,
        data=error.data,
    )


def failed_error(task: Task) -> TaskFailedError:
    if task.error is not None:
        return TaskFailedError(
            task_id=task.task_id,
            error_code=task.error.code,
            error_message=task.error.message,
            error_data=task.error.data,
        )
    return TaskFailedError(
        task_id=task.task_id,
        error_code=INTERNAL_ERROR,
        error_message=task.status_message or "the task failed",
    )


def error_from_remote(task_id: str, error: RemoteError) -> TaskFailedError:
    """2025-11-25: ``tasks/result`` of a task that failed answers the task's own JSON-RPC error."""
    return TaskFailedError(
        task_id=task_id, error_code=error.code, error_message=error.message, error_data=error.data
    )


def cancelled_error(task: Task) -> TaskCancelledError:
    detail = f": {task.status_message}" if task.status_message else ""
    return TaskCancelledError(f"task {task.task_id} was cancelled{detail}", task_id=task.task_id)


def is_tool_result(payload: Mapping[str, Any]) -> bool:
    return isinstance(payload.get("content"), list)
