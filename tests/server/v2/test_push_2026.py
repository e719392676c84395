"""``notifications/tasks`` on ``subscriptions/listen`` (2026-07-28), at the wire: raw JSON-RPC frames."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_tasks_compat.server import ServerTasks, log, report_progress, report_status

pytestmark = [pytest.mark.mcp2, pytest.mark.anyio]
pytest.importorskip("mcp.server.mcpserver", reason="needs mcp 2.x (MCPServer)")

from mcp.server.mcpserver import Context  # noqa: E402

from ..harness import Gate, RawPeer  # noqa: E402 - needs mcp 2.x
from ._sdk import MCPServer, meta_2026, raw_peer  # noqa: E402

ACK = "notifications/subscriptions/acknowledged"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"


def build(**options: Any) -> tuple[Any, Gate]:
    tasks = ServerTasks(tools={"work": "optional"}, **options)
    server = MCPServer("push-2026", **tasks.mcpserver_kwargs())
    gate = Gate()

    @server.tool()
    async def work(x: int) -> int:
        await report_status("going")
        gate.started.set()
        await gate.release.wait()
        return x

    return server, gate


async def start_task(peer: RawPeer, x: int = 1) -> str:
    frame = await peer.request("tools/call", {"name": "work", "arguments": {"x": x}, "_meta": meta_2026()})
    return str(frame["result"]["taskId"])


async def listen(
    peer: RawPeer, request_id: str, notifications: dict[str, Any], *, declare: bool = True
) -> None:
    params = {"notifications": notifications, "_meta": meta_2026(declare=declare)}
    await peer.send({"jsonrpc": "2.0", "id": request_id, "method": "subscriptions/listen", "params": params})


def ack_of(request_id: str) -> Any:
    return lambda frame: frame["method"] == ACK and frame["params"]["_meta"][SUBSCRIPTION_ID] == request_id


def pushed(task_id: str, status: str) -> Any:
    def match(frame: dict[str, Any]) -> bool:
        params = frame.get("params") or {}
        return (
            frame["method"] == "notifications/tasks"
            and params.get("taskId") == task_id
            and (params.get("status") == status)
        )

    return match


async def test_the_ack_agrees_to_the_callers_tasks_then_pushes_each_change_with_the_result_inline() -> None:
    server, gate = build()
    async with raw_peer(server) as peer:
        task_id = await start_task(peer)
        await listen(peer, "L1", {"taskIds": [task_id, "no-such-task", task_id]})
        ack = await peer.wait_notification(ack_of("L1"))
        assert ack["params"]["notifications"] == {"taskIds": [task_id]}
        await gate.started.wait()
        working = await peer.wait_notification(pushed(task_id, "working"))
        assert working["params"]["_meta"] == {SUBSCRIPTION_ID: "L1"}
        assert "resultType" not in working["params"]
        gate.release.set()
        done = await peer.wait_notification(pushed(task_id, "completed"))
    params = done["params"]
    assert params["result"]["structuredContent"] == {"result": 1}
    assert params["ttlMs"] == 3_600_000
    assert params["_meta"] == {SUBSCRIPTION_ID: "L1"}
    frames = [f for f in peer.frames if f.get("method") in (ACK, "notifications/tasks")]
    assert frames[0]["method"] == ACK  # the acknowledgement is the first frame of the stream
    statuses = [f["params"]["status"] for f in frames[1:]]
    assert statuses == sorted(statuses, key=["working", "completed"].index)


async def test_a_client_that_does_not_declare_the_extension_gets_32021() -> None:
    server, gate = build()
    async with raw_peer(server) as peer:
        task_id = await start_task(peer)
        params = {"notifications": {"taskIds": [task_id]}, "_meta": meta_2026(declare=False)}
        answer = await peer.request("subscriptions/listen", params)  # refused: answered at once
        gate.release.set()
    assert answer["error"]["code"] == -32021
    assert answer["error"]["message"] == "Missing required client capability"
    assert answer["error"]["data"] == {
        "requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    }


async def test_core_kinds_and_task_ids_are_acknowledged_together() -> None:
    server, gate = build()
    async with raw_peer(server) as peer:
        task_id = await start_task(peer)
        await listen(peer, "L3", {"toolsListChanged": True, "taskIds": [task_id]})
        ack = await peer.wait_notification(ack_of("L3"))
        assert ack["params"]["notifications"] == {"toolsListChanged": True, "taskIds": [task_id]}
        gate.release.set()
        done = await peer.wait_notification(pushed(task_id, "completed"))
    assert done["params"]["_meta"] == {SUBSCRIPTION_ID: "L3"}


async def test_a_listen_without_task_ids_is_the_sdks_own() -> None:
    server, _gate = build()
    async with raw_peer(server) as peer:
        await listen(peer, "L4", {"toolsListChanged": True})
        ack = await peer.wait_notification(ack_of("L4"))
    assert ack["params"]["notifications"] == {"toolsListChanged": True}


async def test_push_false_leaves_task_ids_out_of_the_ack() -> None:
    server, gate = build(push=False)
    async with raw_peer(server) as peer:
        task_id = await start_task(peer)
        await listen(peer, "L5", {"taskIds": [task_id]})
        ack = await peer.wait_notification(ack_of("L5"))
        gate.release.set()
    assert "taskIds" not in ack["params"]["notifications"]


@pytest.mark.filterwarnings("ignore:The logging capability is deprecated")
async def test_no_progress_or_log_notification_once_a_call_is_a_task() -> None:
    """Neither on the listen stream nor anywhere else: a task's progress is its status (and the
    numbers in its ``_meta``), its log goes to the server's Python logging."""
    tasks = ServerTasks(tools={"noisy": "required"})  # a task at once: every line below runs in it
    server = MCPServer("push-2026-quiet", **tasks.mcpserver_kwargs())
    gate = Gate()

    @server.tool()
    async def noisy(ctx: Context) -> str:
        await gate.release.wait()
        await report_progress(1, 2, "half")  # this library's: the task's status
        await log("info", "from the task")
        await ctx.report_progress(2, 2, "sdk progress")  # the SDK's own: its request was answered
        await ctx.info("sdk log")
        return "done"

    envelope = meta_2026(progressToken="p-1", **{"io.modelcontextprotocol/logLevel": "debug"})
    async with raw_peer(server) as peer:
        created = await peer.request("tools/call", {"name": "noisy", "arguments": {}, "_meta": envelope})
        task_id = created["result"]["taskId"]
        await listen(peer, "Q1", {"taskIds": [task_id]})
        await peer.wait_notification(ack_of("Q1"))
        gate.release.set()
        done = await peer.wait_notification(pushed(task_id, "completed"))
        await peer.request("ping", {"_meta": meta_2026()})  # what the stream sent after its last status is in
    assert created["result"]["resultType"] == "task"
    assert done["params"]["result"]["content"] == [{"type": "text", "text": "done"}]
    statuses = [
        f["params"].get("statusMessage") for f in peer.frames if f.get("method") == "notifications/tasks"
    ]
    assert "half" in statuses
    methods = {frame.get("method") for frame in peer.frames}
    assert not methods & {"notifications/progress", "notifications/message"}, methods
