"""The kit tests' helpers: tool sets they serve from subprocesses (importable as ``kit.toolsets``
under pytest), and what the kit must find on the installed major.

The kit tests check the kit's own answers about the installed SDK, so they need the expected
answers from elsewhere: the major is read here, once.
"""

from __future__ import annotations

from typing import Any

import anyio

from mcp_tasks_compat._adapters import get_adapter
from mcp_tasks_compat._engine import DEFAULT_INLINE_GRACE_S
from mcp_tasks_compat.server import current_call, report_status
from mcp_tasks_compat.testing import ToolSet

_MAJOR = get_adapter().major
EXPECTED_DIALECTS = {1: ("2025-11-25",), 2: ("2025-11-25", "2026-07-28")}[_MAJOR]
"""What ``dialects()`` must answer."""
NEWEST_DIALECT = EXPECTED_DIALECTS[-1]
"""What a kit session negotiates when no dialect is pinned."""
SERVER_CLASS = {1: "FastMCP", 2: "MCPServer"}[_MAJOR]
"""The class ``build_task_server`` builds."""


def text_of(result: Any) -> str:
    return "".join(block.text for block in result.content if getattr(block, "type", None) == "text")


async def shout(text: str) -> str:
    """Upper-case ``text``, saying whether it ran as a task."""
    await report_status("shouting")
    # Outlive the server's inline grace (2026-07-28): a call is not a task before it ends.
    await anyio.sleep(2 * DEFAULT_INLINE_GRACE_S)
    how = "task" if current_call().task is not None else "plain"
    return f"{text.upper()} ({how})"


async def whisper(text: str) -> str:
    return text.lower()


TOOLS = ToolSet(tools={"shout": shout, "whisper": whisper}, support={"shout": "required"}, name="kit-tests")


def make_tools() -> ToolSet:
    """A factory: ``load_toolset`` calls it."""
    return TOOLS


NOT_A_TOOLSET = {"shout": shout}
