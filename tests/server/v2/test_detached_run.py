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

from mcp_tasks_compat.server import ServerTasks, current_task

pytestmark = [pytest.mark.mcp2, pytest.mark.anyio]

pytest.importorskip("mcp.server.mcpserver", reason="needs mcp 2.x (MCPServer)")

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext  # noqa: E402
from mcp.server.extension import Extension, MethodBinding  # noqa: E402
from mcp.server.mcpserver import Context  # noqa: E402
from mcp_types import CallToolRequestParams  # noqa: E402

from ..harness import Gate  # noqa: E402
from ._sdk import MCPServer, TaskHandle, declaring_session, get_task  # noqa: E402


class RequestWatcher(Extension):
    """An outer extension that keeps a weak reference to every tools/call request context."""

    identifier = "io.example/request-watcher"

    def __init__(self) -> None:
        self.seen: list[weakref.ref[ServerRequestContext[Any, Any]]] = []

    def settings(self) -> dict[str, Any]:
        return {}

    def methods(self) -> Sequence[MethodBinding]:
        return []

    async def intercept_tool_call(
        self, params: CallToolRequestParams, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        self.seen.append(weakref.ref(ctx))
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
        assert seen["protocol_version"] == session.protocol_version
        assert (await get_task(session, handle.task_id)).status == "working"  # the run is still held
        gate.release.set()
        with anyio.fail_after(10):
            await recorded.wait()
        assert seen["task"] is not None
        assert seen["task"].task_id == handle.task_id
