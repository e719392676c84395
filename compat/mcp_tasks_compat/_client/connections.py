"""Negotiate once per session: which task dialect a connection runs, and the per-session cache.

The adapters open the connection (``server/discover`` or ``initialize``, the SDK's business) and
report what they learnt as a :class:`Handshake`; :func:`decide` turns it into the
:class:`~.protocols.Negotiated` answer (the same rules and the same reasons on both majors), and
:class:`ConnectionCache` keeps one connection per session, negotiated by the first call that
needs it. After that a connection never asks which dialect it is on: the adapter built the
connection class of that dialect (the httpcore shape), over :class:`NegotiatedConnection`.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

import anyio

from .._detect import sdk_info
from ..core import _codec_2025 as codec_2025
from ..core import _codec_2026 as codec_2026
from ..dialects import DIALECT_2025_11_25, DIALECT_2026_07_28, TASKS_EXTENSION_ID, Dialect, TaskSupport
from ..errors import UnsupportedOptIn
from .plan import DeclaredSupport, declared_support
from .protocols import Negotiated

__all__ = ["ConnectionCache", "Handshake", "NegotiatedConnection", "PerSession", "decide", "negotiate"]

logger = logging.getLogger("mcp_tasks_compat.client")

SessionT = TypeVar("SessionT")
ConnectionT = TypeVar("ConnectionT")
ValueT = TypeVar("ValueT")


@dataclass(frozen=True)
class Handshake:
    """What an adapter learnt opening one connection, as plain values.

    ``modern``: opened with ``server/discover`` (a 2026-era protocol version). ``capabilities``:
    the server's, as wire JSON (``server/discover``'s or ``initialize``'s). ``wanted``: the dialects
    the session was built for (``session_kwargs(dialect=...)``), ``None`` for a session built
    without it. ``unavailable``: the dialects this install cannot run as a client, each with why.
    ``fallback``: why ``server/discover`` did not open the connection, when the adapter tried it.
    """

    protocol_version: str | None
    modern: bool
    capabilities: Mapping[str, Any]
    wanted: tuple[Dialect, ...] | None = None
    unavailable: Mapping[Dialect, str] = field(default_factory=dict[Dialect, str])
    fallback: str | None = None


def decide(handshake: Handshake) -> Negotiated:
    """The dialect ``handshake``'s connection runs, or why none (``tool_task_support`` not read yet)."""
    version, wanted, fallback = handshake.protocol_version, handshake.wanted, handshake.fallback
    if handshake.modern:
        if not codec_2026.server_offers_tasks(handshake.capabilities):
            return _inactive(version, f"the server did not declare {TASKS_EXTENSION_ID} in server/discover")
        if wanted is not None and DIALECT_2026_07_28 not in wanted:
            reason = "session_kwargs(dialect='2025-11-25') keeps tasks to handshake-era connections"
            if fallback:
                reason = f"{fallback}, so the connection is {version}; {reason}"
            else:
                reason += " (negotiate() opens such a session with initialize; this one was opened already)"
            return _inactive(version, reason, offers=True)
        if DIALECT_2026_07_28 in handshake.unavailable:
            return _inactive(version, handshake.unavailable[DIALECT_2026_07_28], offers=True)
        return Negotiated(version, DIALECT_2026_07_28, None, server_offers_tasks=True)
    prefix = f"{fallback}, so the connection uses the {version} handshake; " if fallback else ""
    if not codec_2025.server_offers_tool_tasks(handshake.capabilities):
        whose = "its" if prefix else "the server's"
        return _inactive(
            version, f"{prefix}{whose} initialize capabilities do not offer tasks for tools/call"
        )
    if DIALECT_2025_11_25 in handshake.unavailable:
        return _inactive(version, prefix + handshake.unavailable[DIALECT_2025_11_25], offers=True)
    if wanted is not None and DIALECT_2025_11_25 not in wanted:
        reason = f"{prefix}session_kwargs(dialect='2026-07-28') keeps tasks to the Tasks extension"
        return _inactive(version, reason, offers=True)
    return Negotiated(version, DIALECT_2025_11_25, None, server_offers_tasks=True)


