"""The plain hand-off's part of ``tools/list`` on an mcp 2.x server, in both eras.

With ``plain_handoff_s`` on, a listing shows the task tools (also where the server did not
register them: ``ServerTasks.install`` on a low-level ``Server``, ``mcpserver_kwargs`` on an
``MCPServer``), and to a client that may be handed off (one that speaks no task dialect on this
request, :func:`.runtime.speaks_tasks`) no ``outputSchema`` of a tool that may hand off; what is
shown is decided by :func:`~.._server.task_tools.listed`. A ``Server.middleware`` entry
(the probed seam ``v2.server_middleware``) post-processes the listing, on every connection.
"""

from __future__ import annotations

import logging
from typing import Any, cast

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

from ..._detect import sdk_info
from ..._server.task_tools import listed
from .dialect_2025 import as_dict
from .runtime import TasksRuntime, speaks_tasks

__all__ = ["HandoffListing", "listing_middleware"]

logger = logging.getLogger("mcp_tasks_compat.server")


def listing_middleware(runtime: TasksRuntime) -> list[HandoffListing]:
    """The middleware to add: one entry with the hand-off on, none with it off."""
    if runtime.tasks.plain_handoff_s is None:
        return []
    if "v2.server_middleware" not in sdk_info().features:
        logger.info("the task tools are not listed: this mcp lacks the server middleware seam")
        return []
    return [HandoffListing(runtime)]


class HandoffListing:
    """The ``Server.middleware`` entry that shows a ``tools/list`` as the hand-off does."""

    def __init__(self, runtime: TasksRuntime) -> None:
        self._handoff = runtime.service_2026.handoff

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method != "tools/list" or ctx.request_id is None:
            return result
        wire = as_dict(result)
        tools = wire.get("tools")
        if not isinstance(tools, list):
            return result
        wire["tools"] = listed(self._handoff, cast(list[Any], tools), plain_client=not speaks_tasks(ctx))
        return wire
