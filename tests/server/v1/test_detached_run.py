"""A task's run does not run under the request context that created it (mcp 1.x).

The tool body of a task sees a copy of the SDK's request context without what ends with the
exchange (the HTTP request object, the SSE stream callbacks), started in its own contextvars copy,
so the request's context is not kept for the life of the task. Its FastMCP ``ctx`` still works.
(Collection of the original is asserted on 2.x; on 1.x cancelled asyncio timers of the request
keep its contextvars until their deadlines pass, a transient a gc check would trip over.)
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

pytestmark = [pytest.mark.mcp1, pytest.mark.anyio]

pytest.importorskip("mcp.server.fastmcp", reason="needs mcp 1.x (FastMCP)")

import mcp.types as types  # noqa: E402 - after the skip, these import mcp 1.x
from mcp.server.fastmcp import Context, FastMCP  # noqa: E402
from mcp.server.lowlevel.server import request_ctx  # noqa: E402

from mcp_tasks_compat.server import ServerTasks, current_call  # noqa: E402

from ._sdk import connect  # noqa: E402


async def test_the_run_sees_a_detached_request_context() -> None:
    server: FastMCP[Any] = FastMCP("detached")
    started, release = anyio.Event(), anyio.Event()
    in_run: dict[str, Any] = {}

    @server.tool()
    async def held(ctx: Context[Any, Any, Any]) -> str:
        await ctx.info("running")  # the FastMCP Context works inside a task body
        in_run["context"] = request_ctx.get()
        in_run["task"] = current_call().task
        started.set()
        await release.wait()
        return "done"

    tasks = ServerTasks(tools={"held": "optional"})
    tasks.install(server)
    lowlevel = server._mcp_server  # pyright: ignore[reportPrivateUsage]
    installed = lowlevel.request_handlers[types.CallToolRequest]
    requests: list[Any] = []

    async def watching(req: types.CallToolRequest) -> types.ServerResult:
        # Outside ours, on this server instance only: what the SDK set for this request.
        requests.append(request_ctx.get())
        return await installed(req)

    lowlevel.request_handlers[types.CallToolRequest] = watching
    async with connect(server) as conn:
        created = await conn.tasks.call_tool_as_task("held", {})
        with anyio.fail_after(10):
            await started.wait()
        (original,) = requests
        context = in_run["context"]
        assert context is not original
        assert (context.request_id, context.session, context.meta) == (
            original.request_id,
            original.session,
            original.meta,
        )
        assert context.close_sse_stream is None
        assert context.close_standalone_sse_stream is None
        assert in_run["task"] is not None  # current_call().task inside the body
        assert created.task.status == "working"
        # The task's status listener (it lives as long as the task) keeps the session, not this
        # request's context: held, that context cost a held task 22 KiB instead of 13.
        listeners = [
            listener for record in tasks.engine.reader.records.all() for listener in record.listeners
        ]
        assert listeners
        for listener in listeners:
            assert not _keeps(listener, original), "a task's status listener keeps its request context"
        release.set()


def _keeps(root: object, target: object, depth: int = 4) -> bool:
    """Whether ``target`` is reachable from ``root`` through closures, bound methods and object
    attributes, ``depth`` steps at most (modules and their globals are not followed)."""
    if root is target:
        return True
    if depth == 0:
        return False
    children: list[object] = []
    if callable(root) and hasattr(root, "__self__"):
        children += [root.__self__, getattr(root, "__func__", None)]
    for cell in getattr(root, "__closure__", None) or ():
        children.append(cell.cell_contents)
    fields = getattr(root, "__dict__", None)
    if isinstance(fields, dict) and not isinstance(root, type):
        children += list(fields.values())
    for name in getattr(type(root), "__slots__", ()):
        children.append(getattr(root, name, None))
    return any(_keeps(child, target, depth - 1) for child in children if child is not None)
