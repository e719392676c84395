"""2026-07-28 at the wire: raw JSON-RPC frames over the SDK's in-memory streams (as stdio writes them)."""

from __future__ import annotations

import re
from typing import Any

import anyio
import pytest

from mcp_tasks_compat.server import ServerTasks

pytestmark = [pytest.mark.mcp2, pytest.mark.anyio]
pytest.importorskip("mcp.server.mcpserver", reason="needs mcp 2.x (MCPServer)")

from ..harness import EXT, ISO_Z, Gate  # noqa: E402 - needs mcp 2.x
from ._sdk import (  # noqa: E402
    MCPServer,
    meta_2026,
    raw_peer,
)

SERVER_INFO = {"io.modelcontextprotocol/serverInfo": {"name": "wire-2026", "version": ""}}


def build(**options: Any) -> tuple[ServerTasks, Any, Gate]:
    tasks = ServerTasks(tools={"work": "optional", "must": "required"}, **options)
    server = MCPServer("wire-2026", **tasks.mcpserver_kwargs())
    gate = Gate()

    @server.tool()
    async def work(x: int) -> int:
        gate.started.set()
        await gate.release.wait()
        return x

    @server.tool()
    async def must() -> str:
        return "ok"

    return tasks, server, gate


def call(name: str, arguments: dict[str, Any], *, declare: bool = True) -> dict[str, Any]:
    return {"name": name, "arguments": arguments, "_meta": meta_2026(declare=declare)}


def task_params(task_id: Any, *, declare: bool = True, **extra: Any) -> dict[str, Any]:
    return {"taskId": task_id, "_meta": meta_2026(declare=declare), **extra}


async def test_create_task_result_is_flat_with_result_type_task() -> None:
    tasks, server, gate = build()
    async with raw_peer(server) as peer:
        frame = await peer.request("tools/call", call("work", {"x": 3}))
        gate.release.set()
    result = frame["result"]
    assert set(result) == {
        "resultType",
        "taskId",
        "status",
        "createdAt",
        "lastUpdatedAt",
        "ttlMs",
        "pollIntervalMs",
        "_meta",
    }
    assert result["resultType"] == "task"
    assert result["status"] == "working"
    assert re.match(ISO_Z, result["createdAt"])
    assert result["lastUpdatedAt"] == result["createdAt"]
    assert result["ttlMs"] == 3_600_000
    assert result["pollIntervalMs"] == tasks.engine.poll_policy.minimum_ms
    assert result["_meta"] == SERVER_INFO
    assert len(result["taskId"]) >= 43  # 256 bits, url-safe base64


async def test_unlimited_ttl_is_written_as_null() -> None:
    tasks, server, gate = build(max_ttl_ms=None)
    tasks.engine.default_ttl_ms = None  # pyright: ignore[reportAttributeAccessIssue]
    async with raw_peer(server) as peer:
        created = (await peer.request("tools/call", call("work", {"x": 1})))["result"]
        got = (await peer.request("tasks/get", task_params(created["taskId"])))["result"]
        gate.release.set()
    assert "ttlMs" in created
    assert created["ttlMs"] is None
    assert "ttlMs" in got
    assert got["ttlMs"] is None


async def test_result_types_of_every_tasks_method() -> None:
    tasks, server, gate = build()
    async with raw_peer(server) as peer:
        created = (await peer.request("tools/call", call("work", {"x": 9})))["result"]
        task_id = created["taskId"]
        working = (await peer.request("tasks/get", task_params(task_id)))["result"]
        update = await peer.request("tasks/update", task_params(task_id, inputResponses={}))
        gate.release.set()
        with anyio.fail_after(5):
            await tasks.engine.reader.wait_terminal(task_id, None)
        done = (await peer.request("tasks/get", task_params(task_id)))["result"]
        cancel = await peer.request("tasks/cancel", task_params(task_id))
        still = (await peer.request("tasks/get", task_params(task_id)))["result"]
    assert created["resultType"] == "task"
    assert working["resultType"] == "complete"
    assert working["status"] == "working"
    assert "result" not in working
    assert "error" not in working
    assert update["result"] == {"resultType": "complete", "_meta": SERVER_INFO}
    assert cancel["result"] == {"resultType": "complete", "_meta": SERVER_INFO}
    assert done["resultType"] == "complete"
    assert done["status"] == "completed"
    assert done["result"] == {
        "content": [{"type": "text", "text": "9"}],
        "structuredContent": {"result": 9},
        "isError": False,
        "resultType": "complete",
    }
    assert still["status"] == "completed"  # cancel of a terminal task is only an acknowledgement


@pytest.mark.parametrize(
    ("params", "why"),
    [
        ({"_meta": meta_2026()}, "no taskId"),
        ({"taskId": 5, "_meta": meta_2026()}, "taskId not a string"),
        ({"taskId": None, "_meta": meta_2026()}, "taskId null"),
    ],
)
@pytest.mark.parametrize("method", ["tasks/get", "tasks/cancel", "tasks/update"])
async def test_malformed_params_are_invalid_params_and_the_session_lives_on(
    method: str, params: dict[str, Any], why: str
) -> None:
    _tasks, server, gate = build()
    gate.release.set()
    async with raw_peer(server) as peer:
        frame = await peer.request(method, params)
        alive = await peer.request("tools/call", call("work", {"x": 1}, declare=False))
    assert frame["error"]["code"] == -32602, why
    assert alive["result"]["structuredContent"] == {"result": 1}


