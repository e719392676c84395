"""mcp 1.x servers: what one session owns, and a request of it as the task service sees it.

:mod:`.server`'s ``run`` makes a :class:`SessionTasks` per session; :mod:`.task_handlers` reads it
through :data:`current_session` and presents each request as a :class:`SessionCaller` (the
:class:`~mcp_tasks_compat._server.Caller` of mcp 1.x: the principal of its HTTP request, its
session's key, its stream for input requests).
"""

from __future__ import annotations

import contextvars
import secrets
from collections.abc import Awaitable, Callable, Generator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, NoReturn, cast

import anyio
import anyio.abc
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.lowlevel.server import request_ctx
from mcp.server.session import ServerSession
from mcp.shared.context import RequestContext
from mcp.shared.exceptions import McpError

from ..._engine import InputRefused
from ..._observe import traces
from ..._server import Launch, principal_id
from ...core._model import JsonRpcError
from ...dialects import DIALECT_2025_11_25
from .messages import WireNotification, send_input
from .runs import detached_request_context

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
    """What one session (one ``Server.run``) holds: the group its runs live in, its waiters, its key.

    ``runs``: the task group of the runs started on this session. On streamable HTTP (``over_http``,
    learnt from the first message) the server outlives the session, so its end waits for them
    (they stop with the server); on stdio and in memory the session's end is the server's stop.
    """

    runs: anyio.abc.TaskGroup
    stateless: bool
    key: str = field(default_factory=lambda: secrets.token_urlsafe(16))
    closed: anyio.Event = field(default_factory=anyio.Event)
    over_http: bool = False
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
    speaks_tasks: bool
    session: SessionTasks
    context: RequestContext[ServerSession, Any, Any]
    detach: bool = True
    """``False`` (the benchmarks only): a run keeps its request's whole context."""
    trace_carrier: Mapping[str, Any] | None = None

    @property
    def sdk_session(self) -> ServerSession:
        return self.context.session

    async def relay(self, request: Mapping[str, Any]) -> Mapping[str, Any]:
        try:
            return await send_input(self.sdk_session, request, self.context.request_id)
        except McpError as exc:
            error = exc.error
            raise InputRefused(JsonRpcError(error.code, error.message, error.data)) from exc

    @contextmanager
    def launch(self, tool_name: str, *, detach: bool = True) -> Generator[Launch]:
        """The run primitive of mcp 1.x: the session's run group, a detached request context, and
        the session's notifications. mcp 1.x opens no span of its own, so the task's ``tools/call``
        gets one here, parented by the trace context in its ``_meta``."""
        span = traces.server_request(
            "tools/call", tool_name, self.trace_carrier, protocol_version=DIALECT_2025_11_25
        )
        with span:
            # The run must not inherit this request's context (the SDK's request context, and
            # through it the HTTP request and the stream callbacks of the answer about to be sent).
            run_context = contextvars.copy_context()
            detached = detached_request_context(self.context) if self.detach and detach else self.context
            run_context.run(request_ctx.set, detached)
            yield Launch(self.session.runs, run_context, _notifier(self.session, self.sdk_session))


def _notifier(
    session: SessionTasks, sdk_session: ServerSession
) -> Callable[[Mapping[str, Any]], Awaitable[None]]:
    """Notifications on the session, dropped once it ended. It keeps the session only: a task's
    listener lives as long as the task, and this request's context must not (the bench's RSS per
    held task; ``tests/server/v1/test_detached_run.py`` checks what a listener keeps)."""

    async def notify(wire: Mapping[str, Any]) -> None:
        if not session.closed.is_set():
            await sdk_session.send_notification(WireNotification.of(wire))

    return notify


def wire_params(req: Any, *, only: set[str] | None = None) -> dict[str, Any]:
    """A typed request's params as the wire sent them (fields the client left out stay out);
    ``only``: just those fields (a ``tools/call``'s arguments, already validated by the SDK, are
    not copied on every call)."""
    params = getattr(req, "params", None)
    if params is None:
        return {}
    return params.model_dump(by_alias=True, mode="json", exclude_unset=True, include=only)
