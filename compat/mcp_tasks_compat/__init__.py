"""Run long MCP tool calls as tasks on mcp 1.x and 2.x, in both task dialects.

Importing this package never imports ``mcp``, never raises and detects nothing: detection runs
on first use (:func:`sdk_info`, or the ``client`` / ``server`` entry points).
"""

from __future__ import annotations

from ._detect import SdkInfo, sdk_info
from ._version import __version__
from .dialects import (
    ALL_DIALECTS,
    DIALECT_2025_11_25,
    DIALECT_2026_07_28,
    TASKS_EXTENSION_ID,
    Dialect,
    TaskSupport,
)
from .errors import (
    ActiveLimitReached,
    CompatError,
    PeerProtocolError,
    ServerAuthError,
    ServerConnectionLostError,
    ServerUnreachableError,
    SessionOptionsError,
    SessionSetupError,
    StoreConflict,
    TaskCancelledError,
    TaskError,
    TaskExpiredError,
    TaskFailedError,
    TaskNotFoundError,
    TaskStateError,
    TaskStoreError,
    TaskTimeoutError,
    UnsupportedOptInError,
    UnsupportedSdkError,
)

__all__ = [
    "ALL_DIALECTS",
    "DIALECT_2025_11_25",
    "DIALECT_2026_07_28",
    "TASKS_EXTENSION_ID",
    "ActiveLimitReached",
    "CompatError",
    "Dialect",
    "PeerProtocolError",
    "SdkInfo",
    "ServerAuthError",
    "ServerConnectionLostError",
    "ServerUnreachableError",
    "SessionOptionsError",
    "SessionSetupError",
    "StoreConflict",
    "TaskCancelledError",
    "TaskError",
    "TaskExpiredError",
    "TaskFailedError",
    "TaskNotFoundError",
    "TaskStateError",
    "TaskStoreError",
    "TaskSupport",
    "TaskTimeoutError",
    "UnsupportedOptInError",
    "UnsupportedSdkError",
    "__version__",
    "sdk_info",
]
