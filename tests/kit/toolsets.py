"""Tool sets the kit tests serve from subprocesses (importable as ``kit.toolsets`` under pytest)."""

from __future__ import annotations

from mcp_tasks_compat.server import current_task, report_status
from mcp_tasks_compat.testing import ToolSet


async def shout(text: str) -> str:
    """Upper-case ``text``, saying whether it ran as a task."""
    await report_status("shouting")
    how = "task" if current_task() is not None else "plain"
    return f"{text.upper()} ({how})"


async def whisper(text: str) -> str:
    return text.lower()


TOOLS = ToolSet(tools={"shout": shout, "whisper": whisper}, support={"shout": "required"}, name="kit-tests")


def make_tools() -> ToolSet:
    """A factory: ``load_toolset`` calls it."""
    return TOOLS


NOT_A_TOOLSET = {"shout": shout}
