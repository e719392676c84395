"""A session's SDK-shaped ``call_tool(...)``: the one body of ``TaskClientSession.call_tool`` and
``TaskSessionWrapper.call_tool``, with the session's defaults and its ``progress_callback``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, NamedTuple, Protocol

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
    call_tool: Callable[..., Awaitable[Any]], session: object, defaults: CallDefaults, call: SessionCall
) -> Any:
    """A session's SDK-shaped ``call_tool(...)`` as the public ``call_tool`` (passed in: this layer
    cannot import it): the session's defaults applied, ``progress_callback`` passed as its
    ``on_progress`` (which hears a task's statuses where no ``on_status`` is given:
    :func:`~.progress.call_progress`), and the SDK's own ``call_tool`` keywords (``sdk_options``)
    passed on for the adapter to honour.
    """
    status = call.on_status if call.on_status is not None else defaults.task_on_status
    return await call_tool(
        session,
        call.name,
        call.arguments,
        mode=call.mode or defaults.task_mode,
        on_status=status,
        on_progress=call.progress_callback,
        read_timeout_seconds=call.read_timeout_seconds,
        timeout=call.timeout,
        ttl=call.ttl,
        meta=dict(call.meta) if call.meta else None,
        **(call.sdk_options or {}),
    )
