"""The 2025-11-25 dialect of a 2.x server over stateful streamable HTTP: tasks follow the session."""

from __future__ import annotations

import anyio
import httpx
import pytest

from mcp_tasks_compat.server import ServerTasks

pytestmark = [pytest.mark.mcp2, pytest.mark.anyio]
pytest.importorskip("mcp.server.mcpserver", reason="needs mcp 2.x (MCPServer)")

from ..harness import Http2025Client, serve_asgi  # noqa: E402
from ._sdk import (  # noqa: E402
    MCPServer,
)


@pytest.mark.parametrize("json_response", [True, False])
async def test_2025_tasks_over_http_belong_to_their_session(json_response: bool) -> None:
    tasks = ServerTasks(tools={"work": "optional"})
    server = MCPServer("http-2025", **tasks.mcpserver_kwargs())
    release = anyio.Event()

    @server.tool()
    async def work(x: int) -> int:
        await release.wait()
        return x

    app = server.streamable_http_app(json_response=json_response)
    async with serve_asgi(app) as url, httpx.AsyncClient(timeout=10) as http:
        alice, bob = Http2025Client(http, url), Http2025Client(http, url)
        init = (await alice.initialize())["result"]
        await bob.initialize()
        created = await alice.request("tools/call", {"name": "work", "arguments": {"x": 3}, "task": {}})
        task_id = created["result"]["task"]["taskId"]
        bob_get = await bob.request("tasks/get", {"taskId": task_id})
        bob_list = (await bob.request("tasks/list"))["result"]
        release.set()
        result = (await alice.request("tasks/result", {"taskId": task_id}))["result"]
        alice_list = (await alice.request("tasks/list"))["result"]
    assert init["capabilities"]["tasks"] == {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
    assert created["result"]["task"]["status"] == "working"
    assert bob_get["error"]["code"] == -32602
    assert bob_list == {"tasks": []}
    assert result["structuredContent"] == {"result": 3}
    assert result["_meta"] == {"io.modelcontextprotocol/related-task": {"taskId": task_id}}
    assert [t["taskId"] for t in alice_list["tasks"]] == [task_id]
    assert alice_list["tasks"][0]["status"] == "completed"


async def test_a_stateless_server_refuses_2025_tasks_instead_of_running_them_plainly() -> None:
    tasks = ServerTasks(tools={"work": "optional"})
    server = MCPServer("http-2025-stateless", **tasks.mcpserver_kwargs())

    @server.tool()
    async def work(x: int) -> int:
        return x

    app = server.streamable_http_app(json_response=True, stateless_http=True)
    async with serve_asgi(app) as url, httpx.AsyncClient(timeout=10) as http:
        client = Http2025Client(http, url)
        await client.initialize()
        with_task = await client.request("tools/call", {"name": "work", "arguments": {"x": 1}, "task": {}})
        get = await client.request("tasks/get", {"taskId": "x"})
        plain = await client.request("tools/call", {"name": "work", "arguments": {"x": 1}})
    assert with_task["error"]["code"] == -32600
    assert "stateless" in with_task["error"]["message"]
    assert get["error"]["code"] == -32600
    assert plain["result"]["structuredContent"] == {"result": 1}
    assert await tasks.engine.reader.owned_by(None) == []
