"""The SDK-free core: the task model and the lifecycle machine (public), one wire codec per dialect
(private: ``_codec_2025``, ``_codec_2026``).

Rules of this layer:

* Standard library only (plus ``errors`` and ``dialects``): no ``mcp``, no anyio, no I/O. A test
  imports it with ``mcp`` blocked, and Hypothesis tests it the same under every SDK version.
* The lifecycle is data (``_lifecycle.TRANSITIONS``): a move not in the table raises
  ``TaskStateError``; nothing else decides what a status may become.
* A codec is total: any JSON value decodes to the model or raises ``PeerProtocolError`` with the
  JSON-RPC code to answer; one codec per dialect, and neither knows the other.
"""

from __future__ import annotations

from ._model import TERMINAL_STATUSES, JsonRpcError, Progress, Task, TaskStatus

__all__ = [
    "TERMINAL_STATUSES",
    "JsonRpcError",
    "Progress",
    "Task",
    "TaskStatus",
]
