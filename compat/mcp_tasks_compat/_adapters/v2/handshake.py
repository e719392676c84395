"""mcp 2.x client: opening a connection and reading what it negotiated.

``server/discover`` first (2026-07-28), else ``initialize`` (2025-11-25), and from the answer and
the session's config (:func:`.session_config.config_of`) which task dialect this connection runs,
or why none: the :class:`.._client.Negotiated` that :func:`.client.connection` caches.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, cast

import anyio
import mcp_types
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError
from mcp_types import UNSUPPORTED_PROTOCOL_VERSION
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from ... import _client as client_logic
from ..._detect import sdk_info
from ...core import codec_2025, codec_2026
from ...dialects import DIALECT_2025_11_25, DIALECT_2026_07_28, TASKS_EXTENSION_ID
from ..shared import list_all_tools
from .session_config import config_of

__all__ = ["list_tools", "negotiate"]

logger = logging.getLogger("mcp_tasks_compat.client")


async def list_tools(session: ClientSession) -> list[dict[str, Any]]:
    """Every tool (all pages) as wire JSON."""

    async def page(cursor: str | None) -> dict[str, Any]:
        params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
        listing = await session.list_tools(params=params)
        return listing.model_dump(by_alias=True, mode="json", exclude_none=True)

    return await list_all_tools(page)


def _capabilities(session: ClientSession) -> dict[str, Any]:
    caps = session.server_capabilities
    return caps.model_dump(by_alias=True, mode="json", exclude_none=True) if caps is not None else {}


async def _handshake(session: ClientSession, discover_timeout: float) -> str | None:
    """``server/discover`` first (time-bounded), else ``initialize``; returns why discover did not win."""
    try:
        with anyio.fail_after(discover_timeout):
            await session.discover()
        return None
    except TimeoutError:
        reason = f"server/discover got no answer within {discover_timeout:g} s"
    except MCPError as error:
        if error.code == UNSUPPORTED_PROTOCOL_VERSION:
            data: object = error.data
            supported = (
                cast("Mapping[str, object]", data).get("supported") if isinstance(data, Mapping) else None
            )
            if isinstance(supported, list) and not any(v in HANDSHAKE_PROTOCOL_VERSIONS for v in supported):  # pyright: ignore[reportUnknownVariableType]
                raise  # a modern-only server sharing no version with this client: a real incompatibility
        reason = f"server/discover was refused ({error.code}: {error.message})"
    except (RuntimeError, ValidationError) as error:
        reason = f"server/discover named no protocol version this client speaks ({error})"
    try:
        await session.initialize()
    except MCPError as error:
        if error.code != UNSUPPORTED_PROTOCOL_VERSION:
            raise
        # The unanswered probe locked the connection modern after all: ask once more, unbounded.
        await session.discover()
        return None
    return reason


async def _handshake_pinned_2025(session: ClientSession) -> str | None:
    """``session_kwargs(dialect="2025-11-25")``: ``initialize`` first, as a handshake-era client would.

    A server that speaks both eras would otherwise win ``server/discover`` and leave the pinned
    dialect inactive. A modern-only server refuses ``initialize`` with -32022; the connection is
    then opened with ``server/discover`` and runs plain calls, saying why.
    """
    try:
        await session.initialize()
    except MCPError as error:
        if error.code != UNSUPPORTED_PROTOCOL_VERSION:
            raise
        await session.discover()
        return f"the server refused initialize ({error.code}: {error.message})"
    return None


async def negotiate(session: ClientSession, discover_timeout: float) -> client_logic.Negotiated:
    fallback_reason: str | None = None
    config = config_of(session)
    if session.protocol_version is None:
        if config is not None and config.dialects == (DIALECT_2025_11_25,):
            fallback_reason = await _handshake_pinned_2025(session)
        else:
            fallback_reason = await _handshake(session, discover_timeout)
    version = session.protocol_version
    caps = _capabilities(session)
    if version in MODERN_PROTOCOL_VERSIONS:
        offers = codec_2026.server_offers_tasks(caps)
        if not offers:
            reason = f"the server did not declare {TASKS_EXTENSION_ID} in server/discover"
            return _inactive(version, reason, offers=False)
        if config is not None and DIALECT_2026_07_28 not in config.dialects:
            reason = "session_kwargs(dialect='2025-11-25') keeps tasks to handshake-era connections"
            if fallback_reason:
                reason = f"{fallback_reason}, so the connection is {version}; {reason}"
            else:
                reason += " (negotiate() opens such a session with initialize; this one was opened already)"
            return _inactive(version, reason, offers=True)
        return client_logic.Negotiated(version, DIALECT_2026_07_28, None, server_offers_tasks=True)
    prefix = f"{fallback_reason}, so the connection uses the {version} handshake; " if fallback_reason else ""
    offers = codec_2025.server_offers_tool_tasks(caps)
    if not offers:
        return _inactive(
            version, f"{prefix}its initialize capabilities do not offer tasks for tools/call", offers=False
        )
    if DIALECT_2025_11_25 not in sdk_info().client_dialects:
        reason = (
            f"{prefix}mcp {sdk_info().mcp_version} lacks the private seam v2.raw_request that "
            "2025-11-25 tasks need on mcp 2.x"
        )
        return _inactive(version, reason, offers=True)
    if config is not None and DIALECT_2025_11_25 not in config.dialects:
        reason = f"{prefix}session_kwargs(dialect='2026-07-28') keeps tasks to the Tasks extension"
        return _inactive(version, reason, offers=True)
    support = client_logic.declared_support(await list_tools(session))
    return client_logic.Negotiated(
        version, DIALECT_2025_11_25, support, server_offers_tasks=True, reason=None
    )


def _inactive(version: str | None, reason: str, *, offers: bool) -> client_logic.Negotiated:
    logger.info("tasks are inactive on this connection: %s", reason)
    return client_logic.Negotiated(version, None, None, server_offers_tasks=offers, reason=reason)
