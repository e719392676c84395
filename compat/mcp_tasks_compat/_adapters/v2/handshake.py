"""mcp 2.x client: opening a connection and reading what it negotiated.

``server/discover`` first (2026-07-28), else ``initialize`` (2025-11-25); the answer and the
session's config (:func:`.session_config.config_of`) reported as a :class:`.._client.Handshake`,
from which :mod:`.._client.connections` decides which task dialect this connection runs, or why
none (the :class:`.._client.Negotiated` that :func:`.client.connection` builds its connection on).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import anyio
import mcp_types
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError
from mcp_types import UNSUPPORTED_PROTOCOL_VERSION
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from ..._client import Handshake, Negotiated
from ..._client import negotiate as negotiate_once
from ..._detect import sdk_info
from ...dialects import DIALECT_2025_11_25, Dialect
from ..shared import list_all_tools
from .session_config import config_of

__all__ = ["list_tools", "negotiate"]


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


async def negotiate(session: ClientSession, discover_timeout: float) -> Negotiated:
    """Open the connection where the caller has not; :mod:`.._client.connections` decides what it runs."""
    fallback: str | None = None
    config = config_of(session)
    if session.protocol_version is None:
        if config is not None and config.dialects == (DIALECT_2025_11_25,):
            fallback = await _handshake_pinned_2025(session)
        else:
            fallback = await _handshake(session, discover_timeout)
    version = session.protocol_version
    unavailable: dict[Dialect, str] = {}
    if DIALECT_2025_11_25 not in sdk_info().client_dialects:
        unavailable[DIALECT_2025_11_25] = (
            f"mcp {sdk_info().mcp_version} lacks the private seam v2.raw_request that "
            "2025-11-25 tasks need on mcp 2.x"
        )
    handshake = Handshake(
        version,
        modern=version in MODERN_PROTOCOL_VERSIONS,
        capabilities=_capabilities(session),
        wanted=config.dialects if config is not None else None,
        unavailable=unavailable,
        fallback=fallback,
    )
    return await negotiate_once(handshake, lambda: list_tools(session))
