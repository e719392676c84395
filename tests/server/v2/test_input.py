"""Input during a task on an mcp 2.x server, in both dialects: elicitation, sampling and roots.

2026-07-28 (a real 2.x ``ClientSession`` declaring the extension): the task shows its requests as
``inputRequests`` on ``tasks/get``, answers come with ``tasks/update``. 2025-11-25 (a raw peer
that opens with ``initialize``): the requests travel on the peer's open ``tasks/result``, tagged
with the related-task ``_meta``, and the answers go back as ordinary JSON-RPC responses. A plain call uses
the ordinary request of the ``tools/call``, which a 2026-07-28 plain call does not have.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest

from mcp_tasks_compat._engine import TaskRecord
from mcp_tasks_compat.core._model import TaskStatus
from mcp_tasks_compat.server import ServerTasks, create_message, elicit, list_roots

pytestmark = [pytest.mark.mcp2, pytest.mark.anyio]

pytest.importorskip("mcp.server.mcpserver", reason="needs mcp 2.x (MCPServer)")


from ..harness import RawPeer, ServerRequestAnswer  # noqa: E402
from ._sdk import (  # noqa: E402 - after the skip, these import mcp 2.x
    Ack,
    MCPError,
    MCPServer,
    TaskHandle,
    UpdateParams,
    UpdateTask,
    cancel_task,
    declaring_session,
    get_task,
    raw_peer,
)

BOUND_S = 5
RELATED = "io.modelcontextprotocol/related-task"
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
ACCEPT = {"action": "accept", "content": {"answer": "Ada"}}


@dataclass
class App:
    tasks: ServerTasks
    server: MCPServer
    answers: list[Any] = field(default_factory=lambda: list[Any]())
    stopped: anyio.Event = field(default_factory=anyio.Event)

    async def record(self, task_id: str) -> TaskRecord:
        state = await self.tasks.engine.store.get(task_id)  # whoever owns it (2025-11-25: a session)
        assert state is not None
        return self.tasks.engine.record_of(state)  # the live record of the run in this process

    async def status_becomes(self, task_id: str, status: TaskStatus, outstanding: int = 0) -> TaskRecord:
        """Wait (server side, on the task's own change event) for ``status`` with that many requests."""
        record = await self.record(task_id)
        with anyio.fail_after(BOUND_S):
            while record.task.status is not status or len(record.task.input_requests) != outstanding:
                await record.changed.wait()
        return record


def build_app() -> App:
    tasks = ServerTasks(
        tools={
            "ask": "optional",
            "ask_twice": "optional",
            "ask_both": "optional",
            "ask_plain_only": "forbidden",
            "sample": "optional",
        }
    )
    app = App(tasks, MCPServer("input-v2", **tasks.mcpserver_kwargs()))
    server = app.server

    @server.tool()
    async def ask(question: str) -> str:
        try:
            result = await elicit(question, SCHEMA)
        except anyio.get_cancelled_exc_class():
            app.stopped.set()
            raise
        app.answers.append(result)
        return f"{result.action}: {(result.content or {}).get('answer')}"

    @server.tool()
    async def ask_twice() -> str:
        first = await elicit("first?", SCHEMA)
        second = await elicit("second?", SCHEMA)
        return f"{(first.content or {}).get('answer')} then {(second.content or {}).get('answer')}"

    @server.tool()
    async def ask_both() -> str:
        found: dict[str, Any] = {}

        async def name() -> None:
            found["name"] = await elicit("name?", SCHEMA)

        async def roots() -> None:
            found["roots"] = await list_roots()

        async with anyio.create_task_group() as group:
            group.start_soon(name)
            group.start_soon(roots)
        app.answers.extend([found["name"], found["roots"]])
        return f"{found['name'].content['answer']} in {[str(root.uri) for root in found['roots'].roots]}"

    @server.tool()
    async def ask_plain_only() -> str:
        result = await elicit("plain?", SCHEMA)
        return str(result.action)

    @server.tool()
    async def sample() -> str:
        result = await create_message(
            [{"role": "user", "content": {"type": "text", "text": "hi"}}], max_tokens=3
        )
        app.answers.append(result)
        return str(result.content.text)

    return app


async def update(session: Any, task_id: str, responses: dict[str, Any]) -> Ack:
    return await session.send_request(
        UpdateTask(params=UpdateParams(task_id=task_id, input_responses=responses)), Ack
    )


# --- 2026-07-28 -------------------------------------------------------------------------------------


async def test_2026_the_request_is_in_input_requests_and_tasks_update_answers_it() -> None:
    app = build_app()
    async with declaring_session(app.server) as session:
        handle = await session.call_tool("ask", {"question": "Your name?"}, allow_claimed=True)
        assert isinstance(handle, TaskHandle)
        await app.status_becomes(handle.task_id, TaskStatus.INPUT_REQUIRED, 1)
        waiting = await get_task(session, handle.task_id)
        assert waiting.status == "input_required"
        assert waiting.input_requests == {
            "elicit-1": {
                "method": "elicitation/create",
                "params": {"mode": "form", "message": "Your name?", "requestedSchema": SCHEMA},
            }
        }
        ack = await update(session, handle.task_id, {"elicit-1": ACCEPT})
        after = await get_task(session, handle.task_id)  # right after the acknowledgement
        await app.status_becomes(handle.task_id, TaskStatus.COMPLETED)
        done = await get_task(session, handle.task_id)
    assert ack.model_extra == {"resultType": "complete"}
    assert after.status in ("working", "completed")
    assert not after.input_requests
    assert done.result is not None
    assert done.result["content"] == [{"type": "text", "text": "accept: Ada"}]
    (answer,) = app.answers
    assert type(answer).__name__ == "ElicitResult"  # the SDK's own type reaches the tool


async def test_2026_keys_are_never_reused_within_a_task() -> None:
    app = build_app()
    async with declaring_session(app.server) as session:
        handle = await session.call_tool("ask_twice", {}, allow_claimed=True)
        assert isinstance(handle, TaskHandle)
        keys: list[str] = []
        for answer in ("Ada", "Grace"):
            await app.status_becomes(handle.task_id, TaskStatus.INPUT_REQUIRED, 1)
            (key,) = (await get_task(session, handle.task_id)).input_requests or {}
            keys.append(key)
            await update(session, handle.task_id, {key: {"action": "accept", "content": {"answer": answer}}})
        await app.status_becomes(handle.task_id, TaskStatus.COMPLETED)
        done = await get_task(session, handle.task_id)
    assert keys == ["elicit-1", "elicit-2"]
    assert done.result is not None
    assert done.result["content"] == [{"type": "text", "text": "Ada then Grace"}]


async def test_2026_a_partial_answer_keeps_the_task_input_required_and_unknown_keys_are_ignored() -> None:
    app = build_app()
    async with declaring_session(app.server) as session:
        handle = await session.call_tool("ask_both", {}, allow_claimed=True)
        assert isinstance(handle, TaskHandle)
        await app.status_becomes(handle.task_id, TaskStatus.INPUT_REQUIRED, 2)
        requests = (await get_task(session, handle.task_id)).input_requests or {}
        by_method = {request["method"]: key for key, request in requests.items()}
        assert set(by_method) == {"elicitation/create", "roots/list"}
        await update(
            session,
            handle.task_id,
            {by_method["roots/list"]: {"roots": [{"uri": "file:///src"}]}, "no-such-key": ACCEPT},
        )
        partial = await get_task(session, handle.task_id)
        await update(session, handle.task_id, {by_method["elicitation/create"]: ACCEPT})
        await app.status_becomes(handle.task_id, TaskStatus.COMPLETED)
        done = await get_task(session, handle.task_id)
    assert partial.status == "input_required"
    assert list(partial.input_requests or {}) == [by_method["elicitation/create"]]
    assert done.result is not None
    assert done.result["content"] == [{"type": "text", "text": "Ada in ['file:///src']"}]


async def test_2026_an_answer_that_is_not_the_requests_result_type_is_invalid_params() -> None:
    app = build_app()
    async with declaring_session(app.server) as session:
        handle = await session.call_tool("ask", {"question": "?"}, allow_claimed=True)
        assert isinstance(handle, TaskHandle)
        await app.status_becomes(handle.task_id, TaskStatus.INPUT_REQUIRED, 1)
        with pytest.raises(MCPError) as refused:
            await update(session, handle.task_id, {"elicit-1": {"action": "maybe"}})
        still = await get_task(session, handle.task_id)
        await update(session, handle.task_id, {"elicit-1": ACCEPT})  # the session lives on
        await app.status_becomes(handle.task_id, TaskStatus.COMPLETED)
    assert refused.value.error.code == -32602
    assert "inputResponses['elicit-1'] is not a valid ElicitResult" in refused.value.error.message
    assert still.status == "input_required"


async def test_2026_cancel_while_input_required_releases_the_tool() -> None:
    app = build_app()
    async with declaring_session(app.server) as session:
        handle = await session.call_tool("ask", {"question": "?"}, allow_claimed=True)
        assert isinstance(handle, TaskHandle)
        await app.status_becomes(handle.task_id, TaskStatus.INPUT_REQUIRED, 1)
        await cancel_task(session, handle.task_id)
        with anyio.fail_after(BOUND_S):
            await app.stopped.wait()
        cancelled = await get_task(session, handle.task_id)
        late = await update(session, handle.task_id, {"elicit-1": ACCEPT})  # acknowledged, ignored
    assert cancelled.status == "cancelled"
    assert not cancelled.input_requests
    assert late.model_extra == {"resultType": "complete"}
    assert app.answers == []


async def test_2026_sampling_answer_reaches_the_tool_as_the_sdk_type() -> None:
    app = build_app()
    async with declaring_session(app.server) as session:
        handle = await session.call_tool("sample", {}, allow_claimed=True)
        assert isinstance(handle, TaskHandle)
        await app.status_becomes(handle.task_id, TaskStatus.INPUT_REQUIRED, 1)
        (key, request), *_ = ((await get_task(session, handle.task_id)).input_requests or {}).items()
        answer = {"role": "assistant", "content": {"type": "text", "text": "hello"}, "model": "m"}
        await update(session, handle.task_id, {key: answer})
        await app.status_becomes(handle.task_id, TaskStatus.COMPLETED)
        done = await get_task(session, handle.task_id)
    assert key == "sample-1"
    assert request == {
        "method": "sampling/createMessage",
        "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 3},
    }
    assert done.result is not None
    assert done.result["content"] == [{"type": "text", "text": "hello"}]
    assert type(app.answers[0]).__name__ == "CreateMessageResult"


async def test_2026_a_plain_call_cannot_ask_and_says_how_it_could() -> None:
    app = build_app()
    async with declaring_session(app.server, declare=False) as session:
        with pytest.raises(MCPError) as plain:
            await session.call_tool("ask", {"question": "?"})
    async with declaring_session(app.server) as session:
        with pytest.raises(MCPError) as forbidden:
            await session.call_tool("ask_plain_only", {})
    assert plain.value.error.code == -32021
    assert plain.value.error.data == {
        "requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    }
    assert "only give as a task" in plain.value.error.message
    assert forbidden.value.error.code == -32603
    assert "declare it 'optional' or 'required'" in forbidden.value.error.message


# --- 2025-11-25 on the same server (a raw peer) ---------------------------------------------------


@asynccontextmanager
async def peer_2025(
    app: App, answer: ServerRequestAnswer, capabilities: dict[str, Any]
) -> AsyncGenerator[RawPeer, None]:
    """A raw 2025-11-25 peer, initialized declaring ``capabilities``, answering the server's requests."""
    async with raw_peer(app.server, answer=answer) as peer:
        await peer.initialize(capabilities=capabilities, client_name="raw")
        yield peer


def accept(method: str, params: dict[str, Any]) -> Mapping[str, Any]:
    if method == "roots/list":
        return {"result": {"roots": [{"uri": "file:///roots-2025"}]}}
    return {"result": ACCEPT}


async def _start_2025(peer: RawPeer, tool: str, arguments: dict[str, Any]) -> str:
    created = await peer.request(
        "tools/call", {"name": tool, "arguments": arguments, "task": {"ttl": 60_000}}
    )
    return str(created["result"]["task"]["taskId"])


async def test_2025_requests_ride_the_open_tasks_result_tagged_with_the_task() -> None:
    app = build_app()
    async with peer_2025(app, accept, {"elicitation": {}, "roots": {}}) as peer:
        task_id = await _start_2025(peer, "ask_both", {})
        await app.status_becomes(task_id, TaskStatus.INPUT_REQUIRED, 2)
        waiting = await peer.request("tasks/get", {"taskId": task_id})
        assert peer.server_requests == []  # nothing goes out before a tasks/result stream is open
        result = await peer.request("tasks/result", {"taskId": task_id})
    assert waiting["result"]["status"] == "input_required"
    assert result["result"]["content"] == [{"type": "text", "text": "Ada in ['file:///roots-2025']"}]
    assert result["result"]["_meta"] == {RELATED: {"taskId": task_id}}
    assert sorted(request["method"] for request in peer.server_requests) == [
        "elicitation/create",
        "roots/list",
    ]
    for request in peer.server_requests:
        assert request["params"]["_meta"] == {RELATED: {"taskId": task_id}}
    (elicitation,) = [r for r in peer.server_requests if r["method"] == "elicitation/create"]
    assert elicitation["params"]["requestedSchema"] == SCHEMA


async def test_2025_a_plain_call_sends_the_ordinary_request() -> None:
    app = build_app()
    async with peer_2025(app, accept, {"elicitation": {}}) as peer:
        result = await peer.request("tools/call", {"name": "ask", "arguments": {"question": "plain?"}})
    assert result["result"]["content"] == [{"type": "text", "text": "accept: Ada"}]
    (elicitation,) = peer.server_requests
    assert RELATED not in elicitation["params"].get("_meta", {})


async def test_2025_a_client_without_the_capability_gets_the_task_cancelled() -> None:
    app = build_app()
    async with peer_2025(app, accept, {}) as peer:
        task_id = await _start_2025(peer, "ask", {"question": "?"})
        with anyio.fail_after(BOUND_S):
            await app.stopped.wait()
        state = await peer.request("tasks/get", {"taskId": task_id})
    assert state["result"]["status"] == "cancelled"
    assert state["result"]["statusMessage"] == (
        "the client cannot answer elicitation/create: it did not declare the 'elicitation' capability "
        "(it has no callback for it)"
    )
    assert peer.server_requests == []


async def test_2025_a_refused_request_cancels_the_task() -> None:
    def refuse(method: str, params: dict[str, Any]) -> Mapping[str, Any]:
        return {"error": {"code": -32600, "message": "Elicitation not supported"}}

    app = build_app()
    async with peer_2025(app, refuse, {"elicitation": {}}) as peer:
        task_id = await _start_2025(peer, "ask", {"question": "?"})
        payload = await peer.request("tasks/result", {"taskId": task_id})
        state = await peer.request("tasks/get", {"taskId": task_id})
    assert payload["result"] == {"_meta": {RELATED: {"taskId": task_id}}}
    assert state["result"]["status"] == "cancelled"
    assert state["result"]["statusMessage"] == (
        "the client could not answer elicitation/create: Elicitation not supported (code -32600)"
    )
