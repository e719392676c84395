"""Task-capable tools on mcp 1.x (2025-11-25), low-level Server and FastMCP, with the SDK's own client."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

pytestmark = [pytest.mark.mcp1, pytest.mark.anyio]

pytest.importorskip("mcp.server.fastmcp", reason="needs mcp 1.x (FastMCP)")

import mcp.types as types  # noqa: E402 - after the skip, these import mcp 1.x
from mcp.shared.exceptions import McpError  # noqa: E402

from mcp_tasks_compat._engine import DEFAULT_TTL_FLOOR_MS  # noqa: E402
from mcp_tasks_compat.server import ServerTasks  # noqa: E402

from ._sdk import TASK_TOOLS, Controls, StatusWatch, connect, fastmcp_server, lowlevel_server  # noqa: E402

KINDS = ["lowlevel", "fastmcp"]


def build(kind: str, controls: Controls, **options: Any) -> Any:
    tasks = ServerTasks(tools=dict(TASK_TOOLS), **options)
    if kind == "lowlevel":
        return lowlevel_server(tasks, controls)
    return fastmcp_server(tasks, controls)


@pytest.mark.parametrize("kind", KINDS)
async def test_task_reports_status_and_answers_its_result(kind: str) -> None:
    controls = Controls()
    log = StatusWatch()
    async with connect(build(kind, controls), message_handler=log) as conn:
        created = await conn.tasks.call_tool_as_task("wait", {})
        task_id = created.task.taskId
        assert created.task.status == "working"
        assert created.task.ttl == DEFAULT_TTL_FLOOR_MS  # the client's 60 s is raised to the 1 h floor
        assert len(task_id) >= 43  # 256 bits from secrets
        await controls.started.wait()

        running = await conn.tasks.get_task(task_id)
        assert (running.status, running.statusMessage) == ("working", "started")

        controls.release.set()
        result = await conn.tasks.get_task_result(task_id, types.CallToolResult)
        assert result.isError is False
        assert [block.text for block in result.content if isinstance(block, types.TextContent)] == [
            "released"
        ]
        assert result.meta == {"io.modelcontextprotocol/related-task": {"taskId": task_id}}

        done = await conn.tasks.get_task(task_id)
        assert done.status == "completed"
        assert controls.seen_tasks == [task_id]  # current_call().task inside the body
    assert ("working", "started") in log.of(task_id)
    assert log.of(task_id)[-1][0] == "completed"


@pytest.mark.parametrize("kind", KINDS)
async def test_plain_call_runs_inline_and_report_status_is_a_no_op(kind: str) -> None:
    controls = Controls()
    async with connect(build(kind, controls)) as conn:
        result = await conn.session.call_tool("echo", {"text": "hi"})
        assert result.isError is False
        assert result.structuredContent is not None
        assert result.structuredContent["as_task"] is False
        assert controls.seen_tasks == [None]
        assert (await conn.tasks.list_tasks()).tasks == []


@pytest.mark.parametrize("kind", KINDS)
async def test_structured_result_is_kept_as_the_task_result(kind: str) -> None:
    controls = Controls()
    async with connect(build(kind, controls)) as conn:
        created = await conn.tasks.call_tool_as_task("echo", {"text": "x"})
        result = await conn.tasks.get_task_result(created.task.taskId, types.CallToolResult)
        assert result.structuredContent is not None
        assert result.structuredContent["as_task"] is True
        assert result.structuredContent["echo"] == "x"
        assert (await conn.tasks.get_task(created.task.taskId)).statusMessage == "echoing x"


async def test_is_error_result_fails_the_task_and_keeps_the_payload() -> None:
    controls = Controls()
    async with connect(build("lowlevel", controls)) as conn:
        created = await conn.tasks.call_tool_as_task("soft_fail", {})
        result = await conn.tasks.get_task_result(created.task.taskId, types.CallToolResult)
        assert result.isError is True
        assert [block.text for block in result.content if isinstance(block, types.TextContent)] == [
            "soft failure"
        ]
        assert (await conn.tasks.get_task(created.task.taskId)).status == "failed"


@pytest.mark.parametrize("kind", KINDS)
async def test_exception_in_the_tool_fails_the_task_with_the_error_text(kind: str) -> None:
    controls = Controls()
    async with connect(build(kind, controls)) as conn:
        created = await conn.tasks.call_tool_as_task("boom", {})
        result = await conn.tasks.get_task_result(created.task.taskId, types.CallToolResult)
        assert result.isError is True
        assert "boom" in " ".join(
            block.text for block in result.content if isinstance(block, types.TextContent)
        )
        assert (await conn.tasks.get_task(created.task.taskId)).status == "failed"
        await conn.session.send_ping()


@pytest.mark.parametrize("kind", KINDS)
async def test_required_and_forbidden_are_enforced_as_method_not_found(kind: str) -> None:
    controls = Controls()
    async with connect(build(kind, controls)) as conn:
        with pytest.raises(McpError) as required:
            await conn.session.call_tool("needs_task", {})
        assert required.value.error.code == types.METHOD_NOT_FOUND
        assert "requires task-augmented" in required.value.error.message

        with pytest.raises(McpError) as forbidden:
            await conn.tasks.call_tool_as_task("no_task", {})
        assert forbidden.value.error.code == types.METHOD_NOT_FOUND
        assert "does not support task-augmented" in forbidden.value.error.message

        created = await conn.tasks.call_tool_as_task("needs_task", {})  # the right way still works
        await conn.tasks.get_task_result(created.task.taskId, types.CallToolResult)
        assert (await conn.session.call_tool("no_task", {})).isError is False
        assert len((await conn.tasks.list_tasks()).tasks) == 1


@pytest.mark.parametrize("kind", KINDS)
async def test_cancel_stops_the_work_and_cancelled_is_sticky(kind: str) -> None:
    controls = Controls()
    async with connect(build(kind, controls)) as conn:
        created = await conn.tasks.call_tool_as_task("wait", {})
        await controls.started.wait()
        cancelled = await conn.tasks.cancel_task(created.task.taskId)
        assert cancelled.status == "cancelled"  # cancelled before the reply
        with anyio.fail_after(2):
            await controls.stopped.wait()  # the work's cancel scope was cancelled
        assert (await conn.tasks.get_task(created.task.taskId)).status == "cancelled"

        with pytest.raises(McpError) as again:
            await conn.tasks.cancel_task(created.task.taskId)
        assert again.value.error.code == types.INVALID_PARAMS

        payload = await conn.tasks.get_task_result(created.task.taskId, types.GetTaskPayloadResult)
        assert payload.model_dump(by_alias=True, exclude_none=True) == {
            "_meta": {"io.modelcontextprotocol/related-task": {"taskId": created.task.taskId}}
        }


async def test_unknown_task_ids_are_invalid_params_and_the_session_lives() -> None:
    async with connect(build("lowlevel", Controls())) as conn:
        for call in (
            conn.tasks.get_task,
            conn.tasks.cancel_task,
            lambda task_id: conn.tasks.get_task_result(task_id, types.GetTaskPayloadResult),
        ):
            with pytest.raises(McpError) as unknown:
                await call("no-such-task")
            assert unknown.value.error.code == types.INVALID_PARAMS
            assert unknown.value.error.message == "Task not found: no-such-task"
        await conn.session.send_ping()


async def test_tasks_belong_to_the_session_that_created_them() -> None:
    controls = Controls()
    server = build("lowlevel", controls)
    async with connect(server) as alice, connect(server) as bob:
        mine = (await alice.tasks.call_tool_as_task("wait", {})).task.taskId
        theirs = (await bob.tasks.call_tool_as_task("echo", {"text": "b"})).task.taskId
        for call in (
            bob.tasks.get_task,
            bob.tasks.cancel_task,
            lambda task_id: bob.tasks.get_task_result(task_id, types.GetTaskPayloadResult),
        ):
            with pytest.raises(McpError) as hidden:
                await call(mine)
            assert hidden.value.error.code == types.INVALID_PARAMS
        assert [task.taskId for task in (await bob.tasks.list_tasks()).tasks] == [theirs]
        assert [task.taskId for task in (await alice.tasks.list_tasks()).tasks] == [mine]
        assert (await alice.tasks.get_task(mine)).status == "working"  # bob's cancel did nothing
        controls.release.set()
        await alice.tasks.get_task_result(mine, types.CallToolResult)


async def test_list_tasks_in_creation_order_with_current_statuses() -> None:
    controls = Controls()
    async with connect(build("lowlevel", controls)) as conn:
        first = (await conn.tasks.call_tool_as_task("echo", {})).task.taskId
        await conn.tasks.get_task_result(first, types.CallToolResult)
        second = (await conn.tasks.call_tool_as_task("wait", {})).task.taskId
        listed = (await conn.tasks.list_tasks()).tasks
        assert [(task.taskId, task.status) for task in listed] == [(first, "completed"), (second, "working")]
        controls.release.set()


async def test_tools_registered_after_install_get_task_support() -> None:
    """``install`` may come before ``@server.call_tool()``: the handlers are wrapped per session."""
    controls = Controls()
    server = build("lowlevel", controls)  # lowlevel_server installs before registering its tools
    async with connect(server) as conn:
        tools = {tool.name: tool for tool in (await conn.session.list_tools()).tools}
        assert tools["wait"].execution == types.ToolExecution(taskSupport="optional")
        created = await conn.tasks.call_tool_as_task("echo", {"text": "late"})
        assert (await conn.tasks.get_task_result(created.task.taskId, types.CallToolResult)).isError is False


def test_install_twice_or_on_something_else_is_refused() -> None:
    controls = Controls()
    server = build("fastmcp", controls)
    with pytest.raises(ValueError, match="already installed"):
        ServerTasks().install(server)
    with pytest.raises(TypeError, match=r"lowlevel\.Server or a mcp\.server\.fastmcp\.FastMCP"):
        ServerTasks().install(object())
