"""Composition with the user's own server pieces, the low-level Server, and the loud refusals."""

from __future__ import annotations

import importlib.metadata
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

import anyio
import pytest

from mcp_tasks_compat import UnsupportedOptInError
from mcp_tasks_compat._detect import SdkInfo, sdk_info
from mcp_tasks_compat.server import ServerTasks, current_call

pytestmark = [pytest.mark.mcp2, pytest.mark.anyio]
pytest.importorskip("mcp.server.mcpserver", reason="needs mcp 2.x (MCPServer)")

import mcp_types as types  # noqa: E402
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext  # noqa: E402
from mcp.server.extension import Extension  # noqa: E402
from mcp.server.mcpserver import Context  # noqa: E402

from mcp_tasks_compat._adapters.v2 import server as v2_server  # noqa: E402

from ..harness import EXT, Gate  # noqa: E402
from ._sdk import (  # noqa: E402
    MCPError,
    MCPServer,
    Server,
    TaskHandle,
    declaring_session,
    get_task,
    meta_2026,
    raw_peer,
)


class Resource:
    """Stands for a database handle the user's lifespan opens and closes."""

    def __init__(self) -> None:
        self.open = False
        self.task_status_at_close: str | None = None


def user_lifespan_for(resource: Resource, engine: Any, watched: list[str]) -> Any:
    """A user lifespan that, on the way out, notes the status of the task in ``watched``."""

    @asynccontextmanager
    async def lifespan(server: Any) -> AsyncGenerator[dict[str, Any], None]:
        resource.open = True
        try:
            yield {"db": resource}
        finally:
            if watched:
                record = await engine.lookup(watched[0], None)
                resource.task_status_at_close = record.task.status.value
            resource.open = False

    return lifespan


async def test_user_lifespan_value_reaches_tools_and_wraps_the_task_group() -> None:
    resource, task_ids = Resource(), list[str]()
    tasks = ServerTasks(tools={"query": "optional", "hang": "optional"}, inline_grace_s=0)  # always a task
    lifespan = user_lifespan_for(resource, tasks.engine, task_ids)
    server = MCPServer("compose", **tasks.mcpserver_kwargs(lifespan=lifespan))
    gate = Gate()
    seen: list[tuple[bool, bool]] = []

    @server.tool()
    async def query(ctx: Context) -> str:
        db = ctx.request_context.lifespan_context["db"]
        seen.append((db is resource and db.open, current_call().task is not None))
        return "ok"

    @server.tool()
    async def hang() -> str:
        gate.started.set()
        await anyio.sleep_forever()
        return "never"

    async with declaring_session(server) as session:
        handle = await session.call_tool("query", {}, allow_claimed=True)
        assert isinstance(handle, TaskHandle)
        with anyio.fail_after(5):
            await tasks.engine.reader.wait_terminal(handle.task_id, None)
        assert (await get_task(session, handle.task_id)).status == "completed"
        hanging = await session.call_tool("hang", {}, allow_claimed=True)
        assert isinstance(hanging, TaskHandle)
        task_ids.append(hanging.task_id)
        with anyio.fail_after(5):
            await gate.started.wait()
    async with declaring_session(server, declare=False) as session:
        plain = await session.call_tool("query", {})
    assert plain.content == [types.TextContent(type="text", text="ok")]
    assert seen == [(True, True), (True, False)]
    # At shutdown the engine's group closed first: the running task was already cancelled when
    # the user's lifespan released its resource.
    assert resource.task_status_at_close == "cancelled"
    assert resource.open is False
    stopped = await tasks.engine.lookup(task_ids[0], None)
    assert stopped.task.status_message == "the server stopped this task"


