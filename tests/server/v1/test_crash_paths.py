"""Regression tests for the mcp 1.x crash and hang paths (docs/server.md, "The SDK's crash paths").

Each path has two tests:

* ``test_shim_*``: the same scenario through ``ServerTasks.install`` survives;
* ``test_bare_sdk_*``: **a demonstration, not a test of our code** -- the SDK's own pattern
  (``enable_tasks`` + ``run_task``) in the same scenario crashes or hangs, so the shim test above it
  is known to exercise a real failure. If an SDK release fixes a path, its demonstration fails
  and says so.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

pytestmark = [pytest.mark.mcp1, pytest.mark.anyio]

pytest.importorskip("mcp.server.fastmcp", reason="needs mcp 1.x (FastMCP)")

import mcp.types as types  # noqa: E402 - after the skip, these import mcp 1.x
from mcp.shared.exceptions import McpError  # noqa: E402
from pydantic import ValidationError  # noqa: E402

from mcp_tasks_compat._engine import EVERY_OWNER, SERVER_STOPPED  # noqa: E402
from mcp_tasks_compat.server import ServerTasks  # noqa: E402

from ..harness import exception_leaves  # noqa: E402
from ._sdk import (  # noqa: E402
    TASK_TOOLS,
    Connection,
    Controls,
    StatusWatch,
    bare_sdk_server,
    connect,
    lowlevel_server,
)


def shim_server(controls: Controls, **options: Any) -> tuple[ServerTasks, Any]:
    tasks = ServerTasks(tools=dict(TASK_TOOLS), **options)
    return tasks, lowlevel_server(tasks, controls)


def assert_ended_cleanly(conn: Connection) -> None:
    assert conn.outcome.done.is_set(), "server.run did not return after the client left"
    assert conn.outcome.error is None, f"server.run raised {conn.outcome.error!r}"


def crash_leaves(conn: Connection) -> list[BaseException]:
    assert conn.outcome.error is not None, "expected the bare SDK's server.run to crash"
    return exception_leaves(conn.outcome.error)


async def raw_task_call(conn: Connection, name: str, task: types.TaskMetadata) -> types.CreateTaskResult:
    request = types.CallToolRequest(params=types.CallToolRequestParams(name=name, arguments={}, task=task))
    return await conn.session.send_request(types.ClientRequest(request), types.CreateTaskResult)


async def barrier(conn: Connection) -> None:
    """A ping round trip: the server has started handling every earlier request."""
    await conn.session.send_ping()


# --- #1 tasks/cancel, then the work returns normally ----------------------------------------------


async def test_shim_cancel_then_normal_completion_stays_cancelled() -> None:
    controls = Controls()
    _tasks, server = shim_server(controls)
    async with connect(server) as conn:
        task_id = (await conn.tasks.call_tool_as_task("stubborn", {})).task.taskId
        await controls.started.wait()
        assert (await conn.tasks.cancel_task(task_id)).status == "cancelled"
        controls.release.set()  # the work ignores the cancel and returns a result
        await controls.returned.wait()
        await barrier(conn)
        assert (await conn.tasks.get_task(task_id)).status == "cancelled"
        payload = await conn.tasks.get_task_result(task_id, types.GetTaskPayloadResult)
        assert payload.model_extra == {}  # the late result is not served for a cancelled task
        assert not conn.outcome.done.is_set()
        await barrier(conn)
    assert_ended_cleanly(conn)


async def test_bare_sdk_cancel_then_normal_completion_crashes_the_session() -> None:
    controls = Controls()
    async with connect(bare_sdk_server(controls)) as conn:
        task_id = (await conn.tasks.call_tool_as_task("stubborn", {})).task.taskId
        await controls.started.wait()
        await conn.tasks.cancel_task(task_id)
        controls.release.set()
        with anyio.fail_after(2):
            await conn.outcome.done.wait()
    assert any(
        isinstance(leaf, ValueError) and "terminal status 'cancelled'" in str(leaf)
        for leaf in crash_leaves(conn)
    )


# --- #2 the TTL runs out while the work runs, and someone polls -----------------------------------


async def test_shim_ttl_expiry_while_running_and_polled_fails_the_task() -> None:
    controls = Controls()
    watch = StatusWatch()
    _tasks, server = shim_server(controls, ttl_floor_ms=0)
    async with connect(server, message_handler=watch) as conn:
        created = await conn.tasks.call_tool_as_task("wait", {}, ttl=200)
        assert created.task.ttl == 200
        task_id = created.task.taskId
        await controls.started.wait()
        waiter_error: list[McpError] = []

        async def wait_for_result() -> None:
            with pytest.raises(McpError) as failed:
                await conn.tasks.get_task_result(task_id, types.CallToolResult)
            waiter_error.append(failed.value)

        async with anyio.create_task_group() as group:
            group.start_soon(wait_for_result)
            assert (await conn.tasks.get_task(task_id)).status == "working"  # polled while running
            with anyio.fail_after(3):
                await watch.wait_for(task_id, "failed")
            status = await conn.tasks.get_task(task_id)  # polled after expiry, work still unwinding
        assert status.status == "failed"
        assert status.statusMessage is not None
        assert "TTL of 200 ms" in status.statusMessage
        # tasks/result answers the JSON-RPC error the task failed with
        assert waiter_error[0].error.code == types.INTERNAL_ERROR
        assert "TTL" in waiter_error[0].error.message
        assert controls.stopped.is_set()  # the work was stopped, not left running
        again = await conn.tasks.call_tool_as_task("echo", {"text": "still alive"})
        assert (await conn.tasks.get_task_result(again.task.taskId, types.CallToolResult)).isError is False
    assert_ended_cleanly(conn)


async def test_bare_sdk_ttl_expiry_while_running_and_polled_crashes_the_session() -> None:
    controls = Controls()
    async with connect(bare_sdk_server(controls)) as conn:
        task_id = (await conn.tasks.call_tool_as_task("stubborn", {}, ttl=1)).task.taskId
        await controls.started.wait()
        gone: McpError | None = None
        with anyio.fail_after(2):
            while gone is None:  # the poll that makes the SDK's store delete the running task
                try:
                    await conn.tasks.get_task(task_id)
                except McpError as error:
                    gone = error
        assert "not found" in gone.error.message
        controls.release.set()
        with anyio.fail_after(2):
            await conn.outcome.done.wait()
    assert any(isinstance(leaf, ValueError) and "not found" in str(leaf) for leaf in crash_leaves(conn))


# --- #3 the client disconnects while a task runs --------------------------------------------------


async def test_shim_disconnect_mid_task_ends_the_run_promptly_and_cleanly() -> None:
    controls = Controls()
    tasks, server = shim_server(controls)
    async with connect(server) as conn:
        await conn.tasks.call_tool_as_task("wait", {})
        await controls.started.wait()
        await conn.close_client()
        with anyio.fail_after(1):
            await conn.outcome.done.wait()
        assert controls.stopped.is_set()  # the run was cancelled, not awaited
    assert_ended_cleanly(conn)
    # A stop is not a purge: the task stays in the store, cancelled with the reason, until its TTL.
    (kept,), _ = await tasks.engine.store.list_tasks(owner=EVERY_OWNER, cursor=None)
    assert (kept.task.status.value, kept.task.status_message) == ("cancelled", SERVER_STOPPED)


async def test_shim_disconnect_with_a_blocked_tasks_result_returns_promptly() -> None:
    """On mcp < 1.27 ``Server.run`` waits for every open handler; a blocked ``tasks/result`` is released."""
    controls = Controls()
    _tasks, server = shim_server(controls)
    async with connect(server) as conn:
        task_id = (await conn.tasks.call_tool_as_task("wait", {})).task.taskId
        await controls.started.wait()

        async def blocked_result() -> None:
            with pytest.raises(McpError):  # the client's own "connection closed"
                await conn.tasks.get_task_result(task_id, types.CallToolResult)

        async with anyio.create_task_group() as group:
            group.start_soon(blocked_result)
            await conn.wire.wait_for(lambda d, m: d == "C->S" and m.get("method") == "tasks/result")
            await barrier(conn)
            await conn.close_client()
            with anyio.fail_after(1):
                await conn.outcome.done.wait()
    assert_ended_cleanly(conn)
    assert controls.stopped.is_set()


async def test_bare_sdk_disconnect_mid_task_waits_for_the_work_then_crashes() -> None:
    controls = Controls()
    async with connect(bare_sdk_server(controls)) as conn:
        await conn.tasks.call_tool_as_task("wait", {})
        await controls.started.wait()
        await conn.close_client()
        with anyio.move_on_after(0.3):
            await conn.outcome.done.wait()
        assert not conn.outcome.done.is_set(), (
            "the SDK no longer waits for background work after a disconnect"
        )
        controls.release.set()  # the work reports status to the closed session
        with anyio.fail_after(2):
            await conn.outcome.done.wait()
    assert any(isinstance(leaf, anyio.ClosedResourceError) for leaf in crash_leaves(conn))


# --- #4 one session's end and the other sessions of the same Server --------------------------------


async def test_shim_one_session_ending_leaves_other_sessions_working() -> None:
    controls = Controls()
    watch = StatusWatch()
    _tasks, server = shim_server(controls, ttl_floor_ms=0)
    async with connect(server) as first, connect(server, message_handler=watch) as second:
        doomed = (await first.tasks.call_tool_as_task("wait", {})).task.taskId
        survivor = (await second.tasks.call_tool_as_task("wait", {})).task.taskId
        await controls.started.wait()
        await first.close_client()  # the first session also held the TTL sweeper
        with anyio.fail_after(1):
            await first.outcome.done.wait()
        assert doomed not in [task.taskId for task in (await second.tasks.list_tasks()).tasks]

        late = await second.tasks.call_tool_as_task("echo", {"text": "after"})
        assert (await second.tasks.get_task_result(late.task.taskId, types.CallToolResult)).isError is False
        assert (await second.tasks.get_task(survivor)).status == "working"

        expiring = (await second.tasks.call_tool_as_task("wait", {}, ttl=50)).task.taskId
        with anyio.fail_after(3):  # the sweeper moved to the surviving session
            await watch.wait_for(expiring, "failed")

        controls.release.set()
        result = await second.tasks.get_task_result(survivor, types.CallToolResult)
        assert [b.text for b in result.content if isinstance(b, types.TextContent)] == ["released"]
    assert_ended_cleanly(first)
    assert_ended_cleanly(second)


async def test_shim_session_end_in_memory_is_the_servers_stop_and_cancels_its_runs_saying_why() -> None:
    """In memory (as on stdio) the session's end is the server's stop: a task still running then
    ends cancelled with the reason (read through the engine), as on mcp 2.x."""
    controls = Controls()
    tasks, server = shim_server(controls)
    seen: list[Any] = []
    async with connect(server) as conn:
        task_id = (await conn.tasks.call_tool_as_task("wait", {})).task.taskId
        await controls.started.wait()
        state = await tasks.engine.store.get(task_id)
        assert state is not None
        record = tasks.engine.record_of(state)  # the live record of the run in this process
        record.listeners.append(lambda task: _append(seen, task))
    assert_ended_cleanly(conn)
    assert [(task.status.value, task.status_message) for task in seen] == [("cancelled", SERVER_STOPPED)]


async def _append(seen: list[Any], task: Any) -> None:
    seen.append(task)


async def test_bare_sdk_one_session_ending_breaks_run_task_for_the_others() -> None:
    controls = Controls()
    server = bare_sdk_server(controls)
    async with connect(server) as first, connect(server) as second:
        await first.close_client()
        with anyio.fail_after(2):
            await first.outcome.done.wait()
        request = types.CallToolRequest(
            params=types.CallToolRequestParams(name="echo", arguments={}, task=types.TaskMetadata(ttl=1000))
        )
        answer = await second.session.send_request(types.ClientRequest(request), types.CallToolResult)
        assert answer.isError is True
        assert "TaskSupport not running" in str(answer.content[0])


# --- #5 two concurrent tasks/result calls on one task -----------------------------------------------


async def _two_waiters(
    conn: Connection, controls: Controls, task_id: str, *, second_waiter_grace_s: float
) -> dict[int, types.CallToolResult]:
    """Two ``tasks/result`` calls, both open before the task ends; the answers that came back."""
    answers: dict[int, types.CallToolResult] = {}
    answered = {1: anyio.Event(), 2: anyio.Event()}

    async def waiter(number: int) -> None:
        answers[number] = await conn.tasks.get_task_result(task_id, types.CallToolResult)
        answered[number].set()

    async with anyio.create_task_group() as group:
        for number in (1, 2):
            group.start_soon(waiter, number)
            await conn.wire.wait_for(
                lambda d, m: d == "C->S" and m.get("method") == "tasks/result", count=number
            )
            await barrier(conn)  # the server is now blocked in this waiter
        controls.release.set()
        with anyio.fail_after(1):
            await answered[2].wait()
        with anyio.move_on_after(second_waiter_grace_s):
            await answered[1].wait()
        group.cancel_scope.cancel()
    return answers


async def test_shim_two_concurrent_result_waiters_are_both_answered() -> None:
    controls = Controls()
    _tasks, server = shim_server(controls)
    async with connect(server) as conn:
        task_id = (await conn.tasks.call_tool_as_task("wait", {})).task.taskId
        await controls.started.wait()
        answers = await _two_waiters(conn, controls, task_id, second_waiter_grace_s=1)
        assert sorted(answers) == [1, 2]
        assert answers[1].content == answers[2].content
    assert_ended_cleanly(conn)


async def test_bare_sdk_two_concurrent_result_waiters_leave_the_first_hanging() -> None:
    controls = Controls()
    async with connect(bare_sdk_server(controls), server_grace_s=0.2) as conn:
        task_id = (await conn.tasks.call_tool_as_task("echo", {})).task.taskId
        await controls.started.wait()
        answers = await _two_waiters(conn, controls, task_id, second_waiter_grace_s=0.3)
        assert sorted(answers) == [2], "both waiters were answered: the SDK fixed the overwritten event"


# --- #6 ttl: null (unlimited) ---------------------------------------------------------------------


async def test_shim_task_without_a_ttl_gets_the_server_default() -> None:
    """``params.task = {}`` asks for no TTL, so the server's default applies, as on mcp 2.x
    (an explicit ``"ttl": null`` is unlimited: test_wire_2025 sends it raw, as the SDK's
    client cannot)."""
    controls = Controls()
    tasks, server = shim_server(controls, max_ttl_ms=None)
    default = tasks.engine.default_ttl_ms
    async with connect(server) as conn:
        created = await raw_task_call(conn, "wait", types.TaskMetadata())  # params.task = {}
        assert created.task.ttl == default
        task_id = created.task.taskId
        assert conn.wire.sent("tools/call")[-1]["params"]["task"] == {}
        assert (await conn.tasks.get_task(task_id)).ttl == default
        assert [task.ttl for task in (await conn.tasks.list_tasks()).tasks] == [default]
        controls.release.set()
        assert (await conn.tasks.get_task_result(task_id, types.CallToolResult)).isError is False
    assert_ended_cleanly(conn)


async def test_bare_sdk_unlimited_ttl_breaks_the_sdk_client() -> None:
    controls = Controls()
    async with connect(bare_sdk_server(controls)) as conn:
        with pytest.raises(ValidationError, match="ttl"):
            await raw_task_call(conn, "echo", types.TaskMetadata())
        controls.release.set()


# --- #7/#8 failed and cancelled tasks: what tasks/result answers ------------------------------------


async def test_shim_failed_tasks_answer_their_payload_and_cancelled_ones_only_meta() -> None:
    controls = Controls()
    _tasks, server = shim_server(controls)
    async with connect(server) as conn:
        raised = (await conn.tasks.call_tool_as_task("boom", {})).task.taskId
        result = await conn.tasks.get_task_result(raised, types.CallToolResult)
        assert result.isError is True
        assert "boom" in str(result.content[0])
        soft = (await conn.tasks.call_tool_as_task("soft_fail", {})).task.taskId
        assert (await conn.tasks.get_task_result(soft, types.CallToolResult)).isError is True
        assert [(await conn.tasks.get_task(t)).status for t in (raised, soft)] == ["failed", "failed"]

        cancelled = (await conn.tasks.call_tool_as_task("wait", {})).task.taskId
        await conn.tasks.cancel_task(cancelled)
        payload = await conn.tasks.get_task_result(cancelled, types.GetTaskPayloadResult)
        assert payload.meta == {"io.modelcontextprotocol/related-task": {"taskId": cancelled}}
        assert payload.model_extra == {}
    assert_ended_cleanly(conn)


async def test_bare_sdk_failed_tasks_lose_their_payload_and_is_error_completes() -> None:
    controls = Controls()
    async with connect(bare_sdk_server(controls)) as conn:
        raised = (await conn.tasks.call_tool_as_task("boom", {})).task.taskId
        with pytest.raises(ValidationError):  # only _meta comes back: no content to validate
            await conn.tasks.get_task_result(raised, types.CallToolResult)
        assert (await conn.tasks.get_task(raised)).status == "failed"
        soft = (await conn.tasks.call_tool_as_task("soft_fail", {})).task.taskId
        assert (await conn.tasks.get_task_result(soft, types.CallToolResult)).isError is True
        assert (await conn.tasks.get_task(soft)).status == "completed"  # not failed, as 2025-11-25 asks
