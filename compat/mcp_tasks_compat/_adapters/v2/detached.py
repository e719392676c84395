"""What a task's run keeps of the ``tools/call`` request that started it (mcp 2.x).

A run can outlive its request by hours, and the SDK's request objects reach far: the
``ServerSession`` the SDK builds per request holds the request's dispatch context, which on
streamable HTTP holds the starlette request (ASGI scope, body, receive channel) and the response
stream. :func:`detach_request` gives the run a request context of its own: the same connection,
lifespan value, ids, ``_meta`` and headers, and a new ``ServerSession`` whose request-scoped
channel is an :class:`ExchangeChannel`. That channel forwards to the request's own while the
exchange is open (a call inside the inline grace still streams its notifications to the caller)
and, once :meth:`DetachedRequest.end` is called (the create answer is being sent), answers as the
SDK's own dispatch contexts do once their request has finished: notifications and progress are
dropped, server-to-client requests raise ``NoBackChannelError``.

On 2026-07-28 the SDK builds a ``Connection`` per request (``Connection.from_envelope``) and
tears it down when the request ends; the run gets a :class:`RunConnection` copy, which shares the
connection's values and, after the exchange, makes the event and exit stack a run rarely touches
only on first use. The HTTP headers the run keeps are the same pairs, shared with earlier requests
that sent the same ones (:func:`..shared.compact_headers`).

Reading the session's connection and request channel is a private seam (``ServerSession`` has
no public accessor for either); it is probed on each use, and without it the run keeps the
request's whole session, as before (more memory per task, nothing else changes).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import replace
from typing import Any, cast

import anyio
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.shared.dispatcher import CallOptions, DispatchContext
from mcp.shared.exceptions import NoBackChannelError
from mcp.shared.transport_context import TransportContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..shared import DetachedHttpRequest, compact_headers

__all__ = [
    "DetachedRequest",
    "ExchangeChannel",
    "RunConnection",
    "detach_request",
    "session_parts",
]

logger = logging.getLogger("mcp_tasks_compat.server")


class ExchangeChannel:
    """A request-scoped channel that outlives its request: the SDK's while open, closed after.

    Structurally a ``mcp.shared.dispatcher.DispatchContext``. After :meth:`end` it holds only the
    request id and the transport metadata (kind, headers).
    """

    __slots__ = ("_cancel_requested", "_live", "request_id", "transport")

    def __init__(self, live: DispatchContext[Any], transport: TransportContext) -> None:
        self._live: DispatchContext[Any] | None = live
        self.transport = transport
        self.request_id = live.request_id
        self._cancel_requested: anyio.Event | None = None

    def end(self) -> None:
        """The exchange is over: stop forwarding, and let go of the SDK's channel."""
        self._live = None

    @property
    def can_send_request(self) -> bool:
        return self._live.can_send_request if self._live is not None else False

    @property
    def message_metadata(self) -> Any:
        return self._live.message_metadata if self._live is not None else None

    @property
    def cancel_requested(self) -> anyio.Event:
        """The request's own event while open; after, one that is never set (``tasks/cancel``
        stops a task, not ``notifications/cancelled`` of a request already answered)."""
        if self._live is not None:
            return self._live.cancel_requested
        if self._cancel_requested is None:
            self._cancel_requested = anyio.Event()
        return self._cancel_requested

    async def notify(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> None:
        if self._live is None:
            logger.debug("dropped %s: the request that started this task was already answered", method)
            return
        await self._live.notify(method, params, opts)

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> dict[str, Any]:
        if self._live is None:
            raise NoBackChannelError(method)
        return await self._live.send_raw_request(method, params, opts)

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        if self._live is not None:
            await self._live.progress(progress, total, message)


_OUTBOUND_SHAPE = ("transport", "request_id", "notify", "send_raw_request")
_outbound_kinds: dict[type, bool] = {}
"""Per class of request channel: whether it has the shape the run's channel forwards to (checked
once per class: ``transport`` is a property that copies the channel's metadata on every read)."""


def session_parts(session: ServerSession) -> tuple[DispatchContext[Any], Connection] | None:
    """The request channel and the connection of an SDK session, or ``None`` if the SDK changed.

    Private attributes (``_request_outbound``, ``_connection``), read and type-checked here only.
    """
    outbound = getattr(session, "_request_outbound", None)
    connection = getattr(session, "_connection", None)
    if outbound is None or not isinstance(connection, Connection):
        return None
    kind: type = type(cast(object, outbound))
    fits = _outbound_kinds.get(kind)
    if fits is None:
        fits = _outbound_kinds[kind] = all(hasattr(outbound, name) for name in _OUTBOUND_SHAPE)
    return (outbound, connection) if fits else None


class RunConnection(Connection):
    """A run's copy of a request's own ``Connection`` (2026-07-28, where each request has one).

    It shares the connection's values (protocol version, client capabilities and info, outbound
    channel, ``state``). While the exchange is open, ``initialized`` and ``exit_stack`` are the
    request connection's, so a cleanup a tool pushes inside the grace is unwound with the request,
    as the SDK does. Once the exchange ends (:meth:`end`), the SDK has torn that connection down,
    and a cleanup pushed later would never run on it either; the copy then makes its own event
    (set: the connection was born ready) and exit stack on first use, and lets go of the original.
    """

    _LAZY = ("initialized", "exit_stack")

    def __init__(self, origin: Connection) -> None:
        # Not Connection.__init__: that would make the event and exit stack this copy defers.
        for name, value in vars(origin).items():
            if name not in self._LAZY:
                object.__setattr__(self, name, value)
        self._origin: Connection | None = origin

    def end(self) -> None:
        """The request's exchange is over: the SDK tears its connection down; let go of it."""
        self._origin = None

    def __getattr__(self, name: str) -> Any:
        # Only reached for the two deferred attributes (and names that do not exist at all).
        if name not in RunConnection._LAZY:
            raise AttributeError(name)
        origin = self.__dict__.get("_origin")
        if origin is not None:
            return getattr(origin, name)
        if name == "initialized":
            made: Any = anyio.Event()
            made.set()
        else:
            made = AsyncExitStack()
        object.__setattr__(self, name, made)
        return made

    @classmethod
    def can_copy(cls, connection: Connection) -> bool:
        """Whether ``connection``'s attributes are the ones this copy knows how to defer."""
        fields = vars(connection)
        return all(name in fields for name in cls._LAZY)


class DetachedRequest:
    """The request context a run sees (:attr:`context`), and the switch that ends its exchange."""

    __slots__ = ("_channel", "_connection", "context")

    def __init__(
        self,
        context: ServerRequestContext[Any, Any],
        channel: ExchangeChannel | None,
        connection: RunConnection | None = None,
    ) -> None:
        self.context = context
        self._channel = channel
        self._connection = connection

    def end(self) -> None:
        """The answer to the request is being sent: the run lets go of the request's channel."""
        if self._channel is not None:
            self._channel.end()
        if self._connection is not None:
            self._connection.end()


_warned_no_seam = False


def detach_request(ctx: ServerRequestContext[Any, Any]) -> DetachedRequest:
    """The request context a task's run sees: the request's, minus what ends with the exchange.

    Kept: the connection (client capabilities and info; on 2025-11-25 its standalone channel),
    the lifespan value, protocol version, method, params, request id and ``_meta``, and the HTTP
    headers. Replaced: the session, by one on the same connection whose request channel is an
    :class:`ExchangeChannel`. Dropped: the HTTP request object and the SSE stream-close callbacks
    of a response already sent.
    """
    global _warned_no_seam
    headers = compact_headers(getattr(ctx.request, "headers", None))
    parts = session_parts(ctx.session)
    channel: ExchangeChannel | None = None
    run_connection: RunConnection | None = None
    session = ctx.session
    if parts is not None:
        outbound, connection = parts
        channel = ExchangeChannel(outbound, _transport_with(outbound.transport, headers))
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS and RunConnection.can_copy(connection):
            # The request's own connection (from_envelope): torn down when the request ends.
            connection = run_connection = RunConnection(connection)
        session = ServerSession(
            channel, connection, request_meta=ctx.meta if ctx.request_id is not None else None
        )
    elif not _warned_no_seam:
        _warned_no_seam = True
        logger.warning(
            "mcp-tasks-compat: this mcp release's ServerSession has no _request_outbound/_connection; "
            "a task's run keeps its request's whole session (more memory per task, nothing else changes)"
        )
    detached = replace(
        ctx,
        session=session,
        request=None if headers is None else DetachedHttpRequest(headers),
        close_sse_stream=None,
        close_standalone_sse_stream=None,
    )
    return DetachedRequest(detached, channel, run_connection)


def _transport_with(transport: TransportContext, headers: Any) -> TransportContext:
    """The transport metadata with the run's (compacted) copy of the request's headers."""
    if headers is None or transport.headers is None:
        return transport
    return replace(transport, headers=headers)
