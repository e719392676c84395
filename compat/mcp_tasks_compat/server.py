"""Task-capable tools on mcp 1.x and 2.x; one 2.x server serves both dialects.

Declare per-tool task support once, the same way on both majors::

    tasks = ServerTasks(tools={"build": "optional", "deploy": "required"})

then enable it on the server kind you have:

* mcp 1.x low-level ``Server`` or ``FastMCP``, mcp 2.x low-level ``Server``: ``tasks.install(server)``;
* mcp 2.x ``MCPServer`` (extensions are fixed at construction):
  ``MCPServer("name", **tasks.mcpserver_kwargs(lifespan=my_lifespan))``.

Inside a tool body, :func:`report_status` sets the task's status message and
:func:`current_task` tells whether the call runs as a task. In a plain call both are no-ops by
design, so one tool body serves both kinds of call.

This module imports no ``mcp``: the adapter for the installed major is imported on first use.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from . import _engine
from ._detect import refuse_unsupported, sdk_info
from ._engine import DEFAULT_TTL_FLOOR_MS, InMemoryTaskStore, PollPolicy, TaskEngine, TaskStore
from .core.model import Task
from .dialects import ALL_DIALECTS, Dialect, TaskSupport

__all__ = [
    "DEFAULT_TTL_FLOOR_MS",
    "InMemoryTaskStore",
    "PollPolicy",
    "ServerTasks",
    "TaskStore",
    "TaskSupport",
    "current_task",
    "report_status",
]

_SUPPORT_VALUES = ("forbidden", "optional", "required")


class ServerTasks:
    """Task support for one server: which tools may run as tasks, and how tasks are kept.

    ``tools`` maps tool names to ``"optional" | "required" | "forbidden"``; tools not listed get
    ``default_support``. ``ttl_floor_ms`` is the least TTL a task gets (default one hour),
    ``poll_policy`` the adaptive poll hint, ``store`` where tasks live (in memory by default).
    ``dialects`` limits which task dialects are served; ``None`` serves every dialect the
    installed SDK can, and naming one it cannot is refused here, at construction.
    """

    def __init__(
        self,
        *,
        tools: Mapping[str, TaskSupport] | None = None,
        default_support: TaskSupport = "forbidden",
        ttl_floor_ms: int = DEFAULT_TTL_FLOOR_MS,
        default_ttl_ms: int | None = None,
        poll_policy: PollPolicy | None = None,
        store: TaskStore | None = None,
        dialects: Iterable[Dialect] | None = None,
    ) -> None:
        declared: dict[str, TaskSupport] = dict(tools or {})
        bad: dict[str, str] = {name: v for name, v in declared.items() if v not in _SUPPORT_VALUES}
        if default_support not in _SUPPORT_VALUES:
            bad["default_support"] = default_support
        if bad:
            raise ValueError(f"task support must be one of {_SUPPORT_VALUES}; got {bad}")
        self.dialects: tuple[Dialect, ...] | None = None
        if dialects is not None:
            asked = tuple(dict.fromkeys(dialects))
            unknown = [d for d in asked if d not in ALL_DIALECTS]
            if unknown or not asked:
                raise ValueError(f"dialects must be a non-empty subset of {ALL_DIALECTS}; got {asked}")
            refuse_unsupported([f"dialect={d!r}" for d in asked], side="server")
            self.dialects = asked
        self.tools: dict[str, TaskSupport] = declared
        self.default_support: TaskSupport = default_support
        self.engine = TaskEngine(
            store=store, ttl_floor_ms=ttl_floor_ms, default_ttl_ms=default_ttl_ms, poll_policy=poll_policy
        )

    def support_for(self, tool_name: str) -> TaskSupport:
        return self.tools.get(tool_name, self.default_support)

    def install(self, server: Any) -> None:
        """Enable tasks on an already-built server (1.x ``Server``/``FastMCP``, 2.x low-level ``Server``).

        An already-built 2.x ``MCPServer`` is refused with the form to use instead.
        """
        if sdk_info().major == 1:
            from ._adapters import v1_server

            v1_server.install(self, server)
        else:
            from ._adapters import v2_server

            v2_server.install(self, server)

    def mcpserver_kwargs(self, **user_kwargs: Any) -> dict[str, Any]:
        """Keyword arguments for ``MCPServer(...)`` on mcp 2.x, composed with the user's own.

        Pass your own ``lifespan``, ``extensions`` and ``middleware`` here rather than to
        ``MCPServer`` directly; they are composed with ours. Refused on mcp 1.x.
        """
        refuse_unsupported(["MCPServer"], side="server")
        from ._adapters import v2_server

        return v2_server.mcpserver_kwargs(self, **user_kwargs)


async def report_status(message: str) -> None:
    """Set the running task's status message (rate-bounded). Does nothing in a plain call."""
    await _engine.report_status(message)


def current_task() -> Task | None:
    """The task this tool call runs as, or ``None`` for a plain call."""
    run = _engine.current_run()
    if run is None:
        return None
    _engine_of_run, record = run
    return record.task
