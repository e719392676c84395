"""Whether a call runs as a task: the ``auto`` / ``task`` / ``plain`` plan and its refusals.

Everything here is decided before anything is sent, so a refused opt-in never leaves a
half-made task on the server.
"""

from __future__ import annotations

from typing import Any, Final

from ..dialects import DIALECT_2026_07_28, TaskSupport
from ..errors import UnsupportedOptIn, UnsupportedOptInError
from .protocols import ClientConnection

__all__ = ["check_ready", "plan_call", "refuse"]

_TASKY: Final[frozenset[TaskSupport]] = frozenset({"optional", "required"})


def refuse(
    connection: ClientConnection[Any], asked: str, supported_by: str, fix: str
) -> UnsupportedOptInError:
    return UnsupportedOptInError(
        [UnsupportedOptIn(asked=asked, supported_by=supported_by, fix=fix)], installed=connection.installed
    )


def check_ready(connection: ClientConnection[Any]) -> None:
    problem = connection.task_readiness()
    if problem is not None:
        raise UnsupportedOptInError([problem], installed=connection.installed)


async def plan_call(connection: ClientConnection[Any], name: str, mode: str) -> bool:
    """Whether this call goes out as a task; refusals are raised here, before anything is sent."""
    if mode not in ("auto", "task", "plain"):
        raise ValueError(f"mode must be 'auto', 'task' or 'plain', not {mode!r}")
    negotiated = connection.negotiated
    if mode == "plain":
        return False
    if negotiated.dialect is None:
        if mode == "task":
            raise refuse(
                connection,
                f"mode='task' for tool {name!r}",
                f"a connection whose server offers tasks ({negotiated.reason or 'this one does not'})",
                "use mode='auto' (runs it as a plain call here) or connect to a task-capable server",
            )
        return False
    check_ready(connection)
    if negotiated.dialect == DIALECT_2026_07_28:
        return True
    support = await connection.tool_support(name)
    if support in _TASKY:
        return True
    if mode == "task":
        raise refuse(
            connection,
            f"mode='task' for tool {name!r}",
            "a tool whose tools/list entry declares execution.taskSupport 'optional' or 'required' "
            f"(the server declares {support!r})",
            "use mode='auto' or mode='plain' for this tool",
        )
    return False
