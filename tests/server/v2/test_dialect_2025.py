"""2025-11-25 experimental tasks served by an mcp 2.x server (opened with initialize, raw JSON-RPC)."""

from __future__ import annotations

import re
from typing import Any

import anyio
import pytest

from mcp_tasks_compat.server import ServerTasks, current_call, report_status

pytestmark = [pytest.mark.mcp2, pytest.mark.anyio]
pytest.importorskip("mcp.server.mcpserver", reason="needs mcp 2.x (MCPServer)")

from ..harness import EXT, ISO_Z, Gate, RawPeer  # noqa: E402
from ._sdk import (  # noqa: E402
    MCPError,
    MCPServer,
    ToolError,
    meta_2026,
    raw_peer,
)

RELATED = "io.modelcontextprotocol/related-task"


def build(**options: Any) -> tuple[ServerTasks, MCPServer, Gate, dict[str, Any]]:
    tasks = ServerTasks(
        tools={"work": "optional", "must": "required", "oops": "optional", "boom": "optional"}, **options
    )
    server = MCPServer("dialect-2025-on-2x", **tasks.mcpserver_kwargs())
    gate = Gate()
    seen: dict[str, Any] = {}

    @server.tool()
    async def work(x: int) -> int:
        seen["current"] = current_call().task
        await report_status("underway")
        gate.started.set()
        await gate.release.wait()
        return x * 10

    @server.tool()
    async def must() -> str:
        return "required ran"

    @server.tool()
    async def plain() -> str:
        return "plain ran"

    @server.tool()
    async def oops() -> str:
        raise ToolError("tool said no")

    @server.tool()
    async def boom() -> str:
        raise MCPError(code=-32050, message="backend exploded")

    return tasks, server, gate, seen


def is_completed_status(frame: dict[str, Any]) -> bool:
    return frame["method"] == "notifications/tasks/status" and frame["params"]["status"] == "completed"


async def create(peer: RawPeer, name: str, arguments: dict[str, Any], task: Any = None) -> dict[str, Any]:
    params: dict[str, Any] = {
        "name": name,
        "arguments": arguments,
        "task": {"ttl": 60_000} if task is None else task,
    }
    return await peer.request("tools/call", params)