async def test_update_with_malformed_input_responses_is_invalid_params() -> None:
    _tasks, server, gate = build()
    async with raw_peer(server) as peer:
        task_id = (await peer.request("tools/call", call("work", {"x": 1})))["result"]["taskId"]
        missing = await peer.request("tasks/update", task_params(task_id))
        not_object = await peer.request("tasks/update", task_params(task_id, inputResponses=[1]))
        bad_entry = await peer.request("tasks/update", task_params(task_id, inputResponses={"k": 3}))
        extra_keys = await peer.request("tasks/update", task_params(task_id, inputResponses={}, surplus=True))
        gate.release.set()
    for frame in (missing, not_object, bad_entry):
        assert frame["error"]["code"] == -32602
    assert extra_keys["result"]["resultType"] == "complete"


async def test_undeclared_capability_gets_missing_capability_everywhere() -> None:
    _tasks, server, gate = build()
    required: dict[str, Any] = {"requiredCapabilities": {"extensions": {EXT: {}}}}
    async with raw_peer(server) as peer:
        task_id = (await peer.request("tools/call", call("work", {"x": 1})))["result"]["taskId"]
        must = await peer.request("tools/call", call("must", {}, declare=False))
        answers = {
            method: await peer.request(method, task_params(task_id, declare=False, inputResponses={}))
            for method in ("tasks/get", "tasks/update", "tasks/cancel")
        }
        # The task is untouched and the session lives on.
        still = (await peer.request("tasks/get", task_params(task_id)))["result"]
        gate.release.set()
    assert must["error"] == {
        "code": -32021,
        "message": "Missing required client capability",
        "data": required,
    }
    for method, frame in answers.items():
        assert frame["error"]["code"] == -32021, method
        assert frame["error"]["data"] == required, method
    assert still["status"] == "working"


async def test_2025_params_task_is_ignored_on_2026() -> None:
    _tasks, server, gate = build()
    gate.release.set()
    async with raw_peer(server) as peer:
        frame = await peer.request(
            "tools/call", {**call("work", {"x": 4}, declare=False), "task": {"ttl": 1000}}
        )
    assert frame["result"]["structuredContent"] == {"result": 4}


@pytest.mark.parametrize("method", ["tasks/result", "tasks/list"])
async def test_removed_methods_are_method_not_found(method: str) -> None:
    _tasks, server, gate = build()
    async with raw_peer(server) as peer:
        task_id = (await peer.request("tools/call", call("work", {"x": 1})))["result"]["taskId"]
        frame = await peer.request(method, task_params(task_id))
        gate.release.set()
    assert frame["error"]["code"] == -32601


async def test_unknown_id_is_invalid_params_with_the_id() -> None:
    _tasks, server, _gate = build()
    async with raw_peer(server) as peer:
        frame = await peer.request("tasks/get", task_params("nope"))
    assert frame["error"] == {
        "code": -32602,
        "message": "Failed to retrieve task: Task not found",
        "data": {"taskId": "nope"},
    }


async def test_discover_offers_the_extension_and_no_legacy_tasks_capability() -> None:
    _tasks, server, _gate = build()
    async with raw_peer(server) as peer:
        frame = await peer.request("server/discover", {"_meta": meta_2026()})
    capabilities = frame["result"]["capabilities"]
    assert capabilities["extensions"] == {EXT: {}}
    assert "tasks" not in capabilities  # the 2025-11-25 capability is never offered beside the extension


async def test_a_legacy_tasks_capability_alone_does_not_declare_the_extension() -> None:
    _tasks, server, gate = build()
    legacy = meta_2026(
        declare=False,
        **{"io.modelcontextprotocol/clientCapabilities": {"tasks": {"requests": {"tools": {"call": {}}}}}},
    )
    async with raw_peer(server) as peer:
        task_id = (await peer.request("tools/call", call("work", {"x": 3})))["result"]["taskId"]
        gate.release.set()
        plain = await peer.request("tools/call", {"name": "work", "arguments": {"x": 2}, "_meta": legacy})
        must = await peer.request("tools/call", {"name": "must", "arguments": {}, "_meta": legacy})
        got = await peer.request("tasks/get", {"taskId": task_id, "_meta": legacy})
    assert plain["result"]["resultType"] == "complete"
    assert plain["result"]["structuredContent"] == {"result": 2}
    assert must["error"]["code"] == -32021
    assert got["error"]["code"] == -32021


async def test_notifications_cancelled_of_the_answered_call_leaves_its_task_running() -> None:
    tasks, server, gate = build()
    async with raw_peer(server) as peer:
        created = await peer.request("tools/call", call("work", {"x": 5}))  # the peer's first request: id 1
        task_id = created["result"]["taskId"]
        await peer.notify(
            "notifications/cancelled", {"requestId": 1, "reason": "not how a task is cancelled"}
        )
        with anyio.fail_after(5):
            await gate.started.wait()
        still = (await peer.request("tasks/get", task_params(task_id)))["result"]
        gate.release.set()
        with anyio.fail_after(5):
            await tasks.engine.reader.wait_terminal(task_id, None)
        done = (await peer.request("tasks/get", task_params(task_id)))["result"]
    assert still["status"] == "working"
    assert done["status"] == "completed"
    assert done["result"]["structuredContent"] == {"result": 5}
