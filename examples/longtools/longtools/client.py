"""The longtools client helper: one call, progress from either kind of call in one callback."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp_tasks_compat.client import Mode, call_tool, read_result
from mcp_tasks_compat.core._model import Task

__all__ = ["render_remote"]


async def render_remote(
    session: Any, frames: int, *, on_progress: Callable[[str], None] | None = None, mode: Mode = "auto"
) -> str:
    """Call ``render`` on a negotiated session; ``on_progress`` gets each progress message.

    In a task the messages come as status messages (``on_status``), in a plain call as
    ``notifications/progress`` (``on_progress``): the helper hands both to the same callback.
    """

    def status(task: Task) -> None:
        if on_progress is not None and task.status_message:
            on_progress(task.status_message)

    def progress(value: float, total: float | None, message: str | None) -> None:
        if on_progress is not None and message:
            on_progress(message)

    result = await call_tool(
        session, "render", {"frames": frames}, mode=mode, on_status=status, on_progress=progress
    )
    answer = read_result(result)  # the same on mcp 1.x (isError) and 2.x (is_error)
    if answer.is_error or not answer.text:
        raise RuntimeError(f"render failed: {answer.text or result!r}")
    return answer.text
