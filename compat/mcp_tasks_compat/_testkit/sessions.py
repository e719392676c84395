"""Negotiated kit sessions, in memory, over stdio and over streamable HTTP; a failure to open one
comes out as :class:`SessionSetupError` saying what the server printed."""

from __future__ import annotations

import os
import tempfile
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Final, TextIO, cast

import anyio

from .._adapters import get_adapter
from ..client import negotiate
from ..dialects import DIALECT_2025_11_25, Dialect
from ..errors import CompatError, ServerConnectionLostError
from .options import merged_session_options
from .serve import server_command

__all__ = ["CONNECT_TIMEOUT_S", "SessionSetupError", "connect_http", "connect_in_memory", "connect_stdio"]

CONNECT_TIMEOUT_S: Final = 60.0
"""Bound on opening and negotiating a session (a subprocess server first imports ``mcp``)."""


class SessionSetupError(RuntimeError):
    """A kit session could not be opened as asked (e.g. the pinned dialect was not negotiated)."""


@asynccontextmanager
async def _session_on(
    streams: tuple[Any, Any],
    *,
    dialect: Dialect | None,
    session_options: Mapping[str, Any],
    describe: Callable[[], str],
) -> AsyncGenerator[Any, None]:
    """A ``ClientSession`` on ``streams``, opened and negotiated, the pinned ``dialect`` checked."""
    app = get_adapter().app
    async with app.open_session(streams, dict(session_options)) as session:
        try:
            with anyio.fail_after(CONNECT_TIMEOUT_S):
                # mcp 2.x reaches 2025-11-25 on a server that also speaks 2026-07-28 by
                # initializing first; negotiate keeps a connection that is already open.
                await app.handshake(session, dialect_2025=dialect == DIALECT_2025_11_25)
                negotiated = await negotiate(session)
        except TimeoutError:
            raise SessionSetupError(f"no session within {CONNECT_TIMEOUT_S:g} s{describe()}") from None
        except CompatError:
            raise  # the library's own refusals say what to do already
        except Exception as error:  # e.g. the server process died: say what it printed
            raise SessionSetupError(f"opening the session failed: {error!r}{describe()}") from error
        if dialect is not None and negotiated.dialect != dialect:
            raise SessionSetupError(
                f"asked for the {dialect} task dialect, the connection negotiated "
                f"{negotiated.dialect or 'none'} ({negotiated.reason or 'no reason given'}){describe()}"
            )
        yield session


def _no_detail() -> str:
    return ""


def _single_setup_error(error: BaseException) -> SessionSetupError | None:
    """The one :class:`SessionSetupError` inside the transports' (nested) exception groups, if that is all."""
    if isinstance(error, SessionSetupError):
        return error
    members: object = getattr(error, "exceptions", None)
    if not isinstance(members, tuple):
        return None
    found = [
        _single_setup_error(item)
        for item in cast("tuple[object, ...]", members)
        if isinstance(item, BaseException) and not isinstance(item, anyio.get_cancelled_exc_class())
    ]
    return found[0] if len(found) == 1 else None


def _leaves(error: BaseException) -> list[BaseException]:
    members: object = getattr(error, "exceptions", None)
    if not isinstance(members, tuple):
        return [error]
    return [leaf for item in cast("tuple[BaseException, ...]", members) for leaf in _leaves(item)]


def _first_leaf(error: BaseException) -> BaseException:
    return _leaves(error)[0]


def _holds_compat_error(error: BaseException) -> bool:
    """A library refusal inside the transports' groups says what to do already: let it through."""
    return any(isinstance(leaf, CompatError) for leaf in _leaves(error))


@asynccontextmanager
async def _connected(
    streams: AbstractAsyncContextManager[tuple[Any, Any]],
    *,
    dialect: Dialect | None,
    session_options: Mapping[str, Any] | None,
    bare: bool,
    describe: Callable[[], str],
) -> AsyncGenerator[Any, None]:
    """A session on ``streams``; a setup failure comes out as the :class:`SessionSetupError` itself.

    (The transports run task groups, which wrap it in exception groups on its way out.)
    """
    # Refusals of what the installed mcp cannot do come first, before any transport starts.
    options = merged_session_options(session_options, dialect=dialect, bare=bare)
    opened = False
    try:
        async with (
            streams as pair,
            _session_on(pair, dialect=dialect, session_options=options, describe=describe) as session,
        ):
            opened = True
            yield session
    except Exception as error:
        if opened:
            raise
        if isinstance(error, ServerConnectionLostError):
            # The server process ended before the session was open, and the SDK's writer met the
            # closed pipe first (a race a busy machine wins): a setup failure, with what it printed.
            lost = type(error.cause).__name__
            raise SessionSetupError(
                f"opening the session failed: the server went away ({lost}){describe()}"
            ) from error
        if isinstance(error, CompatError) and not isinstance(error, SessionSetupError):
            raise
        if isinstance(error, TypeError):
            raise  # a usage error (e.g. connect_in_memory given no server): it says what is accepted
        failure = _single_setup_error(error)
        if failure is error:
            raise
        if failure is None:
            # The transport itself broke first (a server that exits at once can close its stdin
            # before the SDK's writer is done): still a setup failure, with what the server said.
            if _holds_compat_error(error):
                raise
            failure = SessionSetupError(f"opening the session failed: {_first_leaf(error)!r}{describe()}")
        raise failure from None


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
    ``session_options`` are ``ClientSession`` keywords added to ``session_kwargs(dialect=dialect)``
    (e.g. ``{"elicitation_callback": ...}``; see :func:`merged_session_options`); ``bare=True``
    uses them alone, a session without the library's task plumbing (what a plain client sees).
    """
    opening = _connected(
        get_adapter().app.in_memory_streams(getattr(server, "sdk_server", server)),
        dialect=dialect,
        session_options=session_options,
        bare=bare,
        describe=_no_detail,
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
    lines are added to any :class:`SessionSetupError`.
    """
    argv = list(command) if command is not None else server_command(toolset_spec)
    if not argv:
        raise ValueError("the server command is empty")
    app = get_adapter().app
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as log:

        def describe() -> str:
            tail = _tail(log)
            return f"; server {' '.join(argv)}" + (f", its stderr:\n{tail}" if tail else "")

        streams = app.stdio_streams(
            argv[0], argv[1:], errlog=log, env=env, cwd=None if cwd is None else os.fspath(cwd)
        )
        opening = _connected(
            streams, dialect=dialect, session_options=session_options, bare=bare, describe=describe
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
    and ``bare`` are :func:`connect_in_memory`'s)."""

    def describe() -> str:
        return f"; server {url}"

    opening = _connected(
        get_adapter().app.http_streams(url),
        dialect=dialect,
        session_options=session_options,
        bare=bare,
        describe=describe,
    )
    async with opening as session:
        yield session
