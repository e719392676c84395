"""The mcp 1.x SDK's own experimental task server, running the shared test tools.

A low-level ``Server`` with ``server.experimental.enable_tasks()`` and ``ctx.experimental.run_task``
(the SDK's runtime, not the project's): the 2025-11-25 peer the client must work with as is,
including its fixed 500 ms poll hint, its session-scoped task ids (1.27.2+) and its habit of
ending an ``isError`` tool result ``completed``.
"""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp.types as types
from mcp.server.experimental.task_context import ServerTaskContext
from mcp.server.lowlevel import Server
from mcp.shared.memory import create_client_server_memory_streams

from ._script import TASK_TOOLS, Knobs, Script

_SCHEMAS: dict[str, dict[str, Any]] = {
    "echo": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    "gated": {"type": "object", "properties": {"label": {"type": "string"}}, "required": ["label"]},
}


def _text(text: str, *, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], isError=is_error)


def build_v1_server(script: Script, knobs: Knobs) -> Server[Any, Any]:
    server: Server[Any, Any] = Server("client-test-server-v1")
    if knobs.tasks:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            server.experimental.enable_tasks()
        handlers = server.request_handlers
        default_get = handlers[types.GetTaskRequest]
        default_cancel = handlers[types.CancelTaskRequest]

        async def observed_get(request: types.GetTaskRequest) -> Any:
            script.saw_get()
            return await default_get(request)

        async def observed_cancel(request: types.CancelTaskRequest) -> Any:
            script.saw_cancel(request.params.taskId)
            return await default_cancel(request)

        handlers[types.GetTaskRequest] = observed_get  # wrapping this test server's own handlers
        handlers[types.CancelTaskRequest] = observed_cancel

    def tool(name: str) -> types.Tool:
        execution = (
            types.ToolExecution(taskSupport="optional") if knobs.tasks and name in TASK_TOOLS else None
        )
        schema = _SCHEMAS.get(name, {"type": "object", "properties": {}})
        return types.Tool(name=name, inputSchema=schema, execution=execution)

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        return [tool(name) for name in ("echo", *TASK_TOOLS)]

    async def work(
        name: str, arguments: dict[str, Any], task: ServerTaskContext | None
    ) -> types.CallToolResult:
        if name == "echo":
            return _text(str(arguments["text"]))
        if name == "gated":
            if task is not None:
                await task.update_status("started")
            await script.release.wait()
            return _text(f"done {arguments['label']}")
        if name == "failing":
            raise RuntimeError("boom")
        if name == "tool_error":
            return _text("bad input", is_error=True)
        if name == "hang":
            await anyio.sleep_forever()
        if name == "count_gets":
            await script.enough_gets.wait()
            return _text("counted")
        raise ValueError(f"unknown tool {name}")

    @server.call_tool()
    async def call_tool(name: str, arguments: dict[str, Any]) -> Any:
        ctx = server.request_context
        if knobs.tasks and ctx.experimental.is_task:
            created = await ctx.experimental.run_task(lambda task: work(name, arguments, task))
            script.created.append(created.task.taskId)
            return created
        return await work(name, arguments, None)

    return server


def _only_disconnects(error: BaseException) -> bool:
    """Whether ``error`` (or every leaf of a group) is the server writing to a client that left."""
    leaves: object = getattr(error, "exceptions", None)
    if isinstance(leaves, tuple):
        return all(_only_disconnects(leaf) for leaf in leaves)  # pyright: ignore[reportUnknownVariableType]
    return isinstance(error, (anyio.BrokenResourceError, anyio.ClosedResourceError))


@asynccontextmanager
async def memory_streams(server: Server[Any, Any]) -> AsyncIterator[tuple[Any, Any]]:
    """Client (read, write) streams to ``server`` over in-memory JSON-RPC, one server run each.

    A 1.x server that answers a request after its client left (e.g. a ``tasks/result`` the
    client stopped waiting for) dies writing to the closed stream; that is tolerated here, since
    a server that died while the client still used it fails the client's own requests.
    """

    async def serve(streams: Any) -> None:
        try:
            await server.run(*streams, server.create_initialization_options())
        except Exception as error:
            if not _only_disconnects(error):
                raise

    async with (
        create_client_server_memory_streams() as (client_streams, server_streams),
        anyio.create_task_group() as group,
    ):
        group.start_soon(serve, server_streams)
        try:
            yield client_streams
        finally:
            # Server.run waits for task work still running; the test is done with it.
            group.cancel_scope.cancel()
