"""A closed session is not kept alive by the library: its connection and push link go with it.

An application that opens a session per call (and ``ReconnectingClient``, one per reconnect)
would otherwise hold every session it ever opened, with its streams and task group: the
per-session connection was kept in a dictionary keyed weakly by the session, but the connection
refers back to its session, so no entry ever went.
"""

from __future__ import annotations

import gc
import weakref

import anyio
import pytest

from mcp_tasks_compat._testkit.sessions import connect_in_memory
from mcp_tasks_compat.client import call_tool, start_tool
from mcp_tasks_compat.testing import build_task_server, dialects

pytestmark = pytest.mark.anyio

BOUND = 20.0
SESSIONS = 3


@pytest.mark.parametrize("dialect", dialects())
async def test_closed_sessions_are_not_kept_alive(dialect: str) -> None:
    server = build_task_server()
    gone: list[weakref.ref[object]] = []
    with anyio.fail_after(BOUND):
        for _ in range(SESSIONS):
            async with connect_in_memory(server, dialect=dialect) as session:
                # a followed task: the connection, its wire and (2026-07-28) the push link are made
                await call_tool(session, "slow_echo", {"text": "x", "seconds": 0.05, "steps": 1}, mode="task")
                run = await start_tool(session, "slow_echo", {"text": "y", "seconds": 0.05, "steps": 1})
                await run.result()
                gone.append(weakref.ref(session))
                del session, run
    gc.collect()
    alive = [ref for ref in gone if ref() is not None]
    assert not alive, f"{len(alive)} of {SESSIONS} closed sessions are still referenced: {_referrers(alive)}"


def _referrers(refs: list[weakref.ref[object]]) -> list[str]:
    """What holds the first live session, for the failure message."""
    held = refs[0]()
    return sorted({type(holder).__name__ for holder in gc.get_referrers(held)}) if held is not None else []
