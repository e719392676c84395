"""Dialect identifiers, used everywhere (API, JSON output, docs). Imports no ``mcp``."""

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
"""``"2025-11-25"``: experimental tasks (SEP-1686); ``"2026-07-28"``: the Tasks extension (SEP-2663)."""

DIALECT_2025_11_25: Final = "2025-11-25"
DIALECT_2026_07_28: Final = "2026-07-28"
ALL_DIALECTS: Final[tuple[Dialect, ...]] = (DIALECT_2025_11_25, DIALECT_2026_07_28)

TASKS_EXTENSION_ID: Final = "io.modelcontextprotocol/tasks"

TaskSupport = Literal["forbidden", "optional", "required"]
"""Per-tool task support; the 2025-11-25 ``execution.taskSupport`` values, used for both dialects."""
