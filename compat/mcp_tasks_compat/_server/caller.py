"""What the task services need from an SDK on each request, and whom a task belongs to."""

from __future__ import annotations

import contextvars
import json
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

import anyio.abc

__all__ = [
    "SESSION_OWNER_PREFIX",
    "Caller",
    "Launch",
    "owner_2025",
    "owner_2026",
    "principal_id",
    "session_owned",
]


@dataclass(frozen=True, slots=True)
class Launch:
    """Where a task's run lives: the run primitive an adapter gives a service for one request.

    ``group``: the task group the run is spawned in. It belongs to the server, not to the session
    the request came on: a session's end stops none of its runs, the server's stop stops them all
    (or leaves them for a re-run); docs/server.md, "When a session ends". ``context``: the
    contextvars the run starts in, where the SDK's request is swapped for a copy detached from
    the exchange (a run must not hold the HTTP request for hours). ``notify(wire)``: a
    notification (wire JSON) on the request's session, best effort: a session that ended drops it.
    """

    group: anyio.abc.TaskGroup
    context: contextvars.Context
    notify: Callable[[Mapping[str, Any]], Awaitable[None]]


SESSION_OWNER_PREFIX = "session:"
"""What the owner of an unauthenticated 2025-11-25 task starts with (then its session's key)."""


class Caller(Protocol):
    """The request being served, as an adapter presents it to a service.

    ``principal``: the authenticated user (:func:`principal_id`), else ``None``.
    ``session_key``: a random key unique to the live session (connection) the request came on,
    never reused; ``None`` when there is none (before ``initialize``, or a stateless HTTP server).
    A 2026-07-28 request has no session in the protocol: its key is its transport connection's
    (stdio, a stream pair: one client each) or its ``Mcp-Session-Id`` header's, else ``None``
    (over HTTP); only the plain hand-off reads it there (:func:`.handoff.handoff_owner`).
    ``speaks_tasks``: whether the client speaks a task dialect on this request (a 2025-11-25
    session that declared ``capabilities.tasks`` at ``initialize``, a 2026-07-28 request that
    declares the Tasks extension): such a client is never handed off.
    """

    @property
    def principal(self) -> str | None: ...

    @property
    def session_key(self) -> str | None: ...

    @property
    def speaks_tasks(self) -> bool: ...

    async def relay(self, request: Mapping[str, Any]) -> Mapping[str, Any]:
        """Send ``request`` (``{"method", "params"}``) to the client on this request's stream;
        the client's result as wire JSON. A JSON-RPC error answer raises
        :class:`~mcp_tasks_compat._engine.InputRefused`."""
        ...

    def launch(self, tool_name: str, *, detach: bool = True) -> AbstractContextManager[Launch]:
        """The run primitive: entered before a task of ``tool_name`` is created, left once the
        service has its answer (the request's exchange ends then; a trace span, where the SDK
        opens none of its own, covers the create). ``detach=False``: a call that will most likely
        be answered within its grace starts under the request itself (should it become a task
        after all, its run keeps the request). Raises ``PeerProtocolError`` when this request
        cannot host a run (no server lifespan)."""
        ...


def principal_id(client_id: str | None, issuer: object, subject: object) -> str:
    """The one spelling of an authenticated principal, on both majors: a task created through
    one major's server is its user's on the other's (a mixed fleet sharing one store)."""
    return "auth:" + json.dumps(
        [client_id, None if issuer is None else str(issuer), None if subject is None else str(subject)]
    )


def owner_2025(caller: Caller) -> str | None:
    """Whom a 2025-11-25 task belongs to: the principal when there is one (so the same user reads
    it back from a new session, after a restart, on another replica), else the session."""
    if caller.principal is not None:
        return caller.principal
    return None if caller.session_key is None else SESSION_OWNER_PREFIX + caller.session_key


def owner_2026(caller: Caller) -> str | None:
    """Whom a 2026-07-28 task belongs to: the principal, else nobody in particular (the protocol
    has no sessions; the unguessable task id is the capability)."""
    return caller.principal


def session_owned(owner: str) -> bool:
    """Whether a stored owner is a session's (an unauthenticated 2025-11-25 task)."""
    return owner.startswith(SESSION_OWNER_PREFIX)
