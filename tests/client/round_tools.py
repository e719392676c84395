"""Tools that ask first, then run (``elicit(..., before_task=True)``), for the multi-round-trip tests.

A kit tool set (this module imports no ``mcp``), so the same tools serve in memory, and from a
subprocess over stdio or streamable HTTP as ``tests.client.round_tools:TOOLS``.
"""

from __future__ import annotations

from typing import Any

from mcp_tasks_compat.server import elicit, report_status
from mcp_tasks_compat.testing import ToolSet

NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
CITY_SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def _said(answer: Any, field: str) -> str:
    return f"{answer.action}: {(answer.content or {}).get(field)}"


async def greet_first() -> str:
    """Ask a name before the task, then run as one (declared required)."""
    answer = await elicit("Your name?", NAME_SCHEMA, before_task=True)
    await report_status("greeting")
    return f"Hello, {_said(answer, 'name')}!"


async def greet_first_optional() -> str:
    """Ask a name first; done at once, so the call is answered plainly (declared optional)."""
    answer = await elicit("Your name?", NAME_SCHEMA, before_task=True)
    return f"Hi, {_said(answer, 'name')}!"


async def ask_twice() -> str:
    """Two questions, each a round of its own."""
    name = await elicit("Your name?", NAME_SCHEMA, before_task=True)
    city = await elicit("Your city?", CITY_SCHEMA, before_task=True)
    return f"{_said(name, 'name')} from {_said(city, 'city')}"


async def ask_forever() -> str:
    """A new question on every round: a server that never lets the call finish."""
    number = 0
    while True:
        number += 1
        await elicit(f"Question {number}?", NAME_SCHEMA, before_task=True)


TOOLS = ToolSet(
    tools={
        "greet_first": greet_first,
        "greet_first_optional": greet_first_optional,
        "ask_twice": ask_twice,
        "ask_forever": ask_forever,
    },
    support={
        "greet_first": "required",
        "greet_first_optional": "optional",
        "ask_twice": "optional",
        "ask_forever": "optional",
    },
)
