"""Where the server is and how to reach it: the target, its stderr, an open negotiated session.

:func:`connect` is the one place a command opens a client session; the transports and the session
come from the adapter registry's app facet (``_adapters.get_adapter().app``).
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any, TextIO

import anyio

from .._adapters import get_adapter
from ..client import Negotiated, negotiate
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
    target: Target, *, kwargs: Mapping[str, Any], dialect_2025: bool, log: ServerLog, connect_timeout: float
) -> AsyncGenerator[Connected, None]:
    """Open a session to ``target`` and negotiate it within ``connect_timeout`` seconds."""
    async with AsyncExitStack() as stack:
        if target.url is not None:
            streams = await stack.enter_async_context(get_adapter().app.http_streams(target.url))
        else:
            command, *args = target.command
            streams = await stack.enter_async_context(
                get_adapter().app.stdio_streams(command, args, errlog=log.stream(), env=target.environment())
            )
        session = await stack.enter_async_context(get_adapter().app.open_session(streams, kwargs))
        try:
            with anyio.fail_after(connect_timeout):
                opened = await get_adapter().app.handshake(session, dialect_2025=dialect_2025)
                negotiated = await negotiate(session)
        except TimeoutError:
            raise CliError(
                f"no answer from {target.describe()} within {connect_timeout:g} s (--connect-timeout)"
            ) from None
        name, version = get_adapter().app.server_identity(session)
        yield Connected(session, negotiated, negotiated.protocol_version or opened, name, version)
