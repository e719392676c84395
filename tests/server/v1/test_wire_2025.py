"""The 2025-11-25 wire of the mcp 1.x server adapter, checked with raw JSON-RPC."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

pytestmark = [pytest.mark.mcp1, pytest.mark.anyio]

pytest.importorskip("mcp.server.fastmcp", reason="needs mcp 1.x (FastMCP)")

from mcp_tasks_compat.core._codec_2025 import SERVER_TASKS_CAPABILITY  # noqa: E402
from mcp_tasks_compat.server import ServerTasks  # noqa: E402

from ..harness import RawPeer  # noqa: E402
from ._sdk import TASK_TOOLS, Controls, fastmcp_server, lowlevel_server, raw_connect  # noqa: E402

TASK_KEYS = {"taskId", "status", "createdAt", "lastUpdatedAt", "ttl", "pollInterval"}


def build(kind: str, controls: Controls, **options: Any) -> Any:
    tasks = ServerTasks(tools=dict(TASK_TOOLS), **options)
    return lowlevel_server(tasks, controls) if kind == "lowlevel" else fastmcp_server(tasks, controls)


def error_of(answer: dict[str, Any]) -> tuple[int, str]:
    assert "error" in answer, answer
    return answer["error"]["code"], answer["error"]["message"]


async def alive(client: RawPeer) -> None:
    assert (await client.request("ping", {}))["result"] == {}


@pytest.mark.parametrize("kind", ["lowlevel", "fastmcp"])
async def test_initialize_advertises_tasks_and_tools_declare_task_support(kind: str) -> None:
    async with raw_connect(build(kind, Controls())) as (client, initialized):
        assert initialized["result"]["capabilities"]["tasks"] == SERVER_TASKS_CAPABILITY
        tools = (await client.request("tools/list", {}))["result"]["tools"]
        declared = {tool["name"]: tool.get("execution") for tool in tools}
        for name, support in TASK_TOOLS.items():
            if name in declared:
                assert declared[name] == (None if support == "forbidden" else {"taskSupport": support})
        assert declared["echo"] == {"taskSupport": "optional"}
        assert declared["needs_task"] == {"taskSupport": "required"}
        assert declared["no_task"] is None  # absent means forbidden; nothing declared, nothing added


async def test_task_messages_have_the_2025_shapes() -> None:
    controls = Controls()
    async with raw_connect(build("lowlevel", controls)) as (client, _):
        created = await client.request("tools/call", {"name": "wait", "arguments": {}, "task": {"ttl": 5000}})
        assert set(created["result"]) == {"task"}
        task = created["result"]["task"]
        assert set(task) == TASK_KEYS
        assert (task["status"], task["ttl"]) == ("working", 3_600_000)
        assert task["createdAt"].endswith("Z")
        task_id = task["taskId"]

        await controls.started.wait()
        got = (await client.request("tasks/get", {"taskId": task_id}))["result"]
        assert set(got) == TASK_KEYS | {"statusMessage"}
        assert got["statusMessage"] == "started"

        listed = await client.request("tasks/list")
        assert [t["taskId"] for t in listed["result"]["tasks"]] == [task_id]
        assert "nextCursor" not in listed["result"]

        cancelled = (await client.request("tasks/cancel", {"taskId": task_id}))["result"]
        assert cancelled["status"] == "cancelled"
        assert cancelled["taskId"] == task_id

        assert error_of(await client.request("tasks/cancel", {"taskId": task_id})) == (
            -32602,
            "Cannot cancel task in terminal status 'cancelled'",
        )
        payload = (await client.request("tasks/result", {"taskId": task_id}))["result"]
        assert payload == {"_meta": {"io.modelcontextprotocol/related-task": {"taskId": task_id}}}
        statuses = [n for n in client.notifications if n.get("method") == "notifications/tasks/status"]
        assert statuses
        assert statuses[0]["params"]["taskId"] == task_id
        assert set(statuses[0]["params"]) >= TASK_KEYS


async def test_completed_task_result_is_the_tool_result_with_related_task_meta() -> None:
    async with raw_connect(build("lowlevel", Controls(), max_ttl_ms=None)) as (client, _):
        created = await client.request(
            "tools/call", {"name": "echo", "arguments": {"text": "hi"}, "task": {"ttl": None}}
        )
        task_id = created["result"]["task"]["taskId"]
        assert created["result"]["task"]["ttl"] is None  # null asks for no TTL: unlimited, written as null
        result = (await client.request("tasks/result", {"taskId": task_id}))["result"]
        assert result["structuredContent"] == {"echo": "hi", "as_task": True}
        assert result["isError"] is False
        assert result["_meta"] == {"io.modelcontextprotocol/related-task": {"taskId": task_id}}
        assert (await client.request("tasks/get", {"taskId": task_id}))["result"]["ttl"] is None


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("tasks/get", {}),
        ("tasks/get", {"taskId": 5}),
        ("tasks/get", None),
        ("tasks/result", {"taskId": None}),
        ("tasks/result", {"task_id": "x"}),
        ("tasks/cancel", {"taskId": ["x"]}),
        ("tasks/list", {"cursor": 5}),
        ("tools/call", {"name": "echo", "arguments": {}, "task": "soon"}),
        ("tools/call", {"name": "echo", "arguments": {}, "task": {"ttl": "long"}}),
    ],
)
async def test_malformed_params_are_invalid_params_and_the_session_lives(method: str, params: Any) -> None:
    async with raw_connect(build("lowlevel", Controls())) as (client, _):
        answer = await client.request(method, params)
        assert error_of(answer)[0] == -32602
        await alive(client)
        created = await client.request(
            "tools/call", {"name": "echo", "arguments": {"text": "ok"}, "task": {}}
        )
        task_id = created["result"]["task"]["taskId"]
        assert (await client.request("tasks/result", {"taskId": task_id}))["result"]["isError"] is False


async def test_unknown_task_ids_are_invalid_params() -> None:
    async with raw_connect(build("lowlevel", Controls())) as (client, _):
        for method in ("tasks/get", "tasks/result", "tasks/cancel"):
            assert error_of(await client.request(method, {"taskId": "nope"})) == (
                -32602,
                "Task not found: nope",
            )
        await alive(client)


@pytest.mark.parametrize("kind", ["lowlevel", "fastmcp"])
async def test_task_support_violations_are_method_not_found_errors_not_results(kind: str) -> None:
    async with raw_connect(build(kind, Controls())) as (client, _):
        forbidden = await client.request(
            "tools/call", {"name": "no_task", "arguments": {}, "task": {"ttl": 1}}
        )
        assert error_of(forbidden)[0] == -32601
        required = await client.request("tools/call", {"name": "needs_task", "arguments": {}})
        assert error_of(required)[0] == -32601
        await alive(client)


async def test_stateless_runs_do_not_offer_tasks_and_refuse_task_calls() -> None:
    """Nothing outlives a stateless request, so a task could never be read back."""
    async with raw_connect(build("lowlevel", Controls()), stateless=True) as (client, initialized):
        assert "tasks" not in initialized["result"]["capabilities"]
        answer = await client.request("tools/call", {"name": "echo", "arguments": {}, "task": {}})
        code, message = error_of(answer)
        assert code == -32600
        assert "stateful session" in message
        plain = await client.request("tools/call", {"name": "echo", "arguments": {"text": "x"}})
        assert plain["result"]["isError"] is False


async def test_notifications_cancelled_of_the_answered_call_leaves_its_task_running() -> None:
    controls = Controls()
    async with raw_connect(build("lowlevel", controls)) as (client, _):  # initialize was request 1
        created = await client.request("tools/call", {"name": "wait", "arguments": {}, "task": {}})  # 2
        task_id = created["result"]["task"]["taskId"]
        await client.notify(
            "notifications/cancelled", {"requestId": 2, "reason": "not how a task is cancelled"}
        )
        with anyio.fail_after(5):
            await controls.started.wait()
        still = (await client.request("tasks/get", {"taskId": task_id}))["result"]
        controls.release.set()
        payload = (await client.request("tasks/result", {"taskId": task_id}))["result"]
    assert still["status"] == "working"
    assert not controls.stopped.is_set()
    assert payload["content"][0]["text"] == "released"


async def test_the_2026_extension_in_a_requests_meta_makes_no_task() -> None:
    declared = {
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    }
    controls = Controls()
    async with raw_connect(build("lowlevel", controls)) as (client, _):
        answer = await client.request(
            "tools/call", {"name": "echo", "arguments": {"text": "x"}, "_meta": declared}
        )
    assert "task" not in answer["result"]
    assert answer["result"]["structuredContent"] == {"echo": "x", "as_task": False}
    assert controls.seen_tasks == [None]


async def test_a_server_that_offers_no_tasks_runs_a_task_augmented_call_normally() -> None:
    """2025-11-25: a receiver that does not declare the task capability MUST process the request
    normally, ignoring its task metadata (docs/conformance.md, L6); it answered -32601 before."""
    from mcp_tasks_compat.testing import ToolSet, build_task_server

    tools = ToolSet(tools={"echo": _echo}, support={"echo": "forbidden"}, name="no-tasks")
    async with raw_connect(build_task_server(tools)) as (client, initialized):
        assert "tasks" not in initialized["result"]["capabilities"]
        answer = await client.request("tools/call", {"name": "echo", "arguments": {"text": "x"}, "task": {}})
    assert "task" not in answer["result"]
    assert answer["result"]["content"][0]["text"] == "x"


async def _echo(text: str) -> str:
    return text
