"""One call, one set of options: every entry point normalises its options once
(``_client.CallOptions``), so ``ReconnectingClient`` asks the server for what
``TaskClientSession.call_tool`` and ``start_tool`` ask.

Observed on the project's own server, over the SDK's in-memory JSON-RPC streams: its tool records
what it sees of its own call from its first line (``current_call()``): the TTL its task was
granted (the server's TTL floor is 0, so the TTL the client asked) and whether the call was a task
from the start (the task-at-once hint on 2026-07-28, where the inline grace would otherwise answer
a quick tool plainly).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import anyio
import pytest

from mcp_tasks_compat._adapters import get_adapter
from mcp_tasks_compat._client import CallOptions
from mcp_tasks_compat._detect import sdk_info
from mcp_tasks_compat.client import (
    ReconnectingClient,
    TaskClientSession,
    call_tool,
    connect_in_memory,
    negotiate,
    start_tool,
)
from mcp_tasks_compat.dialects import DIALECT_2025_11_25, Dialect
from mcp_tasks_compat.server import TaskServer, current_call

pytestmark = pytest.mark.anyio

BOUND_S = 30.0
HOUR_MS = 3_600_000
TWO_HOURS_S = 7200.0
MINUTE_MS = 60_000
GRACE_LONGER_THAN_THE_TEST_S = 60.0
"""The 2026-07-28 inline grace: a quick call without the hint is answered plainly, never a task."""


@dataclass(frozen=True)
class Seen:
    """What the tool saw of its own call, at its first line."""

    task_at_once: bool
    """The call was a task from the start."""
    ttl_ms: int | None
    """The TTL its task was granted (``None``: no task)."""


def observing_server(seen: list[Seen]) -> TaskServer:
    server = TaskServer(
        "call-options", ttl_floor_ms=0, default_ttl_ms=HOUR_MS, inline_grace_s=GRACE_LONGER_THAN_THE_TEST_S
    )

    @server.tool(task="optional")
    async def observe() -> str:
        task = current_call().task
        seen.append(Seen(task_at_once=task is not None, ttl_ms=task.ttl_ms if task is not None else None))
        return "seen"

    return server


@asynccontextmanager
async def task_client_session(server: TaskServer, dialect: Dialect | None = None) -> AsyncIterator[Any]:
    async with (
        get_adapter().app.in_memory_streams(server.sdk_server) as (read, write),
        TaskClientSession(read, write, dialect=dialect) as session,
    ):
        await negotiate(session)
        yield session


@pytest.mark.parametrize("dialect", sdk_info().client_dialects)
async def test_reconnecting_client_asks_the_ttl_of_call_tool_and_the_task_at_once_of_start_tool(
    dialect: Dialect,
) -> None:
    seen: list[Seen] = []
    server = observing_server(seen)
    with anyio.fail_after(BOUND_S):
        async with task_client_session(server, dialect) as session:
            await session.call_tool("observe", {})
            await session.call_tool("observe", {}, timeout=timedelta(seconds=TWO_HOURS_S))
            by_session = list(seen)
            seen.clear()
            async with await start_tool(session, "observe", {}) as run:
                await run.result()
            by_start_tool = list(seen)
            seen.clear()
        client = ReconnectingClient(lambda: connect_in_memory(server, dialect=dialect))
        await client.call_tool("observe", {})
        await client.call_tool("observe", {}, timeout=TWO_HOURS_S)
        by_reconnecting_client = list(seen)

    if dialect == DIALECT_2025_11_25:  # params.task carries the TTL: an hour, or the timeout plus a minute
        asked = [HOUR_MS, round(TWO_HOURS_S * 1000) + MINUTE_MS]
        assert by_session == [Seen(task_at_once=True, ttl_ms=ttl) for ttl in asked]
        # Before, it asked none: the server's default (an hour here) ended a task its caller still awaited.
        assert by_reconnecting_client == by_session
        assert by_start_tool == [Seen(task_at_once=True, ttl_ms=HOUR_MS)]
    else:  # the Tasks extension leaves the TTL to the server; the hint makes a quick call a task
        assert [entry.task_at_once for entry in by_session] == [False, False]  # answered within the grace
        assert [entry.task_at_once for entry in by_start_tool] == [True]
        assert [entry.task_at_once for entry in by_reconnecting_client] == [True, True]  # no hint before


async def test_every_entry_point_refuses_the_same_durations() -> None:
    """The checks live in one place: a bad duration is the same ``ValueError`` everywhere, before
    anything is sent."""
    server = observing_server([])
    client = ReconnectingClient(lambda: connect_in_memory(server))
    with anyio.fail_after(BOUND_S):
        async with task_client_session(server) as session:
            for call in (
                lambda: call_tool(session, "observe", {}, timeout=0),
                lambda: session.call_tool("observe", {}, timeout=-1.0),
                lambda: client.call_tool("observe", {}, timeout=0),
                lambda: client.result("any-task", timeout=-1.0),
            ):
                with pytest.raises(ValueError, match="timeout must be positive"):
                    await call()
            with pytest.raises(ValueError, match="cancel_grace must be positive"):
                await start_tool(session, "observe", {}, cancel_grace=timedelta(0))


def test_call_options_are_normalised_once() -> None:
    options = CallOptions.of(
        timeout=timedelta(minutes=2), cancel_grace=timedelta(milliseconds=500), read_timeout_seconds=5
    )
    assert options == CallOptions(
        timeout_s=120.0, ttl_ms=HOUR_MS, cancel_grace_s=0.5, read_timeout_s=5.0, at_once=False
    )
    assert CallOptions.of(ttl=timedelta(minutes=5), timeout=TWO_HOURS_S).ttl_ms == 300_000  # asked wins
    with pytest.raises(ValueError, match="ttl must be positive"):
        CallOptions.of(ttl=0)
    with pytest.raises(ValueError, match="read_timeout_seconds must be positive"):
        CallOptions.of(read_timeout_seconds=timedelta(seconds=-1))