async def test_initialize_advertises_tasks_and_tools_list_declares_support() -> None:
    _tasks, server, _gate, _seen = build()
    async with raw_peer(server) as peer:
        init = (await peer.initialize())["result"]
        tools = (await peer.request("tools/list"))["result"]["tools"]
    assert init["protocolVersion"] == "2025-11-25"
    assert init["capabilities"]["tasks"] == {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
    support = {tool["name"]: tool.get("execution") for tool in tools}
    assert support == {
        "work": {"taskSupport": "optional"},
        "must": {"taskSupport": "required"},
        "plain": None,
        "oops": {"taskSupport": "optional"},
        "boom": {"taskSupport": "optional"},
    }


async def test_2025_06_18_connections_get_the_same_dialect() -> None:
    """mcp 1.23.0 clients negotiate 2025-06-18 (their latest) and still use experimental tasks."""
    _tasks, server, gate, _seen = build()
    gate.release.set()
    async with raw_peer(server) as peer:
        init = (await peer.initialize("2025-06-18"))["result"]
        tools = (await peer.request("tools/list"))["result"]["tools"]
        required = await peer.request("tools/call", {"name": "must", "arguments": {}})
        created = await create(peer, "work", {"x": 2})
        task_id = created["result"]["task"]["taskId"]
        payload = (await peer.request("tasks/result", {"taskId": task_id}))["result"]
    assert init["protocolVersion"] == "2025-06-18"
    assert init["capabilities"]["tasks"] == {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
    assert {tool["name"]: tool.get("execution") for tool in tools}["must"] == {"taskSupport": "required"}
    assert required["error"]["code"] == -32601
    assert payload["structuredContent"] == {"result": 20}


async def test_task_lifecycle_get_result_list() -> None:
    tasks, server, gate, seen = build()
    async with raw_peer(server) as peer:
        await peer.initialize()
        created = await create(peer, "work", {"x": 4})
        task = created["result"]["task"]
        assert set(created["result"]) == {"task"}
        task_id = task["taskId"]
        with anyio.fail_after(5):
            await gate.started.wait()
        got = (await peer.request("tasks/get", {"taskId": task_id}))["result"]
        waiting: list[dict[str, Any]] = []
        async with anyio.create_task_group() as group:

            async def wait_result() -> None:
                waiting.append(await peer.request("tasks/result", {"taskId": task_id}))

            group.start_soon(wait_result)
            group.start_soon(wait_result)  # two concurrent waiters both get the result
            gate.release.set()
        listed = (await peer.request("tasks/list"))["result"]
        final = (await peer.request("tasks/get", {"taskId": task_id}))["result"]
        completed = await peer.wait_notification(is_completed_status)
    assert task["status"] == "working"
    assert set(task) == {"taskId", "status", "createdAt", "lastUpdatedAt", "ttl", "pollInterval"}
    assert task["ttl"] == 3_600_000  # asked 60 s, floored to the default hour
    assert re.match(ISO_Z, task["createdAt"])
    assert got["status"] == "working"
    assert got["statusMessage"] == "underway"
    assert "resultType" not in got
    assert "_meta" not in got
    assert [frame["result"] for frame in waiting] == [
        {
            "content": [{"type": "text", "text": "40"}],
            "structuredContent": {"result": 40},
            "isError": False,
            "_meta": {RELATED: {"taskId": task_id}},
        }
    ] * 2
    assert [t["taskId"] for t in listed["tasks"]] == [task_id]
    assert "nextCursor" not in listed
    assert final["status"] == "completed"
    assert completed["params"]["taskId"] == task_id
    assert completed["params"]["ttl"] == 3_600_000
    assert seen["current"] is not None
    assert seen["current"].task_id == task_id
    assert tasks.engine.ttl_floor_ms == 3_600_000


async def test_ttl_null_is_unlimited_and_written_as_null() -> None:
    _tasks, server, gate, _seen = build(max_ttl_ms=None)  # no cap: null stays unlimited
    gate.release.set()
    async with raw_peer(server) as peer:
        await peer.initialize()
        task = (await create(peer, "work", {"x": 1}, task={"ttl": None}))["result"]["task"]
        got = (await peer.request("tasks/get", {"taskId": task["taskId"]}))["result"]
        empty = (await create(peer, "work", {"x": 1}, task={}))["result"]["task"]
    assert "ttl" in task
    assert task["ttl"] is None
    assert "ttl" in got
    assert got["ttl"] is None
    assert empty["ttl"] == 3_600_000


async def test_tool_error_fails_the_task_and_tasks_result_returns_it() -> None:
    tasks, server, _gate, _seen = build()
    async with raw_peer(server) as peer:
        await peer.initialize()
        task_id = (await create(peer, "oops", {}))["result"]["task"]["taskId"]
        payload = (await peer.request("tasks/result", {"taskId": task_id}))["result"]
        got = (await peer.request("tasks/get", {"taskId": task_id}))["result"]
    assert got["status"] == "failed"
    assert payload["isError"] is True
    assert [item["type"] for item in payload["content"]] == ["text"]
    assert "tool said no" in payload["content"][0]["text"]
    assert payload["_meta"] == {RELATED: {"taskId": task_id}}
    del tasks


async def test_jsonrpc_error_fails_the_task_and_tasks_result_answers_the_error() -> None:
    _tasks, server, _gate, _seen = build()
    async with raw_peer(server) as peer:
        await peer.initialize()
        task_id = (await create(peer, "boom", {}))["result"]["task"]["taskId"]
        answer = await peer.request("tasks/result", {"taskId": task_id})
        got = (await peer.request("tasks/get", {"taskId": task_id}))["result"]
    assert answer["error"] == {"code": -32050, "message": "backend exploded"}
    assert got["status"] == "failed"
    assert got["statusMessage"] == "backend exploded"


async def test_cancel_returns_the_cancelled_task_and_a_second_cancel_is_invalid_params() -> None:
    _tasks, server, gate, _seen = build()
    async with raw_peer(server) as peer:
        await peer.initialize()
        task_id = (await create(peer, "work", {"x": 1}))["result"]["task"]["taskId"]
        with anyio.fail_after(5):
            await gate.started.wait()
        cancelled = (await peer.request("tasks/cancel", {"taskId": task_id}))["result"]
        again = await peer.request("tasks/cancel", {"taskId": task_id})
        payload = (await peer.request("tasks/result", {"taskId": task_id}))["result"]
        got = (await peer.request("tasks/get", {"taskId": task_id}))["result"]
    assert cancelled["taskId"] == task_id
    assert cancelled["status"] == "cancelled"
    assert again["error"]["code"] == -32602
    assert payload == {"_meta": {RELATED: {"taskId": task_id}}}
    assert got["status"] == "cancelled"


async def test_task_support_is_enforced_with_method_not_found() -> None:
    _tasks, server, _gate, _seen = build()
    async with raw_peer(server) as peer:
        await peer.initialize()
        required = await peer.request("tools/call", {"name": "must", "arguments": {}})
        forbidden = await create(peer, "plain", {})
        required_as_task = await create(peer, "must", {})
        plain = await peer.request("tools/call", {"name": "plain", "arguments": {}})
    assert required["error"]["code"] == -32601
    assert "requires task-augmented invocation" in required["error"]["message"]
    assert forbidden["error"]["code"] == -32601
    assert "does not support task-augmented invocation" in forbidden["error"]["message"]
    assert "task" in required_as_task["result"]
    assert plain["result"]["content"] == [{"type": "text", "text": "plain ran"}]


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("tasks/get", {}),
        ("tasks/get", {"taskId": 7}),
        ("tasks/result", None),
        ("tasks/cancel", {"taskId": ["x"]}),
        ("tasks/list", {"cursor": 3}),
        ("tasks/list", {"cursor": "not-a-task"}),
        ("tasks/get", {"taskId": "unknown"}),
    ],
)
async def test_bad_tasks_requests_are_invalid_params_and_the_session_lives_on(
    method: str, params: dict[str, Any] | None
) -> None:
    _tasks, server, gate, _seen = build()
    gate.release.set()
    async with raw_peer(server) as peer:
        await peer.initialize()
        bad = await peer.request(method, params)
        bad_task = await create(peer, "work", {"x": 1}, task={"ttl": "soon"})
        alive = await peer.request("tools/call", {"name": "plain", "arguments": {}})
    assert bad["error"]["code"] == -32602
    assert bad_task["error"]["code"] == -32602
    assert alive["result"]["content"] == [{"type": "text", "text": "plain ran"}]


