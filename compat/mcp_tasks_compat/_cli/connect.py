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
from dataclasses import dataclass, field
from typing import Any, TextIO

from .._adapters import get_adapter
from .._client import open_negotiated
from .._client.auth import HttpCredentials
from .._client.journal import Endpoint, JournalStore, bind_session
from .._client_api import merged_session_options
from ..client import Negotiated, negotiate
from ..dialects import DIALECT_2025_11_25, Dialect
from ..errors import ServerAuthError, ServerUnreachableError
from .common import CliError

__all__ = ["Connected", "ServerLog", "Target", "connect", "parse_env", "parse_headers"]


@dataclass(frozen=True)
class Target:
    """Where the server is: a streamable HTTP URL, or a command to spawn and talk to over stdio."""

    url: str | None = None
    command: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    """``--env K=V`` pairs, set on top of this process's environment for the server command."""
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    """``-H 'Name: value'`` and ``--bearer-env VAR`` headers sent to ``--url`` (never printed)."""
    cwd: str | None = None
    """The folder the server command runs in (``None``: this process's)."""

    @classmethod
    def of(
        cls,
        url: str | None,
        command: Sequence[str],
        *,
        env: Sequence[str] = (),
        headers: Sequence[str] = (),
        bearer_env: str | None = None,
    ) -> Target:
        if url is not None and command:
            raise CliError("give either --url URL or -- COMMAND ARGS..., not both")
        if url is None and not command:
            raise CliError("no server given: use --url URL or -- COMMAND ARGS...")
        if url is not None and not url.startswith(("http://", "https://")):
            raise CliError(f"--url must be an http:// or https:// URL, not {url!r}")
        if url is not None and env:
            raise CliError("--env sets a server command's environment (-- COMMAND ARGS...), not --url's")
        pairs = parse_env(env)
        sent = parse_headers(headers, bearer_env)
        if sent and url is None:
            raise CliError("-H/--header and --bearer-env are sent to --url, not to a server command")
        return cls(url=url, command=tuple(command), env=pairs, headers=sent)

    def environment(self) -> dict[str, str]:
        """The server command's environment: this process's (as any process runner passes it), then ``--env``.

        The SDK's stdio client would otherwise start it with a short whitelist (``PATH``, ``HOME``...),
        and a server that reads e.g. an API key from its environment fails without a hint.
        """
        return {**os.environ, **dict(self.env)}

    def describe(self) -> str:
        return self.url if self.url is not None else " ".join(self.command)

    def endpoint(self) -> Endpoint:
        """The journal's name for this server: the URL, or the command line and its folder."""
        return Endpoint.http(self.url) if self.url is not None else Endpoint.stdio(self.command, self.cwd)

    @classmethod
    def at(
        cls, endpoint: Endpoint, *, headers: tuple[tuple[str, str], ...], env: tuple[tuple[str, str], ...]
    ) -> Target:
        """A journal entry's server, with the headers (HTTP) or environment (a command) given again."""
        if endpoint.url is not None:
            return cls(url=endpoint.url, headers=headers)
        return cls(command=endpoint.command, env=env, cwd=endpoint.cwd)


def parse_env(given: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """``--env K=V`` items as (key, value) pairs."""
    pairs: list[tuple[str, str]] = []
    for item in given:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CliError(f"--env takes K=V, not {item!r}")
        pairs.append((key, value))
    return tuple(pairs)


def parse_headers(given: Sequence[str], bearer_env: str | None) -> tuple[tuple[str, str], ...]:
    """``-H 'Name: value'`` items and ``--bearer-env VAR`` as (name, value) pairs.

    A malformed item is refused naming its position and its name at most: never its value, which
    may be a credential.
    """
    pairs: list[tuple[str, str]] = []
    for number, item in enumerate(given, start=1):
        name, sep, value = item.partition(":")
        name, value = name.strip(), value.strip()
        if not sep or not name or not _TOKEN_CHARS.issuperset(name):
            shown = f" (name {name!r})" if sep and name and _TOKEN_CHARS.issuperset(name) else ""
            raise CliError(f"-H/--header #{number}{shown} must be 'Name: value' (its value is not shown)")
        if not value:
            raise CliError(f"-H/--header {name!r} has no value: give 'Name: value'")
        pairs.append((name, value))
    if bearer_env is not None:
        token = os.environ.get(bearer_env, "").strip()
        if not token:
            raise CliError(f"--bearer-env {bearer_env}: that environment variable is not set or empty")
        if any(name.lower() == "authorization" for name, _ in pairs):
            raise CliError("give either --bearer-env or an -H 'Authorization: ...' header, not both")
        pairs.append(("Authorization", f"Bearer {token}"))
    return tuple(pairs)


_TOKEN_CHARS = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
"""The characters of an HTTP header name (RFC 9110's token)."""


@dataclass
class Connected:
    """One open, negotiated client session."""

    session: Any
    negotiated: Negotiated
    protocol_version: str | None
    server_name: str | None
    server_version: str | None
    credentials: HttpCredentials | None = None
    server: str = ""

    def auth_refused(self) -> ServerAuthError | None:
        """The server's refusal of the credentials, when its last HTTP answer was one (401/403)."""
        if self.credentials is None or self.credentials.refused is None:
            return None
        return ServerAuthError(server=self.server, status=self.credentials.refused)


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
    journal: JournalStore | None = None,
) -> AsyncGenerator[Connected, None]:
    """Open a session to ``target`` and negotiate it within ``connect_timeout`` seconds.

    ``session_options`` are ``ClientSession`` keywords added to the library's (the command's
    callbacks); ``bare`` leaves the library's out (``call --mode plain``: no Tasks extension
    declared); ``dialect`` keeps tasks to one dialect, ``"2025-11-25"`` opening with
    ``initialize``, as ``client.connect_http(dialect=...)`` does. A session that cannot be opened
    is a one-line :class:`CliError`, nothing having been sent. The session knows its endpoint
    (``target``'s), and records its tasks into ``journal`` when one is given.
    """
    app = get_adapter().app
    credentials: HttpCredentials | None = None
    if target.url is not None:
        credentials = HttpCredentials(headers=dict(target.headers))
        transport = app.http_streams(target.url, headers=credentials.headers, on_response=credentials.hook)
    else:
        command, *args = target.command
        transport = app.stdio_streams(
            command, args, errlog=log.stream(), env=target.environment(), cwd=target.cwd
        )
    opening = open_negotiated(
        app,
        transport,
        server=target.describe(),
        session_kwargs=merged_session_options(session_options, dialect=dialect, bare=bare),
        negotiate=negotiate,
        dialect_2025=dialect == DIALECT_2025_11_25,
        connect_timeout=connect_timeout,
        detail=log.detail,
        credentials=credentials,
    )
    async with AsyncExitStack() as stack:
        try:
            session = await stack.enter_async_context(opening)
        except ServerUnreachableError as error:
            raise _unreachable(error, target, connect_timeout) from error
        negotiated = await negotiate(session)  # what the opener negotiated (cached)
        bind_session(session, endpoint=target.endpoint(), store=journal)
        name, version = app.server_identity(session)
        yield Connected(
            session, negotiated, negotiated.protocol_version, name, version, credentials, target.describe()
        )


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
