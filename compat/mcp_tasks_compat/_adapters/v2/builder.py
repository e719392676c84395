"""mcp 2.x builder facet: the ``MCPServer`` behind ``TaskServer``, and a tool body's own request.

``MCPServer`` is built with :func:`.server.mcpserver_kwargs` (its extensions are fixed at
construction), so one server serves both task dialects; its own ``tool`` decorator registers the
tools. Progress and log messages of a plain call go on the current ``tools/call`` (the request
:func:`.runtime.with_request` recorded), the way ``Context.report_progress`` / ``Context.log`` send
them, so a tool body needs no 2.x ``Context``.

``Context`` and ``ToolError`` are ``MCPServer``'s own, re-exported by :mod:`mcp_tasks_compat.server`
so a server written once imports them from one place.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from .progress import send_progress
from .runtime import current_request, tool_runner
from .server import mcpserver_kwargs

if TYPE_CHECKING:
    from ..._engine.policy import TaskPolicy

__all__ = [
    "Context",
    "ToolError",
    "add_tool",
    "new_server",
    "request_lifespan_context",
    "run",
    "send_log",
    "send_progress",
    "tool_runner",
]

_LISTEN = "_mcp_tasks_compat_listen"
"""Where a ``host``/``port`` given at construction waits for :func:`run` (``MCPServer`` takes them there)."""


def new_server(name: str, policy: TaskPolicy, sdk_kwargs: Mapping[str, Any]) -> MCPServer:
    """``MCPServer(name, **mcpserver_kwargs(**sdk_kwargs))``: the user's lifespan, extensions and
    middleware composed with ours.

    ``host`` and ``port`` (``FastMCP`` takes them at construction, ``MCPServer`` at ``run``) are
    kept for :func:`run`, so both keywords mean the same on both majors.
    """
    kwargs = dict(sdk_kwargs)
    listen = {key: kwargs.pop(key) for key in ("host", "port") if key in kwargs}
    kwargs.setdefault("log_level", "WARNING")
    server = MCPServer(name, **mcpserver_kwargs(policy, **kwargs))
    setattr(server, _LISTEN, listen)
    return server


def add_tool(server: Any, function: Callable[..., Any], sdk_tool_kwargs: Mapping[str, Any]) -> str:
    cast("MCPServer", server).tool(**dict(sdk_tool_kwargs))(function)
    name = sdk_tool_kwargs.get("name")
    return str(name) if name is not None else function.__name__


def run(server: Any, transport: str, options: Mapping[str, Any]) -> None:
    """``MCPServer.run`` (it takes ``host``, ``port`` and the other HTTP options itself)."""
    if transport not in ("stdio", "sse", "streamable-http"):
        raise ValueError(f"transport must be 'stdio', 'sse' or 'streamable-http', not {transport!r}")
    merged: dict[str, Any] = {}
    if transport != "stdio":
        merged.update(cast("Mapping[str, Any]", getattr(server, _LISTEN, {})))
    merged.update(options)
    cast("MCPServer", server).run(transport, **merged)  # pyright: ignore[reportArgumentType, reportCallIssue]


def request_lifespan_context() -> tuple[bool, Any]:
    ctx = current_request()
    return (False, None) if ctx is None else (True, ctx.lifespan_context)


async def send_log(level: str, data: Any, logger_name: str | None) -> bool:
    """On 2026-07-28 the SDK sends it only when the request opted in to that level (its rule)."""
    ctx = current_request()
    if ctx is None:
        return False
    with warnings.catch_warnings():
        # The SDK warns that logging is deprecated as of 2026-07-28; the tool asked for it anyway.
        warnings.filterwarnings("ignore", message="The logging capability is deprecated")
        await ctx.session.send_log_message(  # pyright: ignore[reportDeprecated]
            level,  # pyright: ignore[reportArgumentType]
            data,
            logger=logger_name,
            related_request_id=ctx.request_id,
        )
    return True
