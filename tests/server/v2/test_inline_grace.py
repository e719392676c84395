"""The inline grace on 2026-07-28 and multi-round-trip input before and inside a task (mcp 2.x).

A task-capable call starts its tool undecided: done within ``inline_grace_s`` it is answered
plainly; otherwise it becomes a task, unrestarted. A required tool always ends as a task, but may
ask for input first as multi-round-trip rounds (SEP-2322 + SEP-2663): round 1 is a plain
``input_required``, only the final round makes the task. A tool's own ``input_required`` inside a
running task is relayed as the task's ``inputRequests``. On 2025-11-25 the same tools work through
the ``tasks/result`` relay.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest

from mcp_tasks_compat.core._model import TaskStatus
from mcp_tasks_compat.server import ServerTasks, current_call, elicit, report_status

pytestmark = [pytest.mark.mcp2, pytest.mark.anyio]

pytest.importorskip("mcp.server.mcpserver", reason="needs mcp 2.x (MCPServer)")

import mcp_types as types  # noqa: E402
from mcp.server.mcpserver import Context  # noqa: E402

from ..harness import Gate  # noqa: E402
from ._sdk import (  # noqa: E402 - after the skip, these import mcp 2.x
    CallToolResult,
    MCPServer,
    TaskHandle,
    declaring_session,
    get_task,
    meta_2026,
    raw_peer,
)

BOUND_S = 5
NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
ALICE = {"action": "accept", "content": {"name": "Alice"}}


@dataclass
class App:
    tasks: ServerTasks
    server: MCPServer
    gate: Gate = field(default_factory=Gate)
    runs: list[str] = field(default_factory=lambda: list[str]())

    async def task_count(self) -> int:
        page, _cursor = await self.tasks.engine.store.list_tasks(owner=None)
        return len(page)

    async def done(self, task_id: str) -> None:
        with anyio.fail_after(BOUND_S):
            await self.tasks.engine.reader.wait_terminal(task_id, None)


def build_app(**options: Any) -> App:
    tasks = ServerTasks(
        tools={
            "quick": "optional",
            "held": "optional",
            "quick_required": "required",
            "greet_first": "required",
            "greet_first_optional": "optional",
            "native_rounds": "optional",
        },
        **options,
    )
    app = App(tasks, MCPServer("inline-grace", **tasks.mcpserver_kwargs()))
    server, gate = app.server, app.gate

    @server.tool()
    async def quick(x: int) -> int:
        await report_status("inside the grace")  # no task to carry it: dropped with the plain answer
        app.runs.append("quick")
        return x + 1

    @server.tool()
    async def held() -> str:
        app.runs.append("held")
        await report_status("one")  # inside the grace: the task starts with it
        gate.started.set()
        await gate.release.wait()
        task = current_call().task
        assert task is not None  # a task by now
        await report_status("two")
        return f"ran once as {task.task_id}"

    @server.tool()
    async def quick_required(x: int) -> int:
        return x * 10

    @server.tool()
    async def greet_first() -> str:
        """Ask first (a round before any task), then run long as a task."""
        answer = await elicit("Your name?", NAME_SCHEMA, before_task=True)
        app.runs.append("greet_first")
        gate.started.set()
        await gate.release.wait()
        return f"Hello, {(answer.content or {}).get('name')}!"

    @server.tool()
    async def greet_first_optional() -> str:
        answer = await elicit("Your name?", NAME_SCHEMA, before_task=True)
        return f"Hi, {(answer.content or {}).get('name')}!"

    @server.tool()
    async def native_rounds(ctx: Context) -> CallToolResult | types.InputRequiredResult:
        """The SDK's own multi-round-trip shape: returns ``input_required`` until answered."""
        app.runs.append(f"native state={ctx.request_state}")
        responses = ctx.input_responses or {}
        answer = responses.get("user_name")
        if not isinstance(answer, types.ElicitResult):
            request = types.ElicitRequest(
                params=types.ElicitRequestFormParams(message="Your name?", requested_schema=NAME_SCHEMA)
            )
            return types.InputRequiredResult(input_requests={"user_name": request}, request_state="round-1")
        return CallToolResult(content=[types.TextContent(type="text", text=f"native {answer.content}")])

    return app


