"""A session's SDK-shaped ``call_tool(...)``: the one body of ``TaskClientSession.call_tool`` and
``TaskSessionWrapper.call_tool``, with the session's defaults, its ``progress_callback`` and the
call's options normalised (:class:`~.call_options.CallOptions`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, NamedTuple, Protocol

from .call_options import CallOptions
from .protocols import OnProgress, OnStatus

__all__ = ["CallDefaults", "SessionCall", "call_with_defaults"]


class CallDefaults(Protocol):
    """The defaults a task-running session keeps for its calls (``mode=``, ``on_status=``)."""

    @property
    def task_mode(self) -> str: ...

    @property
    def task_on_status(self) -> OnStatus | None: ...


class SessionCall(NamedTuple):
    """The arguments of a session's SDK-shaped ``call_tool(...)``, in its order."""

    name: str
    arguments: dict[str, Any] | None
    read_timeout_seconds: Any
    progress_callback: OnProgress | None
    meta: Mapping[str, Any] | None
    mode: str | None
    on_status: OnStatus | None
    timeout: Any
    ttl: Any
    sdk_options: Mapping[str, Any] | None = None


async def call_with_defaults(
    call_tool_with: Callable[..., Awaitable[Any]], session: object, defaults: CallDefaults, call: SessionCall
) -> Any:
    """A session's SDK-shaped ``call_tool(...)`` as the public layer's ``call_tool_with`` (passed
    in: this layer cannot import it): the call's options normalised once (``read_timeout_seconds``
    a ``timedelta`` on mcp 1.x, seconds on 2.x), the session's defaults applied,
    ``progress_callback`` passed as its ``on_progress`` (which hears a task's statuses where no
    ``on_status`` is given: :func:`~.progress.call_progress`), and the SDK's own ``call_tool``
    keywords (``sdk_options``) passed on for the adapter to honour.
    """
    options = CallOptions.of(
        timeout=call.timeout, ttl=call.ttl, read_timeout_seconds=call.read_timeout_seconds
    )
    status = call.on_status if call.on_status is not None else defaults.task_on_status
    return await call_tool_with(
        session,
        call.name,
        call.arguments,
        options,
        mode=call.mode or defaults.task_mode,
        on_status=status,
        on_progress=call.progress_callback,
        meta=dict(call.meta) if call.meta else None,
        **(call.sdk_options or {}),
    )