async def test_user_extensions_middleware_and_other_kwargs_are_kept() -> None:
    calls: list[str] = []

    class Audit(Extension):
        identifier = "io.example/audit"

        def settings(self) -> dict[str, Any]:
            return {"level": 1}

        async def intercept_tool_call(
            self,
            params: types.CallToolRequestParams,
            ctx: ServerRequestContext[Any, Any],
            call_next: CallNext,
        ) -> HandlerResult:
            calls.append(f"ext:{params.name}")
            return await call_next(ctx)

    async def audit_middleware(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        calls.append(f"mw:{ctx.method}")
        return await call_next(ctx)

    tasks = ServerTasks(tools={"work": "optional"}, inline_grace_s=0)  # always a task
    kwargs = tasks.mcpserver_kwargs(
        extensions=[Audit()], middleware=[audit_middleware], instructions="use tasks", version="9.9"
    )
    assert kwargs["instructions"] == "use tasks"
    assert kwargs["version"] == "9.9"
    assert kwargs["middleware"][0] is audit_middleware
    server = MCPServer("compose", **kwargs)

    @server.tool()
    async def work() -> str:
        return "done"

    async with declaring_session(server) as session:
        discovered = await session.discover()
        handle = await session.call_tool("work", {}, allow_claimed=True)
        assert isinstance(handle, TaskHandle)
        with anyio.fail_after(5):
            await tasks.engine.reader.wait_terminal(handle.task_id, None)
    assert discovered.capabilities.extensions == {"io.example/audit": {"level": 1}, EXT: {}}
    assert discovered.instructions == "use tasks"
    assert "ext:work" in calls
    assert "mw:tools/call" in calls
    assert calls.index("mw:tools/call") < calls.index("ext:work")


def test_a_second_tasks_extension_is_refused() -> None:
    class Other(Extension):
        identifier = EXT

    with pytest.raises(ValueError, match="ServerTasks provides it"):
        ServerTasks().mcpserver_kwargs(extensions=[Other()])


def lowlevel_server(lifespan: Any = None) -> tuple[Server[Any], Gate]:
    gate = Gate()

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(name="slow", input_schema={"type": "object"}),
                types.Tool(name="quick", input_schema={"type": "object"}),
            ]
        )

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name == "slow":
            gate.started.set()
            await gate.release.wait()
        label = ctx.lifespan_context.get("label", "none")
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"{params.name}:{label}")])

    kwargs: dict[str, Any] = {"on_list_tools": list_tools, "on_call_tool": call_tool}
    if lifespan is not None:
        kwargs["lifespan"] = lifespan
    return Server("lowlevel-tasks", **kwargs), gate


async def test_lowlevel_server_install_serves_both_dialects() -> None:
    @asynccontextmanager
    async def lifespan(server: Any) -> AsyncGenerator[dict[str, str], None]:
        yield {"label": "from-lifespan"}

    server, gate = lowlevel_server(lifespan)
    tasks = ServerTasks(tools={"slow": "optional"})
    tasks.install(server)
    assert server.extensions == {EXT: {}}
    async with declaring_session(server) as session:
        discovered = await session.discover()
        handle = await session.call_tool("slow", {}, allow_claimed=True)
        assert isinstance(handle, TaskHandle)
        with anyio.fail_after(5):
            await gate.started.wait()
        assert (await get_task(session, handle.task_id)).status == "working"
        gate.release.set()
        with anyio.fail_after(5):
            await tasks.engine.reader.wait_terminal(handle.task_id, None)
        done = await get_task(session, handle.task_id)
    assert discovered.capabilities.extensions == {EXT: {}}
    assert done.result == {
        "content": [{"type": "text", "text": "slow:from-lifespan"}],
        "isError": False,
        "resultType": "complete",
    }
    async with raw_peer(server) as peer:
        init = (await peer.initialize())["result"]
        created = await peer.request("tools/call", {"name": "slow", "arguments": {}, "task": {}})
        task_id = created["result"]["task"]["taskId"]
        payload = (await peer.request("tasks/result", {"taskId": task_id}))["result"]
        forbidden = await peer.request("tools/call", {"name": "quick", "arguments": {}, "task": {}})
        got = await peer.request("tasks/get", {"taskId": task_id})  # the 2025 middleware answers
    assert init["capabilities"]["tasks"]["requests"] == {"tools": {"call": {}}}
    assert payload["content"] == [{"type": "text", "text": "slow:from-lifespan"}]
    assert forbidden["error"]["code"] == -32601
    assert got["result"]["status"] == "completed"


async def test_lowlevel_install_guards() -> None:
    server, _gate = lowlevel_server()
    tasks = ServerTasks(tools={"slow": "optional"})
    tasks.install(server)
    with pytest.raises(ValueError, match="already installed"):
        tasks.install(server)
    with pytest.raises(ValueError, match="no tools/call handler"):
        ServerTasks().install(Server("empty"))
    with pytest.raises(TypeError, match="low-level Server"):
        ServerTasks().install(object())