async def test_a_quick_tool_is_answered_plainly_and_no_task_exists() -> None:
    app = build_app()
    async with declaring_session(app.server) as session:
        result = await session.call_tool("quick", {"x": 1}, allow_claimed=True)
    assert isinstance(result, CallToolResult)
    assert result.structured_content == {"result": 2}
    assert app.runs == ["quick"]
    assert await app.task_count() == 0


async def test_a_tool_that_outlives_the_grace_is_a_task_run_once_with_its_statuses_in_order() -> None:
    app = build_app(inline_grace_s=0.01)
    async with declaring_session(app.server) as session:
        handle = await session.call_tool("held", {}, allow_claimed=True)
        assert isinstance(handle, TaskHandle)
        # The status reported inside the grace is the task's first.
        assert (handle.status, handle.status_message) == ("working", "one")
        record = await app.tasks.engine.lookup(handle.task_id, None)
        seen: list[tuple[str, str | None]] = []

        async def listen(task: Any) -> None:
            seen.append((task.status.value, task.status_message))

        record.listeners.append(listen)
        app.gate.release.set()
        await app.done(handle.task_id)
        done = await get_task(session, handle.task_id)
    assert done.status == "completed"
    assert done.result is not None
    assert done.result["structuredContent"] == {"result": f"ran once as {handle.task_id}"}
    assert app.runs == ["held"]  # not restarted when it became a task
    assert seen == [("working", "two"), ("completed", "two")]


async def test_grace_zero_makes_every_task_capable_call_a_task() -> None:
    app = build_app(inline_grace_s=0)
    async with declaring_session(app.server) as session:
        handle = await session.call_tool("quick", {"x": 1}, allow_claimed=True)
        assert isinstance(handle, TaskHandle)
        await app.done(handle.task_id)
        done = await get_task(session, handle.task_id)
    assert done.result is not None
    assert done.result["structuredContent"] == {"result": 2}


async def test_a_required_tool_done_within_the_grace_is_still_a_task_already_completed() -> None:
    app = build_app()
    async with declaring_session(app.server) as session:
        handle = await session.call_tool("quick_required", {"x": 4}, allow_claimed=True)
        assert isinstance(handle, TaskHandle)
        assert handle.status == "working"  # a task begins so; it is completed by the first tasks/get
        done = await get_task(session, handle.task_id)
    assert done.status == "completed"
    assert done.result is not None
    assert done.result["structuredContent"] == {"result": 40}


def _call(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "arguments": {}, "_meta": meta_2026(), **extra}


async def test_ask_first_round_one_is_plain_and_only_the_final_round_makes_the_task() -> None:
    app = build_app()
    async with raw_peer(app.server) as peer:
        first = (await peer.request("tools/call", _call("greet_first")))["result"]
        assert await app.task_count() == 0
        (key,) = first["inputRequests"]
        second = (
            await peer.request(
                "tools/call",
                _call("greet_first", inputResponses={key: ALICE}, requestState=first["requestState"]),
            )
        )["result"]
        with anyio.fail_after(BOUND_S):
            await app.gate.started.wait()
        app.gate.release.set()
        await app.done(second["taskId"])
        done = (await peer.request("tasks/get", {"taskId": second["taskId"], "_meta": meta_2026()}))["result"]
    assert first["resultType"] == "input_required"
    assert "taskId" not in first
    assert first["inputRequests"][key]["method"] == "elicitation/create"
    assert first["inputRequests"][key]["params"]["requestedSchema"] == NAME_SCHEMA
    assert second["resultType"] == "task"
    assert "requestState" not in second
    assert "inputRequests" not in second
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"] == "Hello, Alice!"
    assert app.runs == ["greet_first"]  # round 1 ended at the question


async def test_ask_first_on_an_optional_tool_done_quickly_is_answered_plainly_in_round_two() -> None:
    app = build_app()
    async with raw_peer(app.server) as peer:
        first = (await peer.request("tools/call", _call("greet_first_optional")))["result"]
        (key,) = first["inputRequests"]
        second = (
            await peer.request(
                "tools/call",
                _call(
                    "greet_first_optional", inputResponses={key: ALICE}, requestState=first["requestState"]
                ),
            )
        )["result"]
    assert second["resultType"] == "complete"
    assert second["content"][0]["text"] == "Hi, Alice!"
    assert await app.task_count() == 0


