"""Where the server is and how to reach it: the target, its stderr, an open negotiated session.

:func:`connect` is the one place a command opens a client session, with the client's own opener
(:func:`.._client.open_negotiated`, what ``client.connect_http`` and ``client.connect_stdio``
run), so a server that dies under a command ends it as it ends user code: with
:class:`~mcp_tasks_compat.errors.ServerConnectionLostError` naming the task. The transports come
from the adapter registry's app facet (``_adapters.get_adapter().app``).
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any, TextIO

from .._adapters import get_adapter
from .._client import open_negotiated
from .._client_api import merged_session_options
from ..client import Negotiated, negotiate
from ..dialects import DIALECT_2025_11_25, Dialect
from ..errors import ServerUnreachableError
from .common import CliError

__all__ = ["Connected", "ServerLog", "Target", "connect"]


@dataclass(frozen=True)
class Target:
    """Where the server is: a streamable HTTP URL, or a command to spawn and talk to over stdio."""

    url: str | None = None
    command: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    """``--env K=V`` pairs, set on top of this process's environment for the server command."""

    @classmethod
    def of(cls, url: str | None, command: Sequence[str], *, env: Sequence[str] = ()) -> Target:
        if url is not None and command:
            raise CliError("give either --url URL or -- COMMAND ARGS..., not both")
        if url is None and not command:
            raise CliError("no server given: use --url URL or -- COMMAND ARGS...")
        if url is not None and not url.startswith(("http://", "https://")):
            raise CliError(f"--url must be an http:// or https:// URL, not {url!r}")
        if url is not None and env:
            raise CliError("--env sets a server command's environment (-- COMMAND ARGS...), not --url's")
        pairs: list[tuple[str, str]] = []
        for item in env:
            key, sep, value = item.partition("=")
            if not sep or not key:
                raise CliError(f"--env takes K=V, not {item!r}")
            pairs.append((key, value))
        return cls(url=url, command=tuple(command), env=tuple(pairs))

    def environment(self) -> dict[str, str]:
        """The server command's environment: this process's (as any process runner passes it), then ``--env``.

        The SDK's stdio client would otherwise start it with a short whitelist (``PATH``, ``HOME``...),
        and a server that reads e.g. an API key from its environment fails without a hint.
        """
        return {**os.environ, **dict(self.env)}

    def describe(self) -> str:
        return self.url if self.url is not None else " ".join(self.command)


@dataclass
class Connected:
    """One open, negotiated client session."""

    session: Any
    negotiated: Negotiated
    protocol_version: str | None
    server_name: str | None
    server_version: str | None


@dataclass
class ServerLog:
    """Where a stdio server's stderr goes: ours with ``-v``, else a file whose last line explains a death."""

    verbose: bool
    _file: TextIO | None = None

    def stream(self) -> TextIO:
        if self.verbose:
            return sys.stderr
        if self._file is None:
            self._file = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        return self._file

    def detail(self) -> str:
        """What a failure to open a session adds: the server's last stderr line, if it said one."""
        tail = self.last_line()
        return f" (server stderr: {tail})" if tail else ""

    def last_line(self) -> str | None:
        if self._file is None:
            return None
        try:
            self._file.flush()
            self._file.seek(0)
            lines = [line.strip() for line in self._file.read().splitlines() if line.strip()]
        except (OSError, ValueError):
            return None
        return lines[-1][:300] if lines else None

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


@asynccontextmanager
async def connect(
    target: Target,
    *,
    session_options: Mapping[str, Any] | None = None,
    dialect: Dialect | None = None,
    bare: bool = False,
    log: ServerLog,
    connect_timeout: float,
) -> AsyncGenerator[Connected, None]:
    """Open a session to ``target`` and negotiate it within ``connect_timeout`` seconds.

    ``session_options`` are ``ClientSession`` keywords added to the library's (the command's
    callbacks); ``bare`` leaves the library's out (``call --mode plain``: no Tasks extension
    declared); ``dialect`` keeps tasks to one dialect, ``"2025-11-25"`` opening with
    ``initialize``, as ``client.connect_http(dialect=...)`` does. A session that cannot be opened
    is a one-line :class:`CliError`, nothing having been sent.
    """
    app = get_adapter().app
    if target.url is not None:
        transport = app.http_streams(target.url)
    else:
        command, *args = target.command
        transport = app.stdio_streams(command, args, errlog=log.stream(), env=target.environment())
    opening = open_negotiated(
        app,
        transport,
        server=target.describe(),
        session_kwargs=merged_session_options(session_options, dialect=dialect, bare=bare),
        negotiate=negotiate,
        dialect_2025=dialect == DIALECT_2025_11_25,
        connect_timeout=connect_timeout,
        detail=log.detail,
    )
    async with AsyncExitStack() as stack:
        try:
            session = await stack.enter_async_context(opening)
        except ServerUnreachableError as error:
            raise _unreachable(error, target, connect_timeout) from error
        negotiated = await negotiate(session)  # what the opener negotiated (cached)
        name, version = app.server_identity(session)
        yield Connected(session, negotiated, negotiated.protocol_version, name, version)


def _unreachable(error: ServerUnreachableError, target: Target, connect_timeout: float) -> CliError:
    """A session that never opened, in the command line's words, then the client's own."""
    if isinstance(error.cause, TimeoutError):  # the opener's: the handshake went unanswered
        within = f"within {connect_timeout:g} s (--connect-timeout)"
        return CliError(f"no answer from {target.describe()} {within}")
    if target.url is not None:
        return CliError(f"cannot reach the server: {error.message}")
    if isinstance(error.cause, (FileNotFoundError, PermissionError)):  # the process never started
        return CliError(f"cannot start the server command: {error.message}")
    return CliError(f"the server command ended before its session opened: {error.message}")
