"""Negotiated kit sessions, in memory, over stdio and over streamable HTTP.

They are opened by the client's own opener (:func:`mcp_tasks_compat._client.open_negotiated`, what
``client.connect_http`` and ``client.connect_stdio`` use), so a kit session fails as a caller's
does: a server that cannot be reached is :class:`~mcp_tasks_compat.errors.ServerUnreachableError`
(with what the server printed), a connection lost mid-task
:class:`~mcp_tasks_compat.errors.ServerConnectionLostError`. A session that opens but not as asked
(the pinned dialect not negotiated, the handshake refused) is :class:`SessionSetupError`.
"""

from __future__ import annotations

import os
import shlex
import tempfile
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Final, TextIO

from .._adapters import get_adapter
from .._client import open_negotiated
from .._client_api import CONNECT_TIMEOUT_SECONDS, negotiate
from ..dialects import DIALECT_2025_11_25, Dialect
from ..errors import CompatError, SessionSetupError
from .options import merged_session_options
from .serve import server_command

__all__ = ["CONNECT_TIMEOUT_S", "SessionSetupError", "connect_http", "connect_in_memory", "connect_stdio"]

CONNECT_TIMEOUT_S: Final = CONNECT_TIMEOUT_SECONDS
"""Bound on opening and negotiating a session (a subprocess server first imports ``mcp``)."""


def _no_detail() -> str:
    return ""


@asynccontextmanager
async def _connected(
    transport: AbstractAsyncContextManager[tuple[Any, Any]],
    *,
    server: str,
    dialect: Dialect | None,
    session_options: Mapping[str, Any] | None,
    bare: bool,
    detail: Callable[[], str] = _no_detail,
) -> AsyncGenerator[Any, None]:
    """A session on ``transport``, opened and negotiated, the pinned ``dialect`` checked."""
    # Refusals of what the installed mcp cannot do come first, before any transport starts.
    options = merged_session_options(session_options, dialect=dialect, bare=bare)
    opening = open_negotiated(
        get_adapter().app,
        transport,
        server=server,
        session_kwargs=options,
        negotiate=negotiate,
        dialect_2025=dialect == DIALECT_2025_11_25,
        connect_timeout=CONNECT_TIMEOUT_S,
        detail=detail,
    )
    opened = False
    try:
        async with opening as session:
            negotiated = await negotiate(session)  # what the opener negotiated (cached)
            if dialect is not None and negotiated.dialect != dialect:
                raise SessionSetupError(
                    f"asked for the {dialect} task dialect, the connection negotiated "
                    f"{negotiated.dialect or 'none'} ({negotiated.reason or 'no reason given'}); "
                    f"server {server}{detail()}"
                )
            opened = True
            yield session
    except Exception as error:
        # The library's own errors say what to do already; a TypeError is a usage error (e.g.
        # connect_in_memory given no server) that says what is accepted.
        if opened or isinstance(error, (CompatError, SessionSetupError, TypeError)):
            raise
        failure = f"opening the session failed: {error!r}; server {server}{detail()}"
        raise SessionSetupError(failure) from error


@asynccontextmanager
async def connect_in_memory(
    server: Any,
    *,
    dialect: Dialect | None = None,
    session_options: Mapping[str, Any] | None = None,
    bare: bool = False,
) -> AsyncGenerator[Any, None]:
    """A negotiated ``ClientSession`` to ``server`` running in this event loop (real JSON-RPC streams).

    ``server``: a :class:`~mcp_tasks_compat.server.TaskServer`; on mcp 1.x a ``FastMCP`` or a
    low-level ``mcp.server.lowlevel.Server``; on mcp 2.x an ``MCPServer`` or a low-level ``Server``
    (with the library's tasks installed, or not); any other object is a ``TypeError`` saying so.
    ``dialect`` pins the task dialect (``None``: the newest the connection offers);
    ``session_options`` are ``ClientSession`` keywords added to the library's settings for
    ``dialect`` (e.g. ``{"elicitation_callback": ...}``; see :func:`merged_session_options`); ``bare=True``
    uses them alone, a session without the library's task plumbing (what a plain client sees).
    """
    opening = _connected(
        get_adapter().app.in_memory_streams(getattr(server, "sdk_server", server)),
        server=f"{type(server).__name__} in memory",
        dialect=dialect,
        session_options=session_options,
        bare=bare,
    )
    async with opening as session:
        yield session


def _tail(log: TextIO) -> str:
    try:
        log.flush()
        log.seek(0)
        lines = [line.rstrip() for line in log.read().splitlines() if line.strip()]
    except (OSError, ValueError):
        return ""
    return "\n".join(lines[-20:])


@asynccontextmanager
async def connect_stdio(
    command: Sequence[str] | None = None,
    *,
    toolset_spec: str | None = None,
    dialect: Dialect | None = None,
    session_options: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    bare: bool = False,
) -> AsyncGenerator[Any, None]:
    """A negotiated ``ClientSession`` to a server subprocess over stdio.

    ``session_options`` and ``bare`` are :func:`connect_in_memory`'s.
    ``command`` defaults to :func:`server_command` with ``toolset_spec`` (this interpreter). ``env``
    is added to the SDK's minimal default environment. The server's stderr is kept and its last
    lines are added to the error when the session cannot be opened.
    """
    argv = list(command) if command is not None else server_command(toolset_spec)
    if not argv:
        raise ValueError("the server command is empty")
    app = get_adapter().app
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as log:

        def stderr_tail() -> str:
            tail = _tail(log)
            return f", its stderr:\n{tail}" if tail else ""

        transport = app.stdio_streams(
            argv[0], argv[1:], errlog=log, env=env, cwd=None if cwd is None else os.fspath(cwd)
        )
        opening = _connected(
            transport,
            server=shlex.join(argv),
            dialect=dialect,
            session_options=session_options,
            bare=bare,
            detail=stderr_tail,
        )
        async with opening as session:
            yield session


@asynccontextmanager
async def connect_http(
    url: str,
    *,
    dialect: Dialect | None = None,
    session_options: Mapping[str, Any] | None = None,
    bare: bool = False,
) -> AsyncGenerator[Any, None]:
    """A negotiated ``ClientSession`` to a streamable HTTP server at ``url`` (``session_options``
    and ``bare`` are :func:`connect_in_memory`'s): ``client.connect_http`` with the kit's options."""
    opening = _connected(
        get_adapter().app.http_streams(url),
        server=url,
        dialect=dialect,
        session_options=session_options,
        bare=bare,
    )
    async with opening as session:
        yield session
