"""Whether a call runs as a task: the ``auto`` / ``task`` / ``plain`` plan and its refusals.

Everything here is decided before anything is sent, so a refused opt-in never leaves a
half-made task on the server.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Final

from ..core import _codec_2025 as codec_2025
from ..dialects import DIALECT_2026_07_28, TaskSupport
from ..errors import UnsupportedOptIn, UnsupportedOptInError
from .protocols import ClientConnection

__all__ = ["DeclaredSupport", "check_ready", "declared_support", "plan_call", "refuse"]

logger = logging.getLogger("mcp_tasks_compat.client")

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
    problem = connection.task_readiness()
    if problem is not None:
        if mode == "task":
            raise UnsupportedOptInError([problem], installed=connection.installed)
        # e.g. a 2.x session built without session_kwargs() (a bare ClientSession, or the one
        # mcp.Client builds): it cannot follow a task, so auto runs the call plainly, as 1.x does.
        logger.info("tool %r runs as a plain call: %s (fix: %s)", name, problem.asked, problem.fix)
        return False
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


def declared_support(tools: Iterable[Mapping[str, Any]]) -> dict[str, TaskSupport]:
    """Each listed tool's 2025-11-25 ``execution.taskSupport`` (``tools/list`` entries as wire JSON)."""
    return {str(tool.get("name")): codec_2025.decode_tool_task_support(tool) for tool in tools}


class DeclaredSupport:
    """What a 2025-11-25 server declared per tool, listed again only when a tool was not seen yet.

    A tool registered after the connection opened is then found without listing on every call.
    """

    def __init__(
        self,
        known: Mapping[str, TaskSupport] | None,
        list_tools: Callable[[], Awaitable[list[dict[str, Any]]]],
    ) -> None:
        self._known: dict[str, TaskSupport] = dict(known or {})
        self._list_tools = list_tools

    async def of(self, name: str) -> TaskSupport:
        if name not in self._known:
            self._known.update(declared_support(await self._list_tools()))
        return self._known.get(name, "forbidden")
