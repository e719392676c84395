"""The SDK-free core: task model, lifecycle machine and one wire codec per dialect.

Rules of this layer:

* Standard library only (plus ``errors`` and ``dialects``): no ``mcp``, no anyio, no I/O. A test
  imports it with ``mcp`` blocked, and Hypothesis tests it the same under every SDK version.
* The lifecycle is data (``lifecycle.TRANSITIONS``): a move not in the table raises
  ``TaskStateError``; nothing else decides what a status may become.
* A codec is total: any JSON value decodes to the model or raises ``PeerProtocolError`` with the
  JSON-RPC code to answer; one codec per dialect, and neither knows the other.
"""

from __future__ import annotations

from .lifecycle import TRANSITIONS, TaskEvent, next_status
from .model import DEFAULT_TTL_MS, TERMINAL_STATUSES, UNLIMITED_TTL, JsonRpcError, Task, TaskStatus

__all__ = [
    "DEFAULT_TTL_MS",
    "TERMINAL_STATUSES",
    "TRANSITIONS",
    "UNLIMITED_TTL",
    "JsonRpcError",
    "Task",
    "TaskEvent",
    "TaskStatus",
    "next_status",
]