async def negotiate(
    handshake: Handshake, list_tools: Callable[[], Awaitable[list[dict[str, Any]]]]
) -> Negotiated:
    """:func:`decide`, plus the tools' declared task support where the dialect declares it (2025-11-25)."""
    negotiated = decide(handshake)
    if negotiated.dialect != DIALECT_2025_11_25:
        return negotiated
    support = declared_support(await list_tools())
    return Negotiated(negotiated.protocol_version, negotiated.dialect, support, server_offers_tasks=True)


def _inactive(version: str | None, reason: str, *, offers: bool = False) -> Negotiated:
    logger.info("tasks are inactive on this connection: %s", reason)
    return Negotiated(version, None, None, server_offers_tasks=offers, reason=reason)


class NegotiatedConnection(Generic[SessionT]):
    """What every connection class of either adapter answers alike: what was negotiated, the
    installed SDK, and the tools' declared task support (listed again only for a tool not seen yet).

    A subclass per dialect (and a plain one) adds ``wire()`` and ``call()``; one that cannot run
    tasks although a dialect was negotiated says why in :meth:`task_readiness`.
    """

    sends_task_at_once: ClassVar[bool] = False
    """A class whose server decides per call whether a call becomes a task (2026-07-28) says
    ``True``: ``start_tool`` then asks for one at once (``dialects.TASK_AT_ONCE_META_KEY``)."""

    def __init__(
        self,
        session: SessionT,
        negotiated: Negotiated,
        list_tools: Callable[[], Awaitable[list[dict[str, Any]]]],
    ) -> None:
        self._session = session
        self._negotiated = negotiated
        self._tools = DeclaredSupport(negotiated.tool_task_support, list_tools)

    @property
    def negotiated(self) -> Negotiated:
        return self._negotiated

    @property
    def installed(self) -> str:
        return f"mcp {sdk_info().mcp_version}"

    def task_readiness(self) -> UnsupportedOptIn | None:
        return None

    async def tool_support(self, name: str) -> TaskSupport:
        return await self._tools.of(name)

    async def settle(self) -> None:
        """Nothing is owed by default: an SDK whose session tells the server what it gave up."""


class PerSession(Generic[SessionT, ValueT]):
    """A value kept with each session, that goes when the session goes.

    Kept on the session object itself (a private attribute): a ``WeakKeyDictionary`` keyed by the
    session would keep every session alive for good, since the value (a connection, a push link)
    refers back to its session. A session that takes no attributes (slots) falls back to such a
    dictionary, which then keeps it.
    """

    def __init__(self, name: str) -> None:
        self._attribute = f"_mcp_tasks_compat_{name}"
        self._fallback: weakref.WeakKeyDictionary[SessionT, ValueT] = weakref.WeakKeyDictionary()

    def get(self, session: SessionT) -> ValueT | None:
        found: ValueT | None = getattr(session, self._attribute, None)
        return found if found is not None else self._fallback.get(session)

    def set(self, session: SessionT, value: ValueT) -> ValueT:
        try:
            setattr(session, self._attribute, value)
        except AttributeError:
            self._fallback[session] = value
        return value


class ConnectionCache(Generic[SessionT, ConnectionT]):
    """One connection per live session, opened by the first caller (concurrent callers wait for
    it); it goes with its session (:class:`PerSession`)."""

    def __init__(self) -> None:
        self._connections = PerSession[SessionT, ConnectionT]("connection")
        self._locks: weakref.WeakKeyDictionary[SessionT, anyio.Lock] = weakref.WeakKeyDictionary()

    async def get(
        self, session: SessionT, open_connection: Callable[[], Awaitable[ConnectionT]]
    ) -> ConnectionT:
        """``session``'s connection; ``open_connection()`` makes it the first time."""
        cached = self._connections.get(session)
        if cached is not None:
            return cached
        async with self._locks.setdefault(session, anyio.Lock()):
            cached = self._connections.get(session)
            if cached is None:
                cached = self._connections.set(session, await open_connection())
            return cached