@pytest.mark.parametrize("declare", [True, False], ids=["within-the-grace", "plain-call"])
async def test_the_sdks_own_input_required_rounds_pass_through_with_their_own_state(declare: bool) -> None:
    app = build_app()
    async with raw_peer(app.server) as peer:
        envelope = {"_meta": meta_2026(declare=declare)}
        first = (await peer.request("tools/call", {"name": "native_rounds", "arguments": {}, **envelope}))[
            "result"
        ]
        retry = {"inputResponses": {"user_name": ALICE}, "requestState": first["requestState"], **envelope}
        second = (await peer.request("tools/call", {"name": "native_rounds", "arguments": {}, **retry}))[
            "result"
        ]
    assert first["resultType"] == "input_required"
    assert list(first["inputRequests"]) == ["user_name"]
    assert "taskId" not in first
    assert second["resultType"] == "complete"
    assert second["content"][0]["text"] == "native {'name': 'Alice'}"
    assert app.runs == ["native state=None", "native state=round-1"]  # its own state, unsealed
    assert await app.task_count() == 0


async def test_input_required_inside_a_running_task_is_relayed_as_the_tasks_input_requests() -> None:
    app = build_app(inline_grace_s=0)
    async with raw_peer(app.server) as peer:
        created = (await peer.request("tools/call", _call("native_rounds")))["result"]
        task_id = created["taskId"]
        record = await app.tasks.engine.lookup(task_id, None)
        with anyio.fail_after(BOUND_S):
            while record.task.status is not TaskStatus.INPUT_REQUIRED:
                await record.changed.wait()
        waiting = (await peer.request("tasks/get", {"taskId": task_id, "_meta": meta_2026()}))["result"]
        (key,) = waiting["inputRequests"]
        ack = await peer.request(
            "tasks/update", {"taskId": task_id, "inputResponses": {key: ALICE}, "_meta": meta_2026()}
        )
        await app.done(task_id)
        done = (await peer.request("tasks/get", {"taskId": task_id, "_meta": meta_2026()}))["result"]
    assert waiting["status"] == "input_required"
    assert waiting["inputRequests"][key]["method"] == "elicitation/create"
    assert "error" not in ack
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"] == "native {'name': 'Alice'}"
    # The tool ran again with the answers and its own requestState, as a client's retry would.
    assert app.runs == ["native state=None", "native state=round-1"]


def _accept(method: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
    assert method == "elicitation/create"
    return {"result": ALICE}


@pytest.mark.parametrize("tool", ["greet_first", "native_rounds"])
async def test_2025_the_same_tools_work_through_the_tasks_result_relay(tool: str) -> None:
    app = build_app()
    app.gate.release.set()
    async with raw_peer(app.server, answer=_accept) as peer:
        await peer.initialize(capabilities={"elicitation": {}}, client_name="raw")
        created = await peer.request("tools/call", {"name": tool, "arguments": {}, "task": {"ttl": 60_000}})
        task_id = created["result"]["task"]["taskId"]
        result = await peer.request("tasks/result", {"taskId": task_id})
    assert [request["method"] for request in peer.server_requests] == ["elicitation/create"]
    text = result["result"]["content"][0]["text"]
    assert text == ("Hello, Alice!" if tool == "greet_first" else "native {'name': 'Alice'}")


async def test_ask_first_in_a_plain_2026_call_is_a_round_too() -> None:
    # A client without the extension (and a forbidden tool) never gets a task; the question is a
    # multi-round-trip round of the plain call, so the tool still gets its answer.
    app = build_app()
    async with raw_peer(app.server) as peer:
        envelope = {"_meta": meta_2026(declare=False)}
        first = (
            await peer.request("tools/call", {"name": "greet_first_optional", "arguments": {}, **envelope})
        )["result"]
        (key,) = first["inputRequests"]
        retry = {"inputResponses": {key: ALICE}, "requestState": first["requestState"], **envelope}
        second = (
            await peer.request("tools/call", {"name": "greet_first_optional", "arguments": {}, **retry})
        )["result"]
    assert first["resultType"] == "input_required"
    assert second["resultType"] == "complete"
    assert second["content"][0]["text"] == "Hi, Alice!"
    assert await app.task_count() == 0
