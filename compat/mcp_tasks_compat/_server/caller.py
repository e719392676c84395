"""What the task services need from an SDK on each request, and whom a task belongs to."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol

__all__ = ["SESSION_OWNER_PREFIX", "Caller", "owner_2025", "principal_id", "session_owned"]

SESSION_OWNER_PREFIX = "session:"
"""What the owner of an unauthenticated 2025-11-25 task starts with (then its session's key)."""


class Caller(Protocol):
    """The request being served, as an adapter presents it to a service.

    ``principal``: the authenticated user (:func:`principal_id`), else ``None``.
    ``session_key``: a random key unique to the live session (connection) the request came on,
    never reused; ``None`` when there is none (before ``initialize``, or a stateless HTTP server).
    """

    @property
    def principal(self) -> str | None: ...

    @property
    def session_key(self) -> str | None: ...

    async def relay(self, request: Mapping[str, Any]) -> Mapping[str, Any]:
        """Send ``request`` (``{"method", "params"}``) to the client on this request's stream;
        the client's result as wire JSON. A JSON-RPC error answer raises
        :class:`~mcp_tasks_compat._engine.InputRefused`."""
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


def session_owned(owner: str) -> bool:
    """Whether a stored owner is a session's (an unauthenticated 2025-11-25 task)."""
    return owner.startswith(SESSION_OWNER_PREFIX)
