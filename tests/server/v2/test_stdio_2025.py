"""The 2025-11-25 dialect of a 2.x MCPServer over stdio, as an mcp 1.x client sees it: exact wire.

The server is the testing kit's serve command for :data:`tests.server.harness.HOLD_TOOLSET`, run as
a subprocess and driven with raw JSON-RPC lines, which is what a 1.x client sends (a 1.x
interpreter is not needed to produce these frames).
"""

from __future__ import annotations

import re
from contextlib import AbstractAsyncContextManager
from typing import Any, cast

import pytest

pytestmark = [pytest.mark.mcp2, pytest.mark.anyio]
pytest.importorskip("mcp.server.mcpserver", reason="needs mcp 2.x (MCPServer)")

from ..harness import RELATED, StdioPeer, hold_server_command, hold_server_environment, stdio_peer  # noqa: E402

TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


def stdio_server() -> AbstractAsyncContextManager[StdioPeer]:
    """The kit's serve command for the hold tool set, driven with raw JSON-RPC lines."""
    return stdio_peer(hold_server_command(), env=hold_server_environment())


def normalized(frame: dict[str, Any], task_id: str) -> Any:
    """The frame with the task id and timestamps replaced by placeholders."""

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: walk(item) for key, item in cast("dict[str, Any]", value).items()}
        if isinstance(value, list):
            return [walk(item) for item in cast("list[Any]", value)]
        if value == task_id:
            return "<taskId>"
        if isinstance(value, str) and TIMESTAMP.match(value):
            return "<timestamp>"
        return value

    return walk(frame)


async def test_2025_dialect_over_stdio_exact_wire_and_clean_exit() -> None:
    async with stdio_server() as peer:
        init = await peer.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "mcp", "version": "0.1.0"},
            },
        )
        await peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        tools = await peer.request("tools/list")
        created = await peer.request(
            "tools/call", {"task": {"ttl": 30000}, "name": "hold", "arguments": {"text": "hello"}}
        )
        task_id = created["result"]["task"]["taskId"]
        working = await peer.request("tasks/get", {"taskId": task_id})
        listed = await peer.request("tasks/list")
        released = await peer.request("tools/call", {"name": "release", "arguments": {}})
        result = await peer.request("tasks/result", {"taskId": task_id})
        done = await peer.request("tasks/get", {"taskId": task_id})
        cancel_done = await peer.request("tasks/cancel", {"taskId": task_id})
        second = await peer.request("tools/call", {"task": {}, "name": "must", "arguments": {"text": "x"}})
        second_id = second["result"]["task"]["taskId"]
        required_plain = await peer.request("tools/call", {"name": "must", "arguments": {"text": "x"}})
        forbidden_task = await peer.request("tools/call", {"task": {}, "name": "release", "arguments": {}})
        unknown = await peer.request("tasks/get", {"taskId": "nope"})
        malformed = await peer.request("tasks/get", {"taskId": 1})
        second_result = await peer.request("tasks/result", {"taskId": second_id})
        # cancel, and leave one task holding when the client goes away
        third = (
            await peer.request(
                "tools/call", {"task": {}, "name": "hold", "arguments": {"text": "a", "gate": "later"}}
            )
        )["result"]
        left_running = await peer.request(
            "tools/call", {"task": {}, "name": "hold", "arguments": {"text": "b", "gate": "never"}}
        )
        cancelled = await peer.request("tasks/cancel", {"taskId": third["task"]["taskId"]})
        after = await peer.request("tasks/get", {"taskId": third["task"]["taskId"]})
    # (leaving the block closed stdin with a task still holding: the process exited 0)

    # mcp < 2.3 also writes an empty "experimental" capability; nothing else differs.
    assert init["result"]["capabilities"].pop("experimental", {}) == {}
    assert init == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {
            "capabilities": {
                "prompts": {"listChanged": False},
                "resources": {"listChanged": False, "subscribe": False},
                "tools": {"listChanged": False},
                "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}},
            },
            "protocolVersion": "2025-11-25",
            "serverInfo": {"name": "stdio-tasks", "version": "1.0"},
        },
    }
    executions = {tool["name"]: tool.get("execution") for tool in tools["result"]["tools"]}
    assert executions == {
        "hold": {"taskSupport": "optional"},
        "release": None,
        "must": {"taskSupport": "required"},
    }

    assert normalized(created, task_id) == {
        "jsonrpc": "2.0",
        "id": 3,
        "result": {
            "task": {
                "taskId": "<taskId>",
                "status": "working",
                "createdAt": "<timestamp>",
                "lastUpdatedAt": "<timestamp>",
                "ttl": 3600000,
                "pollInterval": 10,  # the default hint while a task is young
            }
        },
    }
    working_task = normalized(working, task_id)["result"]
    assert working_task["status"] == "working"
    assert working_task["statusMessage"] == "holding"
    assert set(working_task) == {
        "taskId",
        "status",
        "statusMessage",
        "createdAt",
        "lastUpdatedAt",
        "ttl",
        "pollInterval",
    }
    assert [t["taskId"] for t in listed["result"]["tasks"]] == [task_id]
    assert released["result"]["content"] == [{"type": "text", "text": "released"}]
    assert normalized(result, task_id) == {
        "jsonrpc": "2.0",
        "id": 7,
        "result": {
            "content": [{"type": "text", "text": "hello"}],
            "structuredContent": {"result": "hello"},
            "isError": False,
            "_meta": {RELATED: {"taskId": "<taskId>"}},
        },
    }
    assert done["result"]["status"] == "completed"
    assert cancel_done["error"]["code"] == -32602
    assert required_plain["error"]["code"] == -32601
    assert forbidden_task["error"]["code"] == -32601
    assert unknown == {
        "jsonrpc": "2.0",
        "id": 13,
        "error": {"code": -32602, "message": "Task not found: nope"},
    }
    assert malformed["error"]["code"] == -32602
    assert second_result["result"]["structuredContent"] == {"result": "x"}
    statuses = [
        (n["params"]["taskId"], n["params"]["status"])
        for n in peer.notifications
        if n.get("method") == "notifications/tasks/status"
    ]
    assert (task_id, "working") in statuses  # the "holding" status message
    assert (task_id, "completed") in statuses

    assert cancelled["result"]["status"] == "cancelled"
    assert cancelled["result"]["statusMessage"] == "cancelled by the client"
    assert after["result"]["status"] == "cancelled"
    assert left_running["result"]["task"]["status"] == "working"
