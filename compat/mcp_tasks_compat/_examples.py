"""The example server's tools, written once for both SDK majors (this module imports no ``mcp``).

``mcp-tasks-compat example-server`` registers them on FastMCP (mcp 1.x) or MCPServer (mcp 2.x);
``mcp-tasks-compat demo`` runs them in-process. They double as a reference for tool authors: the
same body runs as a plain call or as a task, and :func:`report_status` is a no-op in a plain call.
``ask`` asks the client for input (:func:`elicit`) from inside the tool: as a task, the task goes
``input_required`` until the answer comes back.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import anyio

from .dialects import TaskSupport
from .server import elicit, report_status

__all__ = ["ANSWER_SCHEMA", "EXAMPLE_TASK_SUPPORT", "EXAMPLE_TOOLS", "ask", "fail", "must_task", "slow_echo"]

ANSWER_SCHEMA: Final[Mapping[str, Any]] = {
    "type": "object",
    "properties": {"answer": {"type": "string", "description": "your answer"}},
    "required": ["answer"],
}
"""The form :func:`ask` elicits: one string field, ``answer``."""


async def slow_echo(text: str, seconds: float = 1.0, steps: int = 4) -> str:
    """Echo ``text`` after ``seconds``, reporting a status message at each of ``steps`` steps."""
    steps = max(1, steps)
    for step in range(1, steps + 1):
        await anyio.sleep(max(0.0, seconds) / steps)
        await report_status(f"step {step}/{steps}")
    return text


async def fail(message: str) -> str:
    """Always raise, so the call ends with a tool error result carrying ``message``."""
    raise RuntimeError(message)


async def must_task(text: str) -> str:
    """Echo ``text``; declared task-required, so a plain call is refused."""
    await report_status("running as a task")
    return text


async def ask(question: str) -> str:
    """Ask the user ``question`` (a form with one string field, ``answer``) and return the answer."""
    await report_status("waiting for an answer")
    result = await elicit(question, ANSWER_SCHEMA)
    if result.action != "accept":
        raise RuntimeError(f"no answer: the user chose {result.action!r}")
    content: Mapping[str, Any] = result.content or {}
    answer = content.get("answer")
    if not isinstance(answer, str):
        raise RuntimeError("the answer is missing its 'answer' field")
    await report_status("answered")
    return answer


EXAMPLE_TOOLS: Final[Mapping[str, Callable[..., Awaitable[Any]]]] = {
    "slow_echo": slow_echo,
    "fail": fail,
    "must_task": must_task,
    "ask": ask,
}

EXAMPLE_TASK_SUPPORT: Final[Mapping[str, TaskSupport]] = {
    "slow_echo": "optional",
    "fail": "optional",
    "must_task": "required",
    "ask": "optional",
}