async def test_tasks_belong_to_their_session() -> None:
    _tasks, server, gate, _seen = build()
    gate.release.set()
    async with raw_peer(server) as first, raw_peer(server) as second:
        await first.initialize()
        await second.initialize()
        mine = (await create(first, "work", {"x": 1}))["result"]["task"]["taskId"]
        theirs = (await create(second, "work", {"x": 2}))["result"]["task"]["taskId"]
        first_list = (await first.request("tasks/list"))["result"]["tasks"]
        second_list = (await second.request("tasks/list"))["result"]["tasks"]
        cross = {
            method: await second.request(method, {"taskId": mine})
            for method in ("tasks/get", "tasks/result", "tasks/cancel")
        }
        own = (await first.request("tasks/result", {"taskId": mine}))["result"]
    assert [t["taskId"] for t in first_list] == [mine]
    assert [t["taskId"] for t in second_list] == [theirs]
    for method, frame in cross.items():
        assert frame["error"]["code"] == -32602, method
    assert own["structuredContent"] == {"result": 10}


async def test_tasks_list_routes_the_cursor() -> None:
    """Paging itself is the service's (tests/server/test_service_2025.py); here, the routing."""
    _tasks, server, gate, _seen = build()
    gate.release.set()
    async with raw_peer(server) as peer:
        await peer.initialize()
        made = [(await create(peer, "work", {"x": i}))["result"]["task"]["taskId"] for i in range(3)]
        listed = (await peer.request("tasks/list"))["result"]
        foreign = await peer.request("tasks/list", {"cursor": "not-issued"})
    assert [t["taskId"] for t in listed["tasks"]] == made
    assert "nextCursor" not in listed
    assert foreign["error"]["code"] == -32602