def test_install_on_an_already_built_mcpserver_is_refused_with_the_form_to_use() -> None:
    server = MCPServer("built")
    with pytest.raises(UnsupportedOptInError) as refused:
        ServerTasks().install(server)
    version = importlib.metadata.version("mcp")
    assert str(refused.value) == (
        f"cannot honour 1 opt-in(s) with mcp {version}:\n"
        "  - ServerTasks.install() on an already-built MCPServer: needs the construction-time form, since "
        "an MCPServer fixes its extensions, lifespan and middleware when it is built; fix: "
        "MCPServer(name, **tasks.mcpserver_kwargs(lifespan=..., extensions=[...], middleware=[...]))\n"
        "  see https://github.com/mcp-tasks-compat/mcp-tasks-compat/tree/main/docs/errors.md#unsupported-opt-in"
    )
    assert server._lowlevel_server.extensions == {}  # pyright: ignore[reportPrivateUsage]


def test_2025_on_a_release_without_the_middleware_seam() -> None:
    info = sdk_info()
    without_seam = replace(
        info,
        server_dialects=tuple(d for d in info.server_dialects if d != "2025-11-25"),
        features=tuple(f for f in info.features if f != "v2.server_middleware"),
    )
    assert v2_server.served_dialects(ServerTasks(), without_seam) == ("2026-07-28",)
    asked = ServerTasks(dialects=["2025-11-25", "2026-07-28"])
    with pytest.raises(UnsupportedOptInError) as refused:
        v2_server.served_dialects(asked, without_seam)
    message = str(refused.value)
    assert "dialect='2025-11-25' on the server" in message
    assert "v2.server_middleware" in message
    assert "2026-07-28" not in message.split("\n")[1]
    assert isinstance(without_seam, SdkInfo)


async def test_dialects_can_be_limited() -> None:
    only_2026 = ServerTasks(tools={"work": "optional"}, dialects=["2026-07-28"])
    only_2025 = ServerTasks(tools={"work": "optional"}, dialects=["2025-11-25"])
    servers: dict[str, MCPServer] = {}
    for label, tasks in (("2026", only_2026), ("2025", only_2025)):
        server = MCPServer(f"only-{label}", **tasks.mcpserver_kwargs())

        @server.tool()
        async def work() -> str:
            return "done"

        servers[label] = server
    async with raw_peer(servers["2026"]) as peer:
        init = (await peer.initialize())["result"]
        call_2025 = await peer.request("tools/call", {"name": "work", "arguments": {}, "task": {}})
        get_2025 = await peer.request("tasks/get", {"taskId": "x"})
    assert "tasks" not in init["capabilities"]
    assert call_2025["result"]["content"] == [{"type": "text", "text": "done"}]  # params.task ignored
    assert get_2025["error"]["code"] == -32601
    async with raw_peer(servers["2025"]) as peer:
        discovered = (await peer.request("server/discover", {"_meta": meta_2026()}))["result"]
        call_2026 = await peer.request("tools/call", {"name": "work", "arguments": {}, "_meta": meta_2026()})
    assert "extensions" not in discovered["capabilities"]
    assert call_2026["result"]["content"] == [{"type": "text", "text": "done"}]


def test_unknown_dialect_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="dialects must be"):
        ServerTasks(dialects=["2024-01-01"])  # pyright: ignore[reportArgumentType]


async def test_without_the_lifespan_no_task_is_created_and_the_call_is_an_internal_error() -> None:
    tasks = ServerTasks(tools={"work": "optional"}, inline_grace_s=0)  # always a task
    kwargs = tasks.mcpserver_kwargs()
    del kwargs["lifespan"]  # e.g. a lifespan passed to MCPServer directly instead of through us
    server = MCPServer("no-lifespan", **kwargs)

    @server.tool()
    async def work() -> str:
        return "done"

    async with declaring_session(server) as session:
        with pytest.raises(MCPError) as refused:
            await session.call_tool("work", {}, allow_claimed=True)
    assert refused.value.error.code == -32603
    assert "lifespan that runs tasks is not active" in refused.value.error.message
    assert await tasks.engine.reader.owned_by(None) == []


def test_reruns_on_a_lowlevel_server_are_refused_at_install() -> None:
    """A low-level Server's tools/call handler needs a request: a lost run could not be run again."""
    server, _gate = lowlevel_server()
    with pytest.raises(UnsupportedOptInError, match=r"reruns of \['slow'\] on a low-level Server") as refused:
        ServerTasks(tools={"slow": "optional"}, reruns={"slow": 1}).install(server)
    assert "TaskServer" in str(refused.value)
