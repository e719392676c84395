"""The SDK-free core: task model, lifecycle machine and one wire codec per dialect.

Nothing under ``mcp_tasks_compat.core`` imports ``mcp``; a test imports it with ``mcp`` blocked.
"""

from __future__ import annotations

from .lifecycle import TRANSITIONS, TaskEvent, next_status
from .model import TERMINAL_STATUSES, UNLIMITED_TTL, JsonRpcError, Task, TaskStatus

__all__ = [
    "TERMINAL_STATUSES",
    "TRANSITIONS",
    "UNLIMITED_TTL",
    "JsonRpcError",
    "Task",
    "TaskEvent",
    "TaskStatus",
    "next_status",
]