async def test_2025_and_2026_share_one_server_but_not_their_methods() -> None:
    _tasks, server, gate, _seen = build(inline_grace_s=0)  # the released tool is a task on 2026 too
    gate.release.set()
    async with raw_peer(server) as peer_2025, raw_peer(server) as peer_2026:
        await peer_2025.initialize()
        id_2025 = (await create(peer_2025, "work", {"x": 1}))["result"]["task"]["taskId"]
        envelope = {"_meta": meta_2026()}
        id_2026 = (
            await peer_2026.request("tools/call", {"name": "work", "arguments": {"x": 1}, **envelope})
        )["result"]["taskId"]
        on_2026 = {
            method: await peer_2026.request(method, {"taskId": id_2025, **envelope})
            for method in ("tasks/result", "tasks/list", "tasks/get")
        }
        update_on_2025 = await peer_2025.request("tasks/update", {"taskId": id_2025, "inputResponses": {}})
        from_2025_of_2026 = await peer_2025.request("tasks/get", {"taskId": id_2026})
    assert on_2026["tasks/result"]["error"]["code"] == -32601
    assert on_2026["tasks/list"]["error"]["code"] == -32601
    assert on_2026["tasks/get"]["error"]["code"] == -32602  # a 2025 task is not a 2026 bearer handle
    assert update_on_2025["error"]["code"] == -32601
    assert from_2025_of_2026["error"]["code"] == -32602


async def test_notifications_cancelled_of_the_answered_call_leaves_its_task_running() -> None:
    _tasks, server, gate, _seen = build()
    async with raw_peer(server) as peer:
        await peer.initialize()  # request 1
        task_id = (await create(peer, "work", {"x": 3}))["result"]["task"]["taskId"]  # request 2
        await peer.notify(
            "notifications/cancelled", {"requestId": 2, "reason": "not how a task is cancelled"}
        )
        with anyio.fail_after(5):
            await gate.started.wait()
        still = (await peer.request("tasks/get", {"taskId": task_id}))["result"]
        gate.release.set()
        payload = (await peer.request("tasks/result", {"taskId": task_id}))["result"]
    assert still["status"] == "working"
    assert payload["structuredContent"] == {"result": 30}


async def test_the_extension_declared_on_a_2025_connection_makes_no_task() -> None:
    tasks, server, gate, seen = build(inline_grace_s=0)  # on 2026-07-28 this call would be a task
    gate.release.set()
    async with raw_peer(server) as peer:
        await peer.initialize(capabilities={"extensions": {EXT: {}}})
        declared = {"io.modelcontextprotocol/clientCapabilities": {"extensions": {EXT: {}}}}
        answer = await peer.request("tools/call", {"name": "work", "arguments": {"x": 1}, "_meta": declared})
    assert "task" not in answer["result"]
    assert answer["result"]["structuredContent"] == {"result": 10}
    assert seen["current"] is None
    assert await tasks.engine.reader.owned_by(None) == []


async def test_a_server_that_offers_no_tasks_runs_a_task_augmented_call_normally() -> None:
    """2025-11-25: a receiver that does not declare the task capability MUST process the request
    normally, ignoring its task metadata (docs/conformance.md, L6); it answered -32601 before."""
    from mcp_tasks_compat.testing import ToolSet, build_task_server

    tools = ToolSet(tools={"echo": _echo}, support={"echo": "forbidden"}, name="no-tasks")
    async with raw_peer(build_task_server(tools)) as peer:
        initialized = await peer.initialize()
        assert "tasks" not in initialized["result"]["capabilities"]
        answer = await peer.request("tools/call", {"name": "echo", "arguments": {"text": "x"}, "task": {}})
    assert "task" not in answer["result"]
    assert answer["result"]["content"][0]["text"] == "x"


async def _echo(text: str) -> str:
    return text
