"""What ``start_tool`` sends: one ``tools/call`` per task, nothing else until someone follows it.

A batch submitter starts many long tasks and follows few (issue 27 §4), so a handle nobody
awaits must cost no request: no ``tools/list`` or ``server/discover`` per call, no ``tasks/get``,
and on 2026-07-28 no ``subscriptions/listen`` (a stream that re-opened for every started task,
asking for every id so far, would cost O(n) per task). Push covers a task once someone follows it,
and then asks for that task only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest

from mcp_tasks_compat._client_api import session_kwargs
from mcp_tasks_compat.client import call_tool, negotiate, start_tool
from mcp_tasks_compat.core._model import Task, TaskStatus
from mcp_tasks_compat.dialects import TASK_AT_ONCE_META_KEY

from .harness import KINDS, open_harness, text_of

pytestmark = pytest.mark.anyio

BOUND = 10.0
STARTED = 12
LISTEN = "subscriptions/listen"


@dataclass
class FirstStatuses:
    """``on_status`` of every handle: the statuses each task reported, by task id."""

    seen: dict[str, list[TaskStatus]] = field(default_factory=lambda: dict[str, list[TaskStatus]]())

    def __call__(self, task: Task) -> None:
        self.seen.setdefault(task.task_id, []).append(task.status)


@pytest.mark.parametrize("kind", KINDS)
async def test_starting_tasks_sends_only_their_calls(kind: str) -> None:
    requests: Counter[str] = Counter()
    statuses = FirstStatuses()
    async with open_harness(kind) as harness, harness.session(requests=requests) as session:
        with anyio.fail_after(BOUND):
            await negotiate(session)
            handshake = Counter(requests)
            runs = [
                await start_tool(session, "gated", {"label": str(i)}, on_status=statuses)
                for i in range(STARTED)
            ]
            # One round trip after the starts: anything they spawned in the background has run.
            assert (await runs[-1].status()) is not None
            sent = requests - handshake
            assert sent == Counter({"tools/call": STARTED, "tasks/get": 1}), sent
            # Each handle reported its first status to on_status, once.
            assert sorted(statuses.seen) == sorted(run.task_id for run in runs if run.task_id is not None)
            assert all(seen[0] is TaskStatus.WORKING for seen in statuses.seen.values())
            assert all(
                len(seen) == 1 for task_id, seen in statuses.seen.items() if task_id != runs[-1].task_id
            )
            # The handles still work: one followed to its result.
            harness.script.release.set()
            assert text_of(await runs[0].result()) == "done 0"


@pytest.mark.parametrize("kind", KINDS)
async def test_only_start_tool_on_a_2026_connection_asks_for_a_task_at_once(kind: str) -> None:
    # The hint is for a server that decides per call (2026-07-28; a 2025-11-25 call asks with
    # params.task already), and for start_tool only: call_tool waits for the result anyway.
    sent: list[tuple[str, Any]] = []
    async with open_harness(kind) as harness, harness.session(requests=Counter(), sent=sent) as session:
        harness.script.release.set()
        with anyio.fail_after(BOUND):
            run = await start_tool(session, "gated", {"label": "started"})
            assert text_of(await run.result()) == "done started"
            assert (
                text_of(await call_tool(session, "gated", {"label": "called"}, mode="task")) == "done called"
            )
    hints = [
        ((params or {}).get("_meta") or {}).get(TASK_AT_ONCE_META_KEY)
        for method, params in sent
        if method == "tools/call"
    ]
    assert hints == [True if harness.dialect == "2026-07-28" else None, None]


# --- 2026-07-28 push: a listen stream only for followed tasks (the project's server, mcp 2.x) ---


@dataclass
class Listens:
    """Server middleware: every request's method, and the ``taskIds`` each listen asked for."""

    methods: Counter[str] = field(default_factory=Counter[str])
    asked: list[list[str]] = field(default_factory=lambda: list[list[str]]())
    listening: anyio.Event = field(default_factory=anyio.Event)

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        self.methods[ctx.method] += 1
        if ctx.method == LISTEN:
            self.asked.append(list(((ctx.params or {}).get("notifications") or {}).get("taskIds") or []))
            self.listening.set()
        return await call_next(ctx)


@asynccontextmanager
async def pushing_server() -> AsyncIterator[tuple[Any, Listens, anyio.Event]]:
    pytest.importorskip("mcp.server.mcpserver", reason="needs mcp 2.x (MCPServer)")
    from mcp.client._memory import InMemoryTransport
    from mcp.client.session import ClientSession
    from mcp.server.mcpserver import MCPServer

    from mcp_tasks_compat._engine import PollPolicy
    from mcp_tasks_compat.server import ServerTasks

    listens = Listens()
    release = anyio.Event()
    minute_ms = 60_000  # a followed task is not polled within the bound: only push can end it
    tasks = ServerTasks(
        tools={"held": "optional"}, poll_policy=PollPolicy(minimum_ms=minute_ms, maximum_ms=minute_ms)
    )
    server = MCPServer("start-cost", **tasks.mcpserver_kwargs(middleware=[listens]))

    @server.tool()
    async def held(label: str) -> str:
        await release.wait()
        return f"done {label}"

    async with (
        InMemoryTransport(server) as (read, write),
        ClientSession(read, write, **session_kwargs(push=True)) as session,
    ):
        yield session, listens, release


@pytest.mark.mcp2
async def test_started_tasks_open_no_listen_stream_until_one_is_followed() -> None:
    async with pushing_server() as (session, listens, release):
        with anyio.fail_after(BOUND):
            runs = [await start_tool(session, "held", {"label": str(i)}) for i in range(STARTED)]
            assert all(run.dialect == "2026-07-28" and run.task_id is not None for run in runs)
            assert (await runs[-1].status()) is not None  # a round trip: background work has run
            assert listens.methods[LISTEN] == 0
            assert listens.methods["tools/call"] == STARTED

            followed = runs[3]
            async with anyio.create_task_group() as group:
                results: list[Any] = []

                async def follow() -> None:
                    results.append(await followed.result())

                group.start_soon(follow)
                await listens.listening.wait()
                release.set()
            assert text_of(results[0]) == "done 3"
    # The stream asked for the followed task only, not for every task started on the session.
    assert listens.asked == [[followed.task_id]]
    assert listens.methods["tasks/get"] == 1  # the status() above: the result came by push
