"""The client side of the command line: transports and session plumbing, on either SDK major.

This module imports no ``mcp``; each function hands the SDK-specific part to :mod:`.v1_cli` or
:mod:`.v2_cli`, picked by ``sdk_info().major``. The task logic itself is the public
:mod:`mcp_tasks_compat.client` API.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from types import ModuleType
from typing import Any, TextIO

from .._detect import sdk_info

Answerer = Callable[[str, Mapping[str, Any]], Awaitable["Mapping[str, Any] | str"]]
"""``answer(message, requested_schema)``: the form's content, or a reason why there is no answer."""

__all__ = [
    "Answerer",
    "connection_closed",
    "elicitation_callback",
    "handshake",
    "http_streams",
    "is_modern",
    "jsonrpc_error",
    "list_tools",
    "open_session",
    "result_wire",
    "server_identity",
    "stdio_streams",
]


def _impl() -> ModuleType:
    if sdk_info().major == 1:
        from . import v1_cli

        return v1_cli
    from . import v2_cli

    return v2_cli


@asynccontextmanager
async def stdio_streams(
    command: str, args: list[str], errlog: TextIO
) -> AsyncGenerator[tuple[Any, Any], None]:
    """Spawn ``command args...`` and talk JSON-RPC over its stdin/stdout; its stderr goes to ``errlog``."""
    async with _impl().stdio_streams(command, args, errlog) as streams:
        yield streams


@asynccontextmanager
async def http_streams(url: str) -> AsyncGenerator[tuple[Any, Any], None]:
    """Streamable HTTP to ``url``."""
    async with _impl().http_streams(url) as streams:
        yield streams


@asynccontextmanager
async def open_session(streams: tuple[Any, Any], kwargs: Mapping[str, Any]) -> AsyncGenerator[Any, None]:
    """A ``ClientSession`` on ``streams`` built with ``kwargs`` (usually ``session_kwargs(...)``)."""
    async with _impl().open_session(streams, kwargs) as session:
        yield session


async def handshake(session: Any, *, legacy: bool) -> str | None:
    """Open the connection before ``negotiate`` where needed; the protocol version if it did.

    mcp 1.x: always ``initialize`` (to learn ``serverInfo``, which 1.x does not keep). mcp 2.x:
    ``initialize`` only when ``legacy`` (a handshake-era, 2025-11-25 connection even to a server
    that speaks 2026-07-28); otherwise ``negotiate`` sends ``server/discover`` first.
    """
    version: str | None = await _impl().handshake(session, legacy=legacy)
    return version


def is_modern(version: str | None) -> bool:
    """Whether ``version`` is a 2026-era (``server/discover``) protocol version."""
    return bool(_impl().is_modern(version))


def server_identity(session: Any) -> tuple[str | None, str | None]:
    """(name, version) the server gave, where it gave them."""
    identity: tuple[str | None, str | None] = _impl().server_identity(session)
    return identity


async def list_tools(session: Any) -> list[dict[str, Any]]:
    """Every tool the server lists (all pages), as wire JSON."""
    tools: list[dict[str, Any]] = await _impl().list_tools(session)
    return tools


def result_wire(result: Any) -> dict[str, Any]:
    """The installed SDK's ``CallToolResult`` as wire JSON (by alias, no nulls)."""
    wire: dict[str, Any] = _impl().result_wire(result)
    return wire


def jsonrpc_error(error: BaseException) -> tuple[int, str] | None:
    """(code, message) when ``error`` is the SDK's exception for a JSON-RPC error answer."""
    found: tuple[int, str] | None = _impl().jsonrpc_error(error)
    return found


def elicitation_callback(answer: Answerer) -> Any:
    """An elicitation callback for ``ClientSession`` on the installed major, answering with ``answer``.

    Form elicitations get ``answer``'s content (accepted) or, when it gives a reason instead, a
    JSON-RPC error with that reason (the session cannot answer); URL elicitations are refused.
    """
    return _impl().elicitation_callback(answer)


def connection_closed(error: BaseException) -> bool:
    """Whether ``error`` is the SDK saying the connection closed under a pending request."""
    return bool(_impl().connection_closed(error))
