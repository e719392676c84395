"""A task's run keeps none of the request that created it (mcp 2.x, both dialects' entry points).

The request context the tools/call handler chain was given must be collectable once the create
answer is sent, while the task still runs; the tool still sees what it needs (its arguments, the
SDK ``Context``, ``current_task``).
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Sequence
from typing import Any

import anyio
import pytest

from mcp_tasks_compat.dialects import TASKS_EXTENSION_ID
from mcp_tasks_compat.server import ServerTasks, current_task

pytestmark = [pytest.mark.mcp2, pytest.mark.anyio]

pytest.importorskip("mcp.server.mcpserver", reason="needs mcp 2.x (MCPServer)")

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext  # noqa: E402
from mcp.server.extension import Extension, MethodBinding  # noqa: E402
from mcp.server.mcpserver import Context  # noqa: E402
from mcp_types import CallToolRequestParams  # noqa: E402

from ..harness import Gate  # noqa: E402
from ._sdk import MCPServer, TaskHandle, declaring_session, get_task, raw_peer  # noqa: E402


class RequestWatcher(Extension):
    """An outer extension that keeps a weak reference to every tools/call request context."""

    identifier = "io.example/request-watcher"

    def __init__(self) -> None:
        self.seen: list[weakref.ref[ServerRequestContext[Any, Any]]] = []
        self.sessions: list[weakref.ref[Any]] = []

    def settings(self) -> dict[str, Any]:
        return {}

    def methods(self) -> Sequence[MethodBinding]:
        return []

    async def intercept_tool_call(
        self, params: CallToolRequestParams, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        self.seen.append(weakref.ref(ctx))
        self.sessions.append(weakref.ref(ctx.session))
        return await call_next(ctx)


@pytest.mark.parametrize(
    "inline_grace_s",
    [
        pytest.param(0, id="task-at-once"),  # the 2025-11-25 path starts its run the same way
        pytest.param(0.01, id="outlived-the-grace"),  # started undecided, became a task later
    ],
)
async def test_the_request_is_released_while_its_task_runs(inline_grace_s: float) -> None:
    watcher = RequestWatcher()
    tasks = ServerTasks(tools={"held": "optional"}, inline_grace_s=inline_grace_s)
    server = MCPServer("detached", **tasks.mcpserver_kwargs(extensions=[watcher]))
    gate = Gate()
    recorded = anyio.Event()
    seen: dict[str, Any] = {}

    @server.tool()
    async def held(x: int, ctx: Context) -> int:
        seen["protocol_version"] = ctx.request_context.protocol_version
        seen["capabilities"] = ctx.session.client_capabilities
        gate.started.set()
        await gate.release.wait()
        seen["task"] = current_task()  # read once it is a task (inside the grace it is None)
        recorded.set()
        return x * 2

    async with declaring_session(server) as session:
        handle = await session.call_tool("held", {"x": 21}, allow_claimed=True)
        assert isinstance(handle, TaskHandle)
        with anyio.fail_after(10):
            await gate.started.wait()
        (request,) = watcher.seen  # the create request; the run does not pass the outer extension
        gc.collect()
        assert request() is None, "the running task still holds the request context that created it"
        (request_session,) = watcher.sessions  # the SDK's per-request session holds its dispatch context
        assert request_session() is None, "the running task still holds the request's SDK session"
        assert seen["protocol_version"] == session.protocol_version
        assert seen["capabilities"] is not None
        assert TASKS_EXTENSION_ID in (seen["capabilities"].extensions or {})
        assert (await get_task(session, handle.task_id)).status == "working"  # the run is still held
        gate.release.set()
        with anyio.fail_after(10):
            await recorded.wait()
        assert seen["task"] is not None
        assert seen["task"].task_id == handle.task_id


async def test_progress_inside_the_grace_reaches_the_caller_and_is_dropped_once_a_task() -> None:
    """The run's session forwards to the request's stream while the call is undecided; once the
    create answer is sent it drops notifications, as the SDK's own channel does after an answer."""
    tasks = ServerTasks(tools={"steps": "optional"}, inline_grace_s=0.01)
    server = MCPServer("detached", **tasks.mcpserver_kwargs())
    gate = Gate()
    dropped = anyio.Event()
    received: list[tuple[float, str | None]] = []

    @server.tool()
    async def steps(quick: bool, ctx: Context) -> str:
        await ctx.report_progress(1, 2, "inside the grace")
        if quick:
            return "quick"
        gate.started.set()
        await gate.release.wait()
        await ctx.report_progress(2, 2, "after the create answer")  # dropped, never raised
        dropped.set()
        return "slow"

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        received.append((progress, message))

    async with declaring_session(server) as session:
        quick = await session.call_tool("steps", {"quick": True}, progress_callback=on_progress)
        assert not isinstance(quick, TaskHandle)
        assert received == [(1, "inside the grace")]
        received.clear()
        handle = await session.call_tool(
            "steps", {"quick": False}, allow_claimed=True, progress_callback=on_progress
        )
        assert isinstance(handle, TaskHandle)
        with anyio.fail_after(10):
            await gate.started.wait()
        gate.release.set()
        with anyio.fail_after(10):
            await dropped.wait()
        assert received == [(1, "inside the grace")]  # sent while the call was still undecided
        assert (await get_task(session, handle.task_id)).status in ("working", "completed")


class SessionWatcher:
    """An outer ``Server.middleware`` that keeps a weak reference to each tools/call's SDK session."""

    def __init__(self) -> None:
        self.sessions: list[weakref.ref[Any]] = []

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
        if ctx.method == "tools/call":
            self.sessions.append(weakref.ref(ctx.session))
        return await call_next(ctx)


async def test_a_2025_task_releases_the_request_session_and_still_notifies_its_status() -> None:
    watcher = SessionWatcher()
    tasks = ServerTasks(tools={"held": "optional"})
    server = MCPServer("detached-2025", **tasks.mcpserver_kwargs(middleware=[watcher]))
    gate = Gate()

    @server.tool()
    async def held(x: int) -> int:
        gate.started.set()
        await gate.release.wait()
        return x * 2

    async with raw_peer(server) as peer:
        await peer.initialize()
        created = await peer.request("tools/call", {"name": "held", "arguments": {"x": 2}, "task": {}})
        task_id = created["result"]["task"]["taskId"]
        with anyio.fail_after(10):
            await gate.started.wait()
        gc.collect()
        (request_session,) = watcher.sessions
        assert request_session() is None, "the running 2025-11-25 task still holds the request's SDK session"
        gate.release.set()
        completed = await peer.wait_notification(
            lambda frame: (
                frame["method"] == "notifications/tasks/status" and frame["params"]["status"] == "completed"
            )
        )
        result = await peer.request("tasks/result", {"taskId": task_id})
    assert completed["params"]["taskId"] == task_id
    assert result["result"]["structuredContent"] == {"result": 4}


def test_a_session_without_the_probed_attributes_is_kept_whole() -> None:
    """The seam is private: an SDK whose session lacks it gives no parts, and the run keeps it."""
    from mcp_tasks_compat._adapters.v2.detached import session_parts

    class Elsewhere:
        _request_outbound = object()  # no transport, no notify: not a dispatch context

    assert session_parts(Elsewhere()) is None  # type: ignore[arg-type]
    assert session_parts(object()) is None  # type: ignore[arg-type]
