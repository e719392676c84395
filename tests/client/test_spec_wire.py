"""Client rules of both task dialects, held at the wire (docs/conformance.md, "The rules, one by one").

What the client writes is recorded off its write stream (every message, notifications too) or,
over streamable HTTP, off the server's ASGI app (each POST's method and ``Mcp-*`` headers):

* a task is cancelled with ``tasks/cancel``, never with ``notifications/cancelled`` naming the
  ``tools/call`` that made it, and ``tasks/*`` name the task by ``params.taskId`` alone (both
  dialects);
* on 2026-07-28 every request declares the extension in its own ``_meta`` (there is no handshake to
  remember it), except the ``tools/call`` of a plain call, which declines a task that way;
* ``tasks/update`` carries ``Mcp-Name: <taskId>`` over streamable HTTP, as ``tasks/get`` and
  ``tasks/cancel`` do (``test_v2.py``);
* a ``resultType: "task"`` answer to a request other than ``tools/call`` is an invalid answer.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import anyio
import pytest

from mcp_tasks_compat._client_api import session_kwargs
from mcp_tasks_compat.client import call_tool, negotiate, start_tool
from mcp_tasks_compat.core._model import TaskStatus
from mcp_tasks_compat.dialects import TASKS_EXTENSION_ID

from .harness import KINDS, open_harness, text_of
from .scripted_servers import Script, recording_app

pytestmark = pytest.mark.anyio

BOUND = 10.0
CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
RELATED = "io.modelcontextprotocol/related-task"


def ids_of(messages: list[dict[str, Any]], method: str) -> list[Any]:
    return [message["id"] for message in messages if message.get("method") == method and "id" in message]


def declares(message: dict[str, Any]) -> bool:
    meta = (message.get("params") or {}).get("_meta") or {}
    return TASKS_EXTENSION_ID in ((meta.get(CAPABILITIES) or {}).get("extensions") or {})


@pytest.mark.parametrize("kind", KINDS)
async def test_a_task_is_cancelled_with_tasks_cancel_never_notifications_cancelled(kind: str) -> None:
    messages: list[dict[str, Any]] = []
    async with (
        open_harness(kind) as harness,
        harness.session(requests=Counter(), messages=messages) as session,
    ):
        with anyio.fail_after(BOUND):
            working = anyio.Event()
            async with anyio.create_task_group() as group:  # the caller goes away mid-task
                group.start_soon(lambda: call_tool(session, "hang", on_status=lambda _task: working.set()))
                await working.wait()
                group.cancel_scope.cancel()
            run = await start_tool(session, "hang")  # an explicit cancel
            state = await run.cancel()
    assert state is not None
    assert state.status is TaskStatus.CANCELLED
    created = harness.script.created
    assert len(created) == 2
    cancels = [m["params"]["taskId"] for m in messages if m.get("method") == "tasks/cancel"]
    assert cancels == created
    calls = ids_of(messages, "tools/call")
    assert len(calls) == 2
    named = [
        (m.get("params") or {}).get("requestId")
        for m in messages
        if m.get("method") == "notifications/cancelled"
    ]
    assert not set(named) & set(calls), "a task's tools/call was cancelled with notifications/cancelled"
    # The task is named by params.taskId alone (2025-11-25: no related-task _meta on tasks/*).
    on_tasks = [m for m in messages if str(m.get("method", "")).startswith("tasks/")]
    assert on_tasks
    assert all(RELATED not in ((m.get("params") or {}).get("_meta") or {}) for m in on_tasks)


async def test_every_2026_request_declares_the_extension_and_a_plain_call_leaves_it_out() -> None:
    if "2026" not in KINDS:
        pytest.skip("2026-07-28 needs mcp 2.x")
    messages: list[dict[str, Any]] = []
    async with (
        open_harness("2026") as harness,
        harness.session(requests=Counter(), messages=messages) as session,
    ):
        with anyio.fail_after(BOUND):
            assert (await negotiate(session)).dialect == "2026-07-28"
            run = await start_tool(session, "hang")
            assert (await run.status()) is not None
            await run.cancel()
            harness.script.release.set()
            assert (
                text_of(await call_tool(session, "gated", {"label": "plain"}, mode="plain")) == "done plain"
            )
            assert text_of(await call_tool(session, "gated", {"label": "task"})) == "done task"
    requests = [m for m in messages if "id" in m and "method" in m]
    methods = {m["method"] for m in requests}
    assert {"server/discover", "tools/call", "tasks/get", "tasks/cancel"} <= methods
    plain = [
        m
        for m in requests
        if m["method"] == "tools/call" and m["params"].get("arguments") == {"label": "plain"}
    ]
    assert len(plain) == 1
    assert not declares(plain[0])
    undeclared = [m["method"] for m in requests if m is not plain[0] and not declares(m)]
    assert undeclared == []
    assert len(harness.script.created) == 2  # the plain call made no task, the other call did


async def test_tasks_update_carries_mcp_name_over_streamable_http() -> None:
    pytest.importorskip("mcp.server.mcpserver", reason="needs mcp 2.x (MCPServer)")
    import mcp.types as types
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.server.mcpserver import MCPServer

    from mcp_tasks_compat.server import ServerTasks, elicit
    from server.harness import serve_asgi

    tasks = ServerTasks(tools={"ask": "required"})
    server = MCPServer("mcp-name-update", **tasks.mcpserver_kwargs())

    @server.tool()
    async def ask() -> str:
        answer = await elicit("Your name?", {"type": "object", "properties": {"name": {"type": "string"}}})
        return f"hello {(answer.content or {}).get('name')}"

    async def answer(context: Any, params: Any) -> Any:
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    script = Script()
    app = recording_app(server.streamable_http_app(json_response=True), script)
    async with (
        serve_asgi(app, lifespan="on") as url,
        streamable_http_client(url) as streams,
        ClientSession(streams[0], streams[1], elicitation_callback=answer, **session_kwargs()) as session,
    ):
        with anyio.fail_after(BOUND):
            assert (await negotiate(session)).dialect == "2026-07-28"
            assert text_of(await call_tool(session, "ask")) == "hello Ada"
    updates = [headers for method, headers in script.http_requests if method == "tasks/update"]
    assert len(updates) == 1
    assert updates[0]["mcp-method"] == "tasks/update"
    assert updates[0]["mcp-name"] == updates[0]["x-body-task-id"] != ""


async def test_a_task_answer_to_a_request_other_than_tools_call_is_invalid() -> None:
    pytest.importorskip("mcp.server.mcpserver", reason="needs mcp 2.x (MCPServer)")
    from mcp.client._memory import InMemoryTransport
    from mcp.client.session import ClientSession
    from mcp.server.mcpserver import MCPServer
    from pydantic import ValidationError

    from mcp_tasks_compat.server import ServerTasks

    flat_task = {
        "resultType": "task",
        "taskId": "t-1",
        "status": "working",
        "createdAt": "2026-01-01T00:00:00Z",
        "lastUpdatedAt": "2026-01-01T00:00:00Z",
        "ttlMs": 60_000,
    }

    answered: list[str] = []

    async def answer_prompts_with_a_task(ctx: Any, call_next: Any) -> Any:
        if ctx.method == "prompts/get" and not answered:  # the first prompts/get only
            answered.append(ctx.method)
            return dict(flat_task)
        return await call_next(ctx)

    tasks = ServerTasks(tools={})
    server = MCPServer("task-on-prompts", **tasks.mcpserver_kwargs(middleware=[answer_prompts_with_a_task]))

    @server.prompt()
    def greeting() -> str:
        return "hello"

    async with (
        InMemoryTransport(server) as (read, write),
        ClientSession(read, write, **session_kwargs()) as session,
    ):
        with anyio.fail_after(BOUND):
            assert (await negotiate(session)).dialect == "2026-07-28"
            with pytest.raises(ValidationError) as refused:
                await session.get_prompt("greeting")
            assert (await session.get_prompt("greeting")).messages  # without the middleware's answer: fine
    assert "GetPromptResult" in str(refused.value)
