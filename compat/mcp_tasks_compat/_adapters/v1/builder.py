"""mcp 1.x builder facet: the ``FastMCP`` behind ``TaskServer``, and a tool body's own request.

``FastMCP`` registers the tools (its own schema generation and structured output); tasks are
installed on it with :func:`.server.install`. Progress and log messages of a plain call go on
the current request (the SDK's ``request_ctx``), as ``Context.report_progress`` / ``Context.log``
would send them, so a tool body needs no 1.x ``Context``.

``Context`` and ``ToolError`` are ``FastMCP``'s own, re-exported by :mod:`mcp_tasks_compat.server`
so a server written once imports them from one place.
"""

from __future__ import annotations

import warnings
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from mcp.server.fastmcp import Context, FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.server.lowlevel.server import request_ctx
from starlette.applications import Starlette

from ..._engine import EngineHost
from ..._engine.hosting import Lifespan
from .server import hosted_by_lifespan, install, lowlevel_server_of, tool_runner

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

_LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
"""Hosts for which ``FastMCP`` turns DNS-rebinding protection on by itself (at construction)."""

_AUTO_SECURITY = "_mcp_tasks_compat_auto_security"
"""Marks a server whose transport security ``FastMCP`` derived from its host (none was given)."""


def new_server(name: str, policy: TaskPolicy, sdk_kwargs: Mapping[str, Any]) -> FastMCP[Any]:
    """``FastMCP(name, **sdk_kwargs)`` with tasks installed (2025-11-25, all mcp 1.x speaks).

    ``version`` (``serverInfo.version``, which 2.x's ``MCPServer`` takes and ``FastMCP`` does not)
    is set on the low-level server, so the keyword means the same on both majors.

    The engine's host (:meth:`~mcp_tasks_compat._engine.TaskEngine.hosted`) enters the user's
    ``lifespan``: once for the whole process when the server runs (its stdio loop, its HTTP or SSE
    app: :func:`_hosted_apps`), so a task that outlives its client's session keeps the lifespan's
    resources, and a replica that serves no session still sweeps, renews and re-runs; per session
    otherwise (a server run in memory). Each session's lifespan joins the process's host.
    """
    kwargs = dict(sdk_kwargs)
    version = kwargs.pop("version", None)
    user_lifespan: Lifespan | None = kwargs.pop("lifespan", None)
    kwargs.setdefault("log_level", "WARNING")

    def hosted(server: Any, *, process: bool = False) -> AbstractAsyncContextManager[EngineHost]:
        entered = None if user_lifespan is None else partial(user_lifespan, server)
        return policy.engine.hosted(tools=tool_runner(server), lifespan=entered, process=process)

    @asynccontextmanager
    async def session_lifespan(server: Any) -> AsyncGenerator[Any, None]:
        async with hosted(server) as host:
            yield host.lifespan_context

    with warnings.catch_warnings():
        # mcp 1.23-1.2x with a newer pydantic-settings: noise about FastMCP's own settings model.
        warnings.filterwarnings("ignore", message=r"Field 'lifespan' has an incomplete definition")
        server: FastMCP[Any] = FastMCP(name, lifespan=session_lifespan, **kwargs)
    setattr(server, _AUTO_SECURITY, "transport_security" not in kwargs)
    install(policy, server)
    hosted_by_lifespan(server)
    _hosted_apps(server, partial(hosted, server, process=True))
    if version is not None:
        lowlevel_server_of(server).version = str(version)
    return server


def _hosted_apps(server: FastMCP[Any], host: Callable[[], AbstractAsyncContextManager[EngineHost]]) -> None:
    """The server's stdio loop and its HTTP and SSE apps host its engine for the whole process
    (wrapped on this instance, never on the ``FastMCP`` class): ``TaskServer.run``, the CLI and a
    user who mounts ``streamable_http_app()`` in an app of theirs all get it."""
    run_stdio = server.run_stdio_async
    http_app = server.streamable_http_app
    sse_app = server.sse_app

    async def run_stdio_async() -> None:
        async with host():
            await run_stdio()

    def hosting(app: Starlette) -> Starlette:
        inner = app.router.lifespan_context

        @asynccontextmanager
        async def lifespan(asgi_app: Any) -> AsyncGenerator[Any, None]:
            async with host(), inner(asgi_app) as state:
                yield state

        app.router.lifespan_context = lifespan
        return app

    setattr(server, "run_stdio_async", run_stdio_async)  # noqa: B010
    setattr(server, "streamable_http_app", lambda: hosting(http_app()))  # noqa: B010

    def hosted_sse_app(mount_path: str | None = None) -> Starlette:
        return hosting(sse_app(mount_path))

    setattr(server, "sse_app", hosted_sse_app)  # noqa: B010


def add_tool(server: Any, function: Callable[..., Any], sdk_tool_kwargs: Mapping[str, Any]) -> str:
    fastmcp = cast("FastMCP[Any]", server)
    fastmcp.tool(**dict(sdk_tool_kwargs))(function)
    name = sdk_tool_kwargs.get("name")
    return str(name) if name is not None else function.__name__


def run(server: Any, transport: str, options: Mapping[str, Any]) -> None:
    """``FastMCP.run``; ``host``/``port`` (settings on 1.x, taken at construction) are applied first.

    A host given here re-derives DNS-rebinding protection as ``FastMCP`` does at construction (on
    for local hosts), unless the server was built with its own ``transport_security``, so
    ``run(host=...)`` means the same on both majors.
    """
    fastmcp = cast("FastMCP[Any]", server)
    rest = dict(options)
    host = rest.pop("host", None)
    port = rest.pop("port", None)
    if port is not None:
        fastmcp.settings.port = int(port)
    if host is not None and host != fastmcp.settings.host:
        fastmcp.settings.host = str(host)
        if getattr(fastmcp, _AUTO_SECURITY, False) and host not in _LOCAL_HOSTS:
            fastmcp.settings.transport_security = None
    for key, value in rest.items():
        if key == "mount_path":
            continue
        if not hasattr(fastmcp.settings, key):
            raise TypeError(f"TaskServer.run() on mcp 1.x got an unknown option {key!r}")
        setattr(fastmcp.settings, key, value)
    mount_path = rest.get("mount_path")
    if transport not in ("stdio", "sse", "streamable-http"):
        raise ValueError(f"transport must be 'stdio', 'sse' or 'streamable-http', not {transport!r}")
    fastmcp.run(transport, mount_path=mount_path)  # pyright: ignore[reportArgumentType]


def request_lifespan_context() -> tuple[bool, Any]:
    context = _request()
    return (False, None) if context is None else (True, context.lifespan_context)


def _request() -> Any:
    try:
        return request_ctx.get()
    except LookupError:
        return None


async def send_progress(progress: float, total: float | None, message: str | None) -> bool:
    context = _request()
    if context is None or context.meta is None:
        return False
    token = getattr(context.meta, "progressToken", None)
    if token is None:
        return False
    await context.session.send_progress_notification(
        token, progress, total, message, related_request_id=str(context.request_id)
    )
    return True


async def send_log(level: str, data: Any, logger_name: str | None) -> bool:
    context = _request()
    if context is None:
        return False
    await context.session.send_log_message(
        level,  # pyright: ignore[reportArgumentType]
        data,
        logger=logger_name,
        related_request_id=context.request_id,
    )
    return True
