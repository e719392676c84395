"""What a connection runs, decided once from its handshake, without the SDK (``_client.connections``)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcp_tasks_compat._client import ConnectionCache, Handshake, decide, negotiate
from mcp_tasks_compat.dialects import TASKS_EXTENSION_ID

OFFERS_2026 = {"extensions": {TASKS_EXTENSION_ID: {}}}
OFFERS_2025 = {"tasks": {"requests": {"tools": {"call": {}}}}}
SEAM = "mcp 2.9 lacks the private seam v2.raw_request that 2025-11-25 tasks need on mcp 2.x"


@pytest.mark.parametrize(
    ("handshake", "dialect", "reason"),
    [
        (Handshake("2026-07-28", modern=True, capabilities=OFFERS_2026), "2026-07-28", None),
        (
            Handshake("2026-07-28", modern=True, capabilities={}),
            None,
            f"the server did not declare {TASKS_EXTENSION_ID} in server/discover",
        ),
        (
            Handshake("2026-07-28", modern=True, capabilities=OFFERS_2026, wanted=("2025-11-25",)),
            None,
            "session_kwargs(dialect='2025-11-25') keeps tasks to handshake-era connections "
            "(negotiate() opens such a session with initialize; this one was opened already)",
        ),
        (
            Handshake(
                "2026-07-28",
                modern=True,
                capabilities=OFFERS_2026,
                wanted=("2025-11-25",),
                fallback="the server refused initialize (-32022: nope)",
            ),
            None,
            "the server refused initialize (-32022: nope), so the connection is 2026-07-28; "
            "session_kwargs(dialect='2025-11-25') keeps tasks to handshake-era connections",
        ),
        (Handshake("2025-11-25", modern=False, capabilities=OFFERS_2025), "2025-11-25", None),
        (
            Handshake("2025-11-25", modern=False, capabilities={}),
            None,
            "the server's initialize capabilities do not offer tasks for tools/call",
        ),
        (
            Handshake("2025-11-25", modern=False, capabilities={}, fallback="server/discover was refused"),
            None,
            "server/discover was refused, so the connection uses the 2025-11-25 handshake; "
            "its initialize capabilities do not offer tasks for tools/call",
        ),
        (
            Handshake("2025-11-25", modern=False, capabilities=OFFERS_2025, unavailable={"2025-11-25": SEAM}),
            None,
            SEAM,
        ),
        (
            Handshake("2025-11-25", modern=False, capabilities=OFFERS_2025, wanted=("2026-07-28",)),
            None,
            "session_kwargs(dialect='2026-07-28') keeps tasks to the Tasks extension",
        ),
    ],
)
def test_the_dialect_or_why_none(handshake: Handshake, dialect: str | None, reason: str | None) -> None:
    negotiated = decide(handshake)
    assert (negotiated.dialect, negotiated.reason) == (dialect, reason)
    assert negotiated.protocol_version == handshake.protocol_version


@pytest.mark.anyio
async def test_tools_are_listed_only_where_the_dialect_declares_task_support() -> None:
    listings: list[str] = []

    async def list_tools() -> list[dict[str, Any]]:
        listings.append("listed")
        return [{"name": "slow", "execution": {"taskSupport": "required"}}, {"name": "quick"}]

    modern = await negotiate(Handshake("2026-07-28", modern=True, capabilities=OFFERS_2026), list_tools)
    assert (modern.tool_task_support, listings) == (None, [])
    handshake_era = await negotiate(
        Handshake("2025-11-25", modern=False, capabilities=OFFERS_2025), list_tools
    )
    assert handshake_era.tool_task_support == {"slow": "required", "quick": "forbidden"}
    assert listings == ["listed"]


@pytest.mark.anyio
async def test_concurrent_first_uses_of_a_session_open_one_connection() -> None:
    class Session:
        """Any weak-referenceable object stands for a session."""

    cache: ConnectionCache[Session, object] = ConnectionCache()
    session, opened, handshake_done = Session(), list[object](), anyio.Event()

    async def open_connection() -> object:
        await handshake_done.wait()  # a handshake in flight while the others ask
        opened.append(object())
        return opened[-1]

    got: list[object] = []

    async def use() -> None:
        got.append(await cache.get(session, open_connection))

    async with anyio.create_task_group() as group:
        for _ in range(5):
            group.start_soon(use)
        await anyio.wait_all_tasks_blocked()
        handshake_done.set()
    assert len(opened) == 1
    assert got == opened * 5
