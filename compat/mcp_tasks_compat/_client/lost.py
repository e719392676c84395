"""Whether an exception means the connection to the server is gone, whatever transport and major.

mcp 1.x and 2.x, over stdio or streamable HTTP, report a dead server differently: an
``httpx.ConnectError`` (often inside an exception group), ``anyio.ClosedResourceError`` or
``BrokenResourceError``, an ``OSError``, or a JSON-RPC error with code -32000 ("Connection
closed"). :func:`connection_lost` recognises all of them without importing an SDK or httpx.
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from contextlib import contextmanager
from typing import Final

import anyio

from ..errors import PeerProtocolError, ServerConnectionLostError

__all__ = [
    "CONNECTION_CLOSED",
    "connection_lost",
    "leaves",
    "lost_connection_error",
    "raising_lost_connection",
]

CONNECTION_CLOSED: Final = -32000
"""The JSON-RPC code both SDK majors give a request whose connection closed under it."""
SESSION_TERMINATED: Final = "Session terminated"
"""What both majors' streamable HTTP clients answer when the server no longer knows the session
(HTTP 404: it restarted, or the request reached another replica); mcp 1.x with code 32600, 2.x
with -32600."""

_TRANSPORT_TYPES: Final = (
    OSError,
    EOFError,
    anyio.ClosedResourceError,
    anyio.BrokenResourceError,
    anyio.EndOfStream,
)


def _group_members(error: BaseException) -> tuple[BaseException, ...] | None:
    """The members of an exception group (the builtin, or the backport on Python 3.10), else ``None``."""
    if not any(cls.__name__ == "BaseExceptionGroup" for cls in type(error).__mro__):
        return None
    inner: object = getattr(error, "exceptions", None)
    if not isinstance(inner, tuple):
        return None
    return tuple(item for item in inner if isinstance(item, BaseException))  # pyright: ignore[reportUnknownVariableType]


def leaves(error: BaseException) -> list[BaseException]:
    """The exceptions inside (possibly nested) exception groups, cancellations left out."""
    members = _group_members(error)
    if members is not None:
        found: list[BaseException] = []
        for item in members:
            found.extend(leaves(item))
        return found
    if _is_cancellation(error):
        return []
    return [error]


def _is_cancellation(error: BaseException) -> bool:
    """asyncio's or trio's cancellation (asked without a running event loop)."""
    if isinstance(error, asyncio.CancelledError):
        return True
    kind = type(error)
    return kind.__name__ == "Cancelled" and kind.__module__.startswith("trio")


def _is_transport_failure(error: BaseException) -> bool:
    if isinstance(error, _TRANSPORT_TYPES):
        return True
    if isinstance(error, PeerProtocolError):
        return error.jsonrpc_code == CONNECTION_CLOSED or (
            abs(error.jsonrpc_code) == 32600 and SESSION_TERMINATED in error.message
        )
    module = type(error).__module__
    if module.startswith(("httpx", "httpcore")):  # its transport errors, and a session the server lost
        if type(error).__name__ == "HTTPStatusError":
            # 404 (mcp >= 1.24 servers) or 400 (mcp 1.23: "No valid session ID provided") for a
            # session the server no longer knows: it restarted, or the request reached another replica.
            status = getattr(getattr(error, "response", None), "status_code", None)
            return status in (400, 404)
        return type(error).__name__ not in ("DecodingError", "InvalidURL")
    data = getattr(error, "error", None)  # the SDK's McpError / MCPError
    code, message = getattr(data, "code", None), getattr(data, "message", None)
    return code == CONNECTION_CLOSED or (code in (32600, -32600) and message == SESSION_TERMINATED)


def connection_lost(error: BaseException) -> BaseException | None:
    """The transport failure ``error`` is (or, for a group, holds only of), else ``None``.

    Cancellation is never one: it belongs to whoever cancelled.
    """
    found = [leaf.cause if isinstance(leaf, ServerConnectionLostError) else leaf for leaf in leaves(error)]
    if found and all(_is_transport_failure(leaf) for leaf in found):
        return found[0]
    return None


def lost_connection_error(
    error: BaseException, *, task_id: str | None, dialect: str | None
) -> ServerConnectionLostError | None:
    """The typed error for ``error`` when it is a lost connection, else ``None``."""
    cause = connection_lost(error)
    if cause is None:
        return None
    return ServerConnectionLostError(task_id=task_id, dialect=dialect, cause=cause)


@contextmanager
def raising_lost_connection(*, task_id: str | None, dialect: str | None) -> Generator[None]:
    """A transport failure inside becomes :class:`ServerConnectionLostError` naming the task."""
    try:
        yield
    except Exception as error:
        lost = lost_connection_error(error, task_id=task_id, dialect=dialect)
        if lost is None:
            raise
        raise lost from error
