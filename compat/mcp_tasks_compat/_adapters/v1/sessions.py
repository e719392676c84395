"""mcp 1.x servers: what one session owns, and a request of it as the task service sees it.

:mod:`.server`'s ``run`` makes a :class:`SessionTasks` per session; :mod:`.task_handlers` reads it
through :data:`current_session` and presents each request as a :class:`SessionCaller` (the
:class:`~mcp_tasks_compat._server.Caller` of mcp 1.x: the principal of its HTTP request, its
session's key, its stream for input requests).
"""

from __future__ import annotations

import contextvars
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn, cast

import anyio
import anyio.abc
import mcp.types as types
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.session import ServerSession
from mcp.shared.exceptions import McpError

from ..._engine import InputRefused, TaskRecord
from ..._server import principal_id
from ...core.model import JsonRpcError
from .messages import send_input

__all__ = [
    "SessionCaller",
    "SessionTasks",
    "abandon_request",
    "authenticated_principal",
    "current_session",
    "wire_params",
]


@dataclass(eq=False)
class SessionTasks:
    """What one session (one ``Server.run``) owns: its runs, its waiters, its key."""

    group: anyio.abc.TaskGroup
    stateless: bool
    key: str = field(default_factory=lambda: secrets.token_urlsafe(16))
    closed: anyio.Event = field(default_factory=anyio.Event)
    runs: dict[str, TaskRecord] = field(default_factory=lambda: dict[str, TaskRecord]())
    waiters: set[anyio.CancelScope] = field(default_factory=lambda: set[anyio.CancelScope]())

    def transport_closed(self) -> None:
        """The peer is gone: no answer can reach it, so blocked ``tasks/result`` calls stop now."""
        self.closed.set()
        for scope in self.waiters:
            scope.cancel()


current_session: contextvars.ContextVar[SessionTasks | None] = contextvars.ContextVar(
    "mcp_tasks_compat_v1_session", default=None
)


def abandon_request() -> NoReturn:
    """End a handler without answering: the SDK drops a cancelled request silently.

    Used once the peer is gone: on mcp < 1.27 a late answer to a closed transport raises into
    ``Server.run`` and kills it, and an unanswered handler keeps ``Server.run`` waiting.
    """
    raise anyio.get_cancelled_exc_class()()


def authenticated_principal(request: object) -> str | None:
    """The authenticated user of an HTTP request (streamable HTTP with auth), if any.

    Read from the request itself rather than ``get_access_token()``: the session's handlers run
    in a context copied from the session's *first* HTTP request.
    """
    scope: object = getattr(request, "scope", None)
    user = cast("dict[str, Any]", scope).get("user") if isinstance(scope, dict) else None
    if not isinstance(user, AuthenticatedUser):
        return None
    token = user.access_token
    claims: object = getattr(token, "claims", None)  # mcp >= 1.27: subject and claims
    issuer = cast("dict[str, Any]", claims).get("iss") if isinstance(claims, dict) else None
    return principal_id(token.client_id, issuer, getattr(token, "subject", None))


@dataclass(frozen=True)
class SessionCaller:
    """This request as the service sees it (:class:`~mcp_tasks_compat._server.Caller`)."""

    principal: str | None
    session_key: str | None
    sdk_session: ServerSession
    request_id: types.RequestId

    async def relay(self, request: Mapping[str, Any]) -> Mapping[str, Any]:
        try:
            return await send_input(self.sdk_session, request, self.request_id)
        except McpError as exc:
            error = exc.error
            raise InputRefused(JsonRpcError(error.code, error.message, error.data)) from exc


def wire_params(req: Any, *, only: set[str] | None = None) -> dict[str, Any]:
    """A typed request's params as the wire sent them (fields the client left out stay out);
    ``only``: just those fields (a ``tools/call``'s arguments, already validated by the SDK, are
    not copied on every call)."""
    params = getattr(req, "params", None)
    if params is None:
        return {}
    return params.model_dump(by_alias=True, mode="json", exclude_unset=True, include=only)
