"""mcp 2.x, ``mcp.Client(server, extensions=[tasks_extension()])``: a task pushed, its statuses reported.

The route mcp.Client users, fastmcp 4 and pydantic-ai take. The server is the project's
(``MCPServer`` with ``ServerTasks``), its requests counted by a middleware of the test, and its
tool advances one step at a time, each step only once the client has reported the one before,
and after its first step holds until the test releases it, :data:`HOLD_SECONDS` later: a client
that polled would fill that time with reads (its poll hint is 20 ms, the client's floor at most
100 ms; about 30 in a second), one that follows the listen stream makes none. A server that does
not push is followed by polling, and the client says why.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest

from mcp_tasks_compat._client_api import tasks_extension
from mcp_tasks_compat._engine import PollPolicy
from mcp_tasks_compat.core._model import Task
from mcp_tasks_compat.server import ServerTasks, report_status

from .harness import text_of

pytestmark = [pytest.mark.anyio, pytest.mark.mcp2]

pytest.importorskip("mcp.server.mcpserver", reason="needs mcp 2.x (mcp.Client, MCPServer)")

import mcp  # noqa: E402 - after the skip, mcp 2.x
from mcp.server.mcpserver import MCPServer  # noqa: E402

BOUND = 10.0
STEPS = 5
LISTEN = "subscriptions/listen"
MAX_READS = 3
HOLD_SECONDS = 1.0
"""How long the task runs on after its first step (its length, not a synchronisation: the order
of everything is set by events; polling would show as reads in this time)."""


@dataclass
class Counted:
    """The server's requests, by method (outermost middleware: it sees every request)."""

    methods: Counter[str] = field(default_factory=Counter[str])

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        self.methods[ctx.method] += 1
        return await call_next(ctx)


@dataclass
class SteppedApp:
    """A server whose ``stepped`` tool reports ``step k/n`` and waits until the client has seen it."""

    server: Any
    counted: Counted
    seen_by_client: dict[str, anyio.Event] = field(default_factory=lambda: dict[str, anyio.Event]())
    release: anyio.Event = field(default_factory=anyio.Event)

    def saw(self, message: str | None) -> None:
        if message is not None:
            self.seen_by_client.setdefault(message, anyio.Event()).set()

    async def until_seen(self, message: str) -> None:
        await self.seen_by_client.setdefault(message, anyio.Event()).wait()


def stepped_app(*, push: bool = True) -> SteppedApp:
    counted = Counted()
    tasks = ServerTasks(
        tools={"stepped": "optional"},
        poll_policy=PollPolicy(minimum_ms=20, maximum_ms=20),
        inline_grace_s=0,
        push=push,
    )
    server = MCPServer("client-route", **tasks.mcpserver_kwargs(middleware=[counted]))
    app = SteppedApp(server=server, counted=counted)

    @server.tool()
    async def stepped(steps: int) -> str:
        for step in range(1, steps + 1):
            message = f"step {step}/{steps}"
            await report_status(message)
            await app.until_seen(message)  # the next step only once the client reported this one
            if step == 1:
                await app.release.wait()
        return f"done in {steps}"

    return app


async def call_held(app: SteppedApp, client: Any) -> Any:
    """``client.call_tool("stepped")``, its task released :data:`HOLD_SECONDS` after its first step."""
    results: list[Any] = []

    async def call() -> None:
        results.append(await client.call_tool("stepped", {"steps": STEPS}))

    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as group:
            group.start_soon(call)
            await app.until_seen(f"step 1/{STEPS}")
            await anyio.sleep(HOLD_SECONDS)  # the task's length: reads would pile up here
            app.release.set()
    return results[0]


@dataclass
class Statuses:
    seen: list[tuple[str, str | None]] = field(default_factory=lambda: list[tuple[str, str | None]]())

    def __call__(self, task: Task) -> None:
        self.seen.append((task.status.value, task.status_message))


async def test_client_call_tool_follows_a_task_on_one_listen_stream() -> None:
    app = stepped_app()
    statuses = Statuses()

    def on_status(task: Task) -> None:
        statuses(task)
        app.saw(task.status_message)

    async with mcp.Client(app.server, extensions=[tasks_extension(on_status=on_status)]) as client:
        result = await call_held(app, client)
    assert text_of(result) == f"done in {STEPS}"
    assert app.counted.methods["tasks/get"] <= MAX_READS
    assert app.counted.methods[LISTEN] == 1
    steps = [("working", f"step {k}/{STEPS}") for k in range(1, STEPS + 1)]
    assert [seen for seen in statuses.seen if seen in steps] == steps  # each step, in order
    assert statuses.seen[-1] == ("completed", f"step {STEPS}/{STEPS}")


async def test_on_progress_hears_the_statuses_without_on_status() -> None:
    app = stepped_app()
    heard: list[tuple[float, float | None, str | None]] = []

    def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append((progress, total, message))
        app.saw(message)

    async with mcp.Client(app.server, extensions=[tasks_extension(on_progress=on_progress)]) as client:
        result = await call_held(app, client)
    assert text_of(result) == f"done in {STEPS}"
    assert app.counted.methods["tasks/get"] <= MAX_READS
    assert [message for _, _, message in heard] == [f"step {k}/{STEPS}" for k in range(1, STEPS + 1)]
    progress = [value for value, _, _ in heard]
    assert progress == sorted(set(progress))  # increasing, as the MCP specification requires


async def test_a_server_that_does_not_push_is_polled_and_the_client_says_why(
    caplog: pytest.LogCaptureFixture,
) -> None:
    app = stepped_app(push=False)
    statuses = Statuses()

    def on_status(task: Task) -> None:
        statuses(task)
        app.saw(task.status_message)

    caplog.set_level(logging.INFO, logger="mcp_tasks_compat.client")
    async with mcp.Client(app.server, extensions=[tasks_extension(on_status=on_status)]) as client:
        result = await call_held(app, client)
    assert text_of(result) == f"done in {STEPS}"
    assert app.counted.methods["tasks/get"] >= STEPS  # each step seen by a read: what push saves
    assert statuses.seen[-1] == ("completed", f"step {STEPS}/{STEPS}")
    assert any(
        "task states are polled on this connection" in record.getMessage() for record in caplog.records
    )
