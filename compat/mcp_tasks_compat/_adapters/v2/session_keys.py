"""Which session a request came on, on an mcp 2.x server: a key per live connection.

A handshake-era (2025-11-25) connection is recognised by its ``initialize`` params object. A
2026-07-28 request has no session in the protocol; for the plain hand-off's owner rule
(``_server/handoff.py``) its session is the ``Mcp-Session-Id`` header it carries, else the
transport connection it came on when it has one of its own (stdio, a stream pair: one client
each), else none (streamable HTTP: every request is a connection of its own).
"""

from __future__ import annotations

import secrets
import weakref
from typing import Any, Final

from mcp.server.context import ServerRequestContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

__all__ = ["MCP_SESSION_ID_HEADER", "SessionKeys"]

MCP_SESSION_ID_HEADER: Final = "mcp-session-id"


def _transport_connection(ctx: ServerRequestContext[Any, Any]) -> object | None:
    """The transport connection a 2026-07-28 request came on when it has one of its own (stdio, a
    stream pair: one client each; the SDK's ``Connection.outbound`` of the duplex stream), else
    ``None`` (HTTP: every request is a connection of its own). Read through the private
    ``ServerSession._connection`` (mcp 2.0-2.3); without it, ``None``."""
    connection: object = getattr(ctx.session, "_connection", None)
    if not getattr(connection, "has_standalone_channel", False):
        return None
    return getattr(connection, "outbound", None)


class SessionKeys:
    """A fresh random key per live connection, never reused.

    The connection is recognised by the identity of its ``initialize`` params object (what
    ``ctx.session.client_params`` returns for every request of that connection); the key is
    forgotten when that object is collected, so a new connection never inherits an old key.
    """

    def __init__(self) -> None:
        self._keys: dict[int, tuple[weakref.ref[object], str]] = {}

    def key_for(self, anchor: object) -> str:
        ident = id(anchor)
        entry = self._keys.get(ident)
        if entry is not None and entry[0]() is anchor:
            return entry[1]
        key = secrets.token_urlsafe(16)

        def forget(ref: weakref.ref[object]) -> None:
            current = self._keys.get(ident)
            if current is not None and current[0] is ref:
                del self._keys[ident]

        self._keys[ident] = (weakref.ref(anchor, forget), key)
        return key

    def of(self, ctx: ServerRequestContext[Any, Any]) -> str | None:
        """The key of the session ``ctx`` came on (see the module docstring), ``None`` without one
        (before ``initialize``, a stateless server, a 2026-07-28 HTTP request without a header)."""
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            headers = getattr(ctx.request, "headers", None)
            declared = headers.get(MCP_SESSION_ID_HEADER) if headers is not None else None
            if declared:
                return "mcp-session-id=" + str(declared)  # not a random key's spelling: no clash
            anchor = _transport_connection(ctx)
        else:
            anchor = ctx.session.client_params
        return None if anchor is None else self.key_for(anchor)
