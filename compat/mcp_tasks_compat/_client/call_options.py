"""A public call's options, normalised once: durations in seconds or ``timedelta``, checked, in
the units the wire and the guards want.

Every entry point that calls a tool (``client.call_tool``, ``client.start_tool``,
``client.resume``, ``TaskClientSession.call_tool``, ``ReconnectingClient``) builds one
:class:`CallOptions` with :meth:`CallOptions.of` and hands it down, so a default (the TTL asked,
the cancel grace) or a check (positive durations) cannot differ between them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Final

from ..core._model import DEFAULT_TTL_MS
from .protocols import CANCEL_GRACE_SECONDS

__all__ = [
    "DEFAULT_TTL_SECONDS",
    "TTL_MARGIN_SECONDS",
    "CallOptions",
    "Duration",
    "positive_seconds",
    "seconds",
]

Duration = float | timedelta
"""A duration option as callers give it: seconds, or a ``timedelta``."""

DEFAULT_TTL_SECONDS: Final = DEFAULT_TTL_MS / 1000  # an hour: the server's default TTL too
"""The TTL asked of a 2025-11-25 server when the caller names none (and no longer timeout needs more).

Finite on purpose: an unlimited (null) TTL does not round-trip through mcp 1.x, whose server
drops it and whose client then rejects every status notification of the task.
"""
TTL_MARGIN_SECONDS: Final = 60.0
"""How much longer than the call's ``timeout`` the default TTL keeps the task, so the server never
forgets a task its caller still waits for."""


def seconds(value: Duration | None) -> float | None:
    """Accept seconds or a ``timedelta`` for every duration option."""
    if value is None:
        return None
    if isinstance(value, timedelta):
        return value.total_seconds()
    return float(value)


def positive_seconds(name: str, value: Duration | None) -> float | None:
    """``value`` in seconds (``None`` stays ``None``); zero or less is a ``ValueError`` naming ``name``."""
    converted = seconds(value)
    if converted is not None and converted <= 0:
        raise ValueError(f"{name} must be positive, not {value!r}")
    return converted


def _ttl_ms(ttl: Duration | None, timeout_s: float | None) -> int:
    value = seconds(ttl)
    if value is None:
        value = (
            DEFAULT_TTL_SECONDS
            if timeout_s is None
            else max(DEFAULT_TTL_SECONDS, timeout_s + TTL_MARGIN_SECONDS)
        )
    if value <= 0:
        raise ValueError(f"ttl must be positive, not {ttl!r}")
    return round(value * 1000)


@dataclass(frozen=True)
class CallOptions:
    """How one tool call (or one followed task) is run, whatever the entry point; build it with :meth:`of`.

    ``timeout_s`` bounds the whole call (the task is cancelled past it); ``ttl_ms`` is asked of a
    2025-11-25 server (the Tasks extension leaves TTL to the server); ``cancel_grace_s`` bounds the
    best-effort ``tasks/cancel`` of a call that ends early; ``read_timeout_s`` bounds each
    request's answer (the SDK's ``read_timeout_seconds``). ``at_once``: the caller wants the task's
    id as soon as the server has one (a handle, or a task to resume after a lost connection), so
    the call carries the task-at-once hint where the connection's class sends it.
    """

    timeout_s: float | None = None
    ttl_ms: int = DEFAULT_TTL_MS
    cancel_grace_s: float = CANCEL_GRACE_SECONDS
    read_timeout_s: float | None = None
    at_once: bool = False

    @classmethod
    def of(
        cls,
        *,
        timeout: Duration | None = None,
        ttl: Duration | None = None,
        cancel_grace: Duration = CANCEL_GRACE_SECONDS,
        read_timeout_seconds: Duration | None = None,
        at_once: bool = False,
    ) -> CallOptions:
        """The options of a public call, from its keywords (the names errors use).

        Each duration is seconds or a ``timedelta`` and must be positive (``ValueError``
        otherwise, before anything is sent). ``ttl`` defaults to an hour, or ``timeout`` plus a
        minute if longer.
        """
        grace = positive_seconds("cancel_grace", cancel_grace)
        if grace is None:
            raise ValueError("cancel_grace must be positive, not None")
        overall = positive_seconds("timeout", timeout)
        return cls(
            timeout_s=overall,
            ttl_ms=_ttl_ms(ttl, overall),
            cancel_grace_s=grace,
            read_timeout_s=positive_seconds("read_timeout_seconds", read_timeout_seconds),
            at_once=at_once,
        )
