"""What the task services need from an SDK on each request, and whom a task belongs to."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol

__all__ = ["Caller", "owner_2025", "principal_id"]


class Caller(Protocol):
    """The request being served, as an adapter presents it to a service.

    ``principal``: the authenticated user (:func:`principal_id`), else ``None``.
    ``session_key``: a key unique to the live session (connection) the request came on, never
    reused; ``None`` when there is none (before ``initialize``, or a stateless HTTP server).
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
    return caller.principal if caller.principal is not None else caller.session_key
