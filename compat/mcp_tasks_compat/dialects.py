"""Dialect identifiers, used everywhere (API, JSON output, docs), and the literal types of a tool's
task settings (its task support, where its runs happen). Imports no ``mcp``."""

from __future__ import annotations

from typing import Final, Literal

__all__ = [
    "ALL_DIALECTS",
    "DIALECT_2025_11_25",
    "DIALECT_2026_07_28",
    "TASKS_EXTENSION_ID",
    "Dialect",
    "TaskSupport",
]

Dialect = Literal["2025-11-25", "2026-07-28"]
"""``"2025-11-25"``: experimental tasks (SEP-1686); ``"2026-07-28"``: the Tasks extension (SEP-2663).
Example: ``dialect: Dialect | None = (await negotiate(session)).dialect``."""

DIALECT_2025_11_25: Final = "2025-11-25"
"""The 2025-11-25 experimental tasks (SEP-1686): negotiated in ``initialize``, nested
``CreateTaskResult``, ``tasks/result``. Spoken on mcp 1.x and on 2.x handshake-era connections.
Example: ``negotiated.dialect == DIALECT_2025_11_25``."""

DIALECT_2026_07_28: Final = "2026-07-28"
"""The Tasks extension of protocol 2026-07-28 (SEP-2663): negotiated per request, flat
``resultType: "task"``, the result inline in ``tasks/get``. mcp 2.x only.
Example: ``TaskClientSession(read, write, dialect=DIALECT_2026_07_28)``."""

ALL_DIALECTS: Final[tuple[Dialect, ...]] = (DIALECT_2025_11_25, DIALECT_2026_07_28)
"""Both dialects, oldest first: what a 2.x ``TaskServer`` serves by default.
Example: ``for dialect in ALL_DIALECTS: ...`` (a test per dialect)."""

TASKS_EXTENSION_ID: Final = "io.modelcontextprotocol/tasks"
"""The Tasks extension's identifier, the key under ``capabilities.extensions`` (2026-07-28).
Example: ``TASKS_EXTENSION_ID in discover_result["capabilities"]["extensions"]``."""

TASK_AT_ONCE_META_KEY: Final = "io.github.mcp-tasks-compat/taskAtOnce"
"""A 2026-07-28 ``tools/call`` ``_meta`` hint (``true``) from this library's client when the caller
asked for a task (``mode="task"``, ``start_tool``): this library's server then answers with a task
even when the tool is done within the inline grace (an ask-first question is still a round before
it). Other servers ignore it (the server decides, SEP-2663)."""

TaskSupport = Literal["forbidden", "optional", "required"]
"""Per-tool task support; the 2025-11-25 ``execution.taskSupport`` values, used for both dialects.
Example: ``@app.tool(task="optional")``, or ``ServerTasks(tools={"deploy": "required"})``."""

RunOn = Literal["here", "workers"]
"""Where a task's runs happen: in the server process that took the call, or on the workers.
Example: ``@app.tool(task="required", run_on="workers")``."""
