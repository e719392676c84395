"""A fastmcp 3 ``Client`` for pydantic-ai's ``MCPToolset`` on mcp 1.x, whose tool calls run as tasks::

    from mcp_tasks_compat.integrations.pydantic_ai import TaskClient

    toolset = MCPToolset(TaskClient(server, progress_handler=on_progress))

pydantic-ai 2.x's ``MCPToolset`` talks MCP through fastmcp's ``Client`` (fastmcp 3 on mcp 1.x,
fastmcp 4 on mcp 2.x) and takes a ready-made one. On mcp 1.x its own task path (fastmcp 3's
SEP-1686 ``call_tool(task=True)``) polls without reporting progress and leaves the task running
when the agent's call is cancelled. ``TaskClient`` takes fastmcp's ``Client`` arguments; its
session hears the server's pushed task statuses (the library's message handler, which then hands
every message to yours or to fastmcp's own), and every tool call goes through the library's task
path, as ``TaskClientSession.call_tool`` does: a task where the server offers one (statuses to
``progress_handler``, ``tasks/cancel`` when the caller is cancelled), a plain call otherwise. It
overrides two public methods of fastmcp's ``Client``: ``call_tool_mcp`` (the raw call, which
``call_tool`` uses) and ``call_tool(task=True)``, which then returns a finished task handle
holding the result. On mcp 2.x use ``TaskClientSession.extension()`` instead
(``Client(server, extensions=[TaskClientSession.extension()])``; docs/integrations.md).

The class is built on first use: importing this module imports neither fastmcp nor pydantic-ai, and
using ``TaskClient`` without fastmcp installed raises ``ImportError`` naming what to install (on
mcp 1.x fastmcp 3, ``'fastmcp>=3.3,<4'``: fastmcp 4 needs mcp 2.3 or later).
"""

from __future__ import annotations

import importlib
from datetime import timedelta
from functools import cache
from typing import TYPE_CHECKING, Any, Final

from .._detect import release_major, sdk_info
from ..errors import CompatError
from . import require_framework

__all__ = ["TaskClient"]


class FinishedToolTask:
    """What fastmcp's ``call_tool(task=True)`` returns, for a task the library already followed."""

    def __init__(self, result: Any) -> None:
        self._result = result

    async def result(self) -> Any:
        return self._result


FASTMCP_FOR_MCP_1 = "'fastmcp>=3.3,<4'"
"""fastmcp's 3 line from the first release pydantic-ai's ``MCPToolset`` takes (pydantic-ai-slim
2.68 asks ``fastmcp-slim>=3.3.0,<5``): every fastmcp 3 needs ``mcp>=1.24,<2``, fastmcp 4 ``mcp>=2.3``."""
FASTMCP_KEEPS: Final = frozenset({1})
"""The mcp majors a bare ``pip install fastmcp`` would replace (fastmcp 4 needs mcp 2.3 or later)."""


def installed_mcp() -> str | None:
    """The installed mcp's version, as detection reads it (``None``: none this library can use)."""
    try:
        return sdk_info().mcp_version
    except CompatError:
        return None


def fastmcp_install(mcp_version: str | None) -> tuple[str, str]:
    """What to ``pip install`` for fastmcp next to ``mcp_version``, and why, for the refusal.

    On mcp 1.x a bare ``pip install fastmcp`` takes fastmcp 4, which needs mcp 2.3 or later, so
    pip would replace mcp 1.x with 2.x: the fastmcp 3 line keeps it.
    """
    if mcp_version is not None and release_major(mcp_version) in FASTMCP_KEEPS:
        return FASTMCP_FOR_MCP_1, (
            f"fastmcp 3 needs mcp>=1.24,<2 and keeps the installed mcp {mcp_version} on 1.x; a bare "
            "`pip install fastmcp` takes fastmcp 4, which needs mcp>=2.3 and would replace mcp 1.x "
            "with 2.x"
        )
    return "fastmcp", ""


def fastmcp_message_handler(client: Any) -> Any:
    """The message handler fastmcp's ``Client`` makes when given none (fastmcp 3's
    ``TaskNotificationHandler``), or ``None`` where this fastmcp has none."""
    try:
        tasks_module = importlib.import_module("fastmcp.client.tasks")
    except ImportError:
        return None
    handler_class: Any = getattr(tasks_module, "TaskNotificationHandler", None)
    return None if handler_class is None else handler_class(client)


@cache
def task_client_class() -> type[Any]:
    """``TaskClient``, built once over fastmcp's own ``Client``."""
    from .._client_api import call_tool, task_message_handler

    install, why = fastmcp_install(installed_mcp())
    fastmcp = require_framework("fastmcp", "fastmcp", adapter=__name__, install=install, why=why)
    base: type[Any] = fastmcp.Client

    class TaskClient(base):  # type: ignore[misc, valid-type]
        """fastmcp's ``Client`` whose tool calls run as tasks where the server offers them."""

        def __init__(
            self, *args: Any, progress_handler: Any = None, message_handler: Any = None, **kwargs: Any
        ) -> None:
            # The session hears the server's pushed task statuses, then hands every message on to
            # the handler fastmcp would have used: without it the library polls for each status.
            chained = message_handler if message_handler is not None else fastmcp_message_handler(self)
            routed = task_message_handler(chained)
            framework_client: Any = super()
            framework_client.__init__(
                *args, progress_handler=progress_handler, message_handler=routed, **kwargs
            )
            self.task_progress_handler = progress_handler

        async def call_tool_mcp(
            self,
            name: str,
            arguments: dict[str, Any],
            progress_handler: Any = None,
            timeout: timedelta | float | None = None,
            meta: dict[str, Any] | None = None,
        ) -> Any:
            """The raw ``CallToolResult``, the tool run as a task where the server offers one
            (``timeout`` bounds it, and cancels the task when it passes)."""
            return await call_tool(
                self.session,
                name,
                arguments,
                on_progress=progress_handler or self.task_progress_handler,
                meta=meta or None,
                timeout=timeout,
            )

        async def call_tool(self, name: str, arguments: dict[str, Any] | None = None, **options: Any) -> Any:
            """fastmcp's ``call_tool``; ``task=True`` is followed here and returns a finished handle."""
            as_task = options.pop("task", False)
            options.pop("task_id", None)
            options.pop("ttl", None)
            framework_client: Any = super()
            result = await framework_client.call_tool(name, arguments, **options)
            return FinishedToolTask(result) if as_task else result

    TaskClient.__module__ = __name__
    return TaskClient


def __getattr__(name: str) -> Any:
    """``TaskClient`` is built on first use: it subclasses fastmcp's ``Client``."""
    if name == "TaskClient":
        return task_client_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if TYPE_CHECKING:
    TaskClient: type[Any]
    """fastmcp's ``Client`` whose tool calls run as tasks where the server offers them."""
