"""The Tasks extension (2026-07-28) on an mcp 2.x MCPServer, driven by a real 2.x ClientSession."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest

from mcp_tasks_compat.server import ServerTasks, current_call, report_status

pytestmark = [pytest.mark.mcp2, pytest.mark.anyio]

pytest.importorskip("mcp.server.mcpserver", reason="needs mcp 2.x (MCPServer)")

from ..harness import EXT, Gate  # noqa: E402
from ._sdk import (  # noqa: E402 - after the skip, these import mcp 2.x
    Ack,
    CallToolResult,
    MCPError,
    MCPServer,
    TaskHandle,
    ToolError,
    UpdateParams,
    UpdateTask,
    cancel_task,
    declaring_session,
    get_task,
)


@dataclass
class App:
    tasks: ServerTasks
    server: Any
    gate: Gate = field(default_factory=Gate)
    seen: dict[str, Any] = field(default_factory=dict[str, Any])


def build_app(**task_options: Any) -> App:
    tasks = ServerTasks(
        tools={
            "slow": "optional",
            "must": "required",
            "oops": "optional",
            "boom": "optional",
            "stubborn": "optional",
        },
        **task_options,
    )
    app = App(tasks=tasks, server=MCPServer("ext-2026", **tasks.mcpserver_kwargs()))
    server, gate, seen = app.server, app.gate, app.seen

    @server.tool()
    async def slow(x: int) -> int:
        await report_status("halfway")  # inside the inline grace: the task starts with it
        gate.started.set()
        try:
            await gate.release.wait()
        except anyio.get_cancelled_exc_class():
            gate.cancelled.set()
            raise
        seen["slow.current"] = current_call().task  # a task by now (not yet while inside the grace)
        return x * 2

    @server.tool()
    async def must(x: int) -> int:
        return x

    @server.tool()
    async def plain(x: int) -> int:
        await report_status("ignored in a plain call")
        seen["plain.current"] = current_call().task
        return x + 1

    @server.tool()
    async def oops() -> str:
        raise ToolError("tool went wrong")

    @server.tool()
    async def boom() -> str:
        raise MCPError(code=-32050, message="backend exploded", data={"where": "db"})

    @server.tool()
    async def stubborn() -> str:
        gate.started.set()
        try:
            with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                await gate.release.wait()
        finally:
            gate.finished.set()
        return "finished anyway"

    return app


async def wait_done(app: App, task_id: str) -> None:
    with anyio.fail_after(5):
        await app.tasks.engine.reader.wait_terminal(task_id, None)


async def test_discover_advertises_the_extension() -> None:
    app = build_app()
    async with declaring_session(app.server) as session:
        discovered = await session.discover()
    assert discovered.capabilities.extensions == {EXT: {}}


async def test_declaring_client_gets_a_task_whose_result_is_inline() -> None:
    app = build_app()
    async with declaring_session(app.server) as session:
        handle = await session.call_tool("slow", {"x": 21}, allow_claimed=True)
        assert isinstance(handle, TaskHandle)
        assert handle.status == "working"
        assert handle.ttl_ms == 3_600_000  # the default floor
        with anyio.fail_after(5):
            await app.gate.started.wait()
        running = await get_task(session, handle.task_id)
        assert (running.status, running.status_message, running.result) == ("working", "halfway", None)
        app.gate.release.set()
        await wait_done(app, handle.task_id)
        done = await get_task(session, handle.task_id)
    assert done.status == "completed"
    assert done.result is not None
    assert done.result["structuredContent"] == {"result": 42}
    assert done.result["isError"] is False
    seen_task = app.seen["slow.current"]
    assert seen_task is not None
    assert seen_task.task_id == handle.task_id


async def test_non_declaring_client_gets_a_plain_result_and_required_is_refused() -> None:
    app = build_app()
    async with declaring_session(app.server, declare=False) as session:
        app.gate.release.set()
        result = await session.call_tool("slow", {"x": 2})
        assert result.structured_content == {"result": 4}
        with pytest.raises(MCPError) as refused:
            await session.call_tool("must", {"x": 1})
        # the session lives on
        again = await session.call_tool("plain", {"x": 1})
    assert refused.value.error.code == -32021
    assert refused.value.error.data == {"requiredCapabilities": {"extensions": {EXT: {}}}}
    assert again.structured_content == {"result": 2}
    assert app.seen["plain.current"] is None
    assert app.seen["slow.current"] is None


async def test_forbidden_tool_runs_plainly_for_a_declaring_client() -> None:
    app = build_app()
    async with declaring_session(app.server) as session:
        result = await session.call_tool("plain", {"x": 5}, allow_claimed=True)
    assert isinstance(result, CallToolResult)
    assert result.structured_content == {"result": 6}
    assert app.seen["plain.current"] is None


async def test_required_tool_runs_as_a_task_for_a_declaring_client() -> None:
    app = build_app()
    async with declaring_session(app.server) as session:
        handle = await session.call_tool("must", {"x": 7}, allow_claimed=True)
        assert isinstance(handle, TaskHandle)
        await wait_done(app, handle.task_id)
        done = await get_task(session, handle.task_id)
    assert done.status == "completed"
    assert done.result is not None
    assert done.result["structuredContent"] == {"result": 7}


async def test_tool_error_result_is_completed_with_the_result_inline() -> None:
    app = build_app(inline_grace_s=0)  # a quick tool: a task only without the grace
    async with declaring_session(app.server) as session:
        handle = await session.call_tool("oops", {}, allow_claimed=True)
        assert isinstance(handle, TaskHandle)
        await wait_done(app, handle.task_id)
        done = await get_task(session, handle.task_id)
    assert done.status == "completed"
    assert done.error is None
    assert done.result is not None
    assert done.result["isError"] is True
    assert "tool went wrong" in done.result["content"][0]["text"]


async def test_jsonrpc_error_from_the_tool_is_failed_with_the_error_inline() -> None:
    app = build_app(inline_grace_s=0)  # a quick tool: a task only without the grace
    async with declaring_session(app.server) as session:
        handle = await session.call_tool("boom", {}, allow_claimed=True)
        assert isinstance(handle, TaskHandle)
        await wait_done(app, handle.task_id)
        done = await get_task(session, handle.task_id)
    assert done.status == "failed"
    assert done.result is None
    assert done.error == {"code": -32050, "message": "backend exploded", "data": {"where": "db"}}


async def test_cancel_stops_the_work_and_cancelled_is_sticky() -> None:
    app = build_app()
    async with declaring_session(app.server) as session:
        handle = await session.call_tool("stubborn", {}, allow_claimed=True)
        assert isinstance(handle, TaskHandle)
        with anyio.fail_after(5):
            await app.gate.started.wait()
        ack = await cancel_task(session, handle.task_id)
        assert ack.model_extra == {"resultType": "complete"}
        assert (await get_task(session, handle.task_id)).status == "cancelled"
        # The work ignores cancellation (shielded) and returns a result afterwards...
        app.gate.release.set()
        with anyio.fail_after(5):
            await app.gate.finished.wait()
        # ... a second cancel is still just an acknowledgement ...
        await cancel_task(session, handle.task_id)
        after = await get_task(session, handle.task_id)
    # ... and the task stays cancelled, with no result.
    assert after.status == "cancelled"
    assert after.result is None


async def test_cancel_interrupts_a_cooperative_tool() -> None:
    app = build_app()
    async with declaring_session(app.server) as session:
        handle = await session.call_tool("slow", {"x": 1}, allow_claimed=True)
        assert isinstance(handle, TaskHandle)
        with anyio.fail_after(5):
            await app.gate.started.wait()
        await cancel_task(session, handle.task_id)
        with anyio.fail_after(5):
            await app.gate.cancelled.wait()  # the work itself was interrupted
        assert (await get_task(session, handle.task_id)).status == "cancelled"


async def test_unknown_task_id_is_invalid_params_and_the_session_lives_on() -> None:
    app = build_app()
    async with declaring_session(app.server) as session:
        for call in (get_task, cancel_task):
            with pytest.raises(MCPError) as unknown:
                await call(session, "no-such-task")
            assert unknown.value.error.code == -32602
            assert unknown.value.error.data == {"taskId": "no-such-task"}
        with pytest.raises(MCPError) as unknown_update:
            await session.send_request(
                UpdateTask(params=UpdateParams(task_id="no-such-task", input_responses={})), Ack
            )
        app.gate.release.set()
        alive = await session.call_tool("plain", {"x": 1})
    assert unknown_update.value.error.code == -32602
    assert alive.structured_content == {"result": 2}


async def test_expired_task_id_is_invalid_params() -> None:
    now = [1000.0]
    app = build_app(ttl_floor_ms=0, default_ttl_ms=50)
    app.tasks.engine.reader.clock = lambda: now[0]
    async with declaring_session(app.server) as session:
        handle = await session.call_tool("must", {"x": 1}, allow_claimed=True)
        assert isinstance(handle, TaskHandle)
        assert handle.ttl_ms == 50
        await wait_done(app, handle.task_id)
        assert (await get_task(session, handle.task_id)).status == "completed"
        now[0] += 0.051  # retention (counted from the terminal transition) runs out
        assert await app.tasks.engine.sweep() == 1
        with pytest.raises(MCPError) as expired:
            await get_task(session, handle.task_id)
    assert expired.value.error.code == -32602


async def test_tasks_update_is_acknowledged_and_ignores_unknown_keys() -> None:
    app = build_app()
    async with declaring_session(app.server) as session:
        handle = await session.call_tool("slow", {"x": 1}, allow_claimed=True)
        assert isinstance(handle, TaskHandle)
        ack = await session.send_request(
            UpdateTask(
                params=UpdateParams(
                    task_id=handle.task_id, input_responses={"nobody-asked": {"action": "accept"}}
                )
            ),
            Ack,
        )
        state = await get_task(session, handle.task_id)
        app.gate.release.set()
        await wait_done(app, handle.task_id)
    assert ack.model_extra == {"resultType": "complete"}
    assert state.status == "working"
    record = await app.tasks.engine.lookup(handle.task_id, None)
    assert record.input_responses == {}


async def test_outstanding_input_request_receives_its_response() -> None:
    """The hook the input feature builds on: tasks/update delivers answers to outstanding keys."""
    app = build_app()
    async with declaring_session(app.server) as session:
        handle = await session.call_tool("slow", {"x": 1}, allow_claimed=True)
        assert isinstance(handle, TaskHandle)
        record = await app.tasks.engine.lookup(handle.task_id, None)
        asked = {"name": {"method": "elicitation/create", "params": {}}}
        await app.tasks.engine.mutate(
            record,
            lambda state: state.evolve(task=state.task.evolve(input_requests=asked)),
            force_notify=False,
        )
        await session.send_request(
            UpdateTask(
                params=UpdateParams(
                    task_id=handle.task_id,
                    input_responses={"name": {"action": "accept", "content": {"n": "x"}}, "other": {}},
                )
            ),
            Ack,
        )
        app.gate.release.set()
        await wait_done(app, handle.task_id)
    assert record.input_responses == {"name": {"action": "accept", "content": {"n": "x"}}}


async def test_poll_interval_grows_with_the_age_of_the_task() -> None:
    from mcp_tasks_compat.server import PollPolicy

    now_ms = [0.0]
    app = build_app(poll_policy=PollPolicy(minimum_ms=100, maximum_ms=5_000, ratio=0.1))
    async with declaring_session(app.server) as session:
        handle = await session.call_tool("slow", {"x": 1}, allow_claimed=True)
        assert isinstance(handle, TaskHandle)
        assert handle.poll_interval_ms == 100
        record = await app.tasks.engine.lookup(handle.task_id, None)
        from datetime import timedelta

        # Age the task by moving its creation time back (the hint is computed from its age).
        older_start = record.task.created_at - timedelta(seconds=20)
        await app.tasks.engine.mutate(
            record,
            lambda state: state.evolve(task=state.task.evolve(created_at=older_start)),
            force_notify=False,
        )
        del now_ms
        older = await get_task(session, handle.task_id)
        app.gate.release.set()
        await wait_done(app, handle.task_id)
    assert older.poll_interval_ms is not None
    assert 2_000 <= older.poll_interval_ms <= 2_100
