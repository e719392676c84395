"""Credentials on the client's HTTP sessions: the headers and ``auth`` sent, what the server said
of them, and whether a session was opened with any.

Both majors' streamable HTTP clients lose the HTTP status of a refused request: mcp 1.x raises
``HTTPStatusError`` inside its transport's task group (the session sees a closed connection), mcp
2.x answers the request with -32603 "Server returned an error response". So the openers give the
HTTP client a response hook (:class:`HttpCredentials.hook`) that keeps the last refusal (401 or
403, cleared by a later success, e.g. once an OAuth provider has refreshed its token), and a
session that fails while one stands ends with :class:`ServerAuthError`. Nothing here keeps or
prints a header's value.

This module imports no SDK and no httpx.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Final

from ..errors import ServerAuthError
from .lost import leaves

__all__ = [
    "AUTH_STATUSES",
    "HttpCredentials",
    "auth_error_in",
    "credentialed",
    "is_credential_header",
    "sent_credentials",
]

AUTH_STATUSES: Final = (401, 403)

_CREDENTIAL_WORDS: Final = ("auth", "token", "key", "secret", "cookie", "session", "password")

_credentialed: ContextVar[bool] = ContextVar("mcp_tasks_compat_credentialed", default=False)


def is_credential_header(name: str) -> bool:
    """Whether a header named ``name`` carries a credential (``Authorization``, ``X-Api-Key``...)."""
    lowered = name.lower()
    return any(word in lowered for word in _CREDENTIAL_WORDS)


@dataclass
class HttpCredentials:
    """The headers and ``auth`` (an ``httpx.Auth``; on mcp 2.x an ``httpx2.Auth``) one HTTP session
    sends, and the last refusal its server answered."""

    headers: Mapping[str, str] = field(default_factory=lambda: dict[str, str]())
    auth: Any = None
    refused: int | None = None

    @property
    def given(self) -> bool:
        """Whether credentials are sent: an ``auth``, or a header that carries one."""
        return self.auth is not None or any(is_credential_header(name) for name in self.headers)

    async def hook(self, response: Any) -> None:
        """The HTTP client's response hook: keeps a 401/403, forgets it on a later success."""
        status: object = getattr(response, "status_code", None)
        if not isinstance(status, int):
            return
        if status in AUTH_STATUSES:
            self.refused = status
        elif status < 400:
            self.refused = None


def auth_error_in(
    error: BaseException, server: str, credentials: HttpCredentials | None
) -> ServerAuthError | None:
    """The :class:`ServerAuthError` ``error`` stands for: the session's last answer was a refusal,
    or (an opener of the caller's on mcp 1.x) the SDK's ``HTTPStatusError`` 401/403 is inside it."""
    found = leaves(error)
    for leaf in found:
        if isinstance(leaf, ServerAuthError):
            return leaf
    if credentials is not None and credentials.refused is not None:
        return ServerAuthError(server=server, status=credentials.refused)
    for leaf in found:
        if type(leaf).__name__ == "HTTPStatusError":
            status: object = getattr(getattr(leaf, "response", None), "status_code", None)
            if status in AUTH_STATUSES:
                assert isinstance(status, int)
                return ServerAuthError(server=server, status=status)
    return None


@contextmanager
def credentialed(given: bool) -> Generator[None]:
    """Within: the sessions opened here sent credentials (:func:`sent_credentials`)."""
    token = _credentialed.set(given or _credentialed.get())
    try:
        yield
    finally:
        _credentialed.reset(token)


def sent_credentials() -> bool:
    """Whether the session in use was opened with credentials (a "not found" then means another
    principal's task, or none, rather than another session's)."""
    return _credentialed.get()
