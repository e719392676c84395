"""An "ask first, then run long" tool on an mcp 1.x server (2025-11-25): the ``tasks/result`` relay.

``elicit(..., before_task=True)`` is a multi-round-trip round only on 2026-07-28 before the call is
a task; on 2025-11-25 the client asked for the task with ``params.task``, so the question is relayed
through it like any other, and in a plain call it is the ordinary request. The SDK's own 1.x
client answers through its callback.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcp_tasks_compat.server import ServerTasks, current_call, elicit

pytestmark = [pytest.mark.mcp1, pytest.mark.anyio]

pytest.importorskip("mcp.server.fastmcp", reason="needs mcp 1.x (FastMCP)")

import mcp.types as types  # noqa: E402 - after the skip, these import mcp 1.x
from mcp.server.fastmcp import FastMCP  # noqa: E402

from ._sdk import experimental  # noqa: E402
from .test_input import Callbacks, connect  # noqa: E402

BOUND_S = 5
NAME_SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


def build_server() -> FastMCP[Any]:
    server: FastMCP[Any] = FastMCP("v1-ask-first")

    @server.tool()
    async def greet_first() -> str:
        answer = await elicit("Your name?", NAME_SCHEMA, before_task=True)
        return f"Hello, {(answer.content or {}).get('answer')}! (task: {current_call().task is not None})"

    ServerTasks(tools={"greet_first": "optional"}).install(server)
    return server


def _text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def test_ask_first_in_a_2025_task_is_relayed_on_tasks_result() -> None:
    answers = Callbacks()
    async with connect(build_server(), elicitation_callback=answers.elicitation) as conn:
        tasks = experimental(conn.session)
        created = await tasks.call_tool_as_task("greet_first", {})
        task_id = created.task.taskId
        with anyio.fail_after(BOUND_S):
            await conn.watch.wait_for(task_id, "input_required")
            result = await tasks.get_task_result(task_id, types.CallToolResult)
    assert _text(result) == "Hello, Ada! (task: True)"
    assert [params.message for params in answers.elicited] == ["Your name?"]


async def test_ask_first_in_a_plain_call_is_the_ordinary_request() -> None:
    answers = Callbacks()
    async with connect(build_server(), elicitation_callback=answers.elicitation) as conn:
        result = await conn.session.call_tool("greet_first", {})
    assert _text(result) == "Hello, Ada! (task: False)"
    assert conn.wire.sent("tasks/result") == []
