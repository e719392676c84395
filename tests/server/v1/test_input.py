"""Input during a task on an mcp 1.x server (2025-11-25): elicitation, sampling and roots.

The tool body calls ``mcp_tasks_compat.server.elicit`` / ``create_message`` / ``list_roots``. Run
as a task, the task goes ``input_required`` and the request travels to the client on the
client's open ``tasks/result``, tagged with the related-task ``_meta``; the SDK's own 1.x client
answers it through its callbacks. In a plain call the same body sends the ordinary request.
The client here is the SDK's (``session.experimental``), over tapped in-memory streams.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest

from mcp_tasks_compat.server import ServerTasks, create_message, current_call, elicit, list_roots

pytestmark = [pytest.mark.mcp1, pytest.mark.anyio]

pytest.importorskip("mcp.server.fastmcp", reason="needs mcp 1.x (FastMCP)")

import mcp.types as types  # noqa: E402 - after the skip, these import mcp 1.x
from mcp.client.session import ClientSession  # noqa: E402
from mcp.server.fastmcp import FastMCP  # noqa: E402

from ..harness import Wire  # noqa: E402
from ._sdk import StatusWatch, experimental  # noqa: E402
from ._sdk import connect as connect_tapped  # noqa: E402

BOUND_S = 5
RELATED = "io.modelcontextprotocol/related-task"
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


@dataclass
class Tools:
    """What the tool bodies saw."""

    asking: anyio.Event = field(default_factory=anyio.Event)
    stopped: anyio.Event = field(default_factory=anyio.Event)
    answers: list[Any] = field(default_factory=lambda: list[Any]())


def build_server(tools: Tools) -> FastMCP[Any]:
    server: FastMCP[Any] = FastMCP("v1-input")

    @server.tool()
    async def ask(question: str) -> str:
        tools.asking.set()
        try:
            result = await elicit(question, SCHEMA)
        except anyio.get_cancelled_exc_class():
            tools.stopped.set()
            raise
        tools.answers.append(result)
        in_task = current_call().task is not None
        return f"{result.action}: {(result.content or {}).get('answer')} (task: {in_task})"

    @server.tool()
    async def sample_and_roots() -> str:
        message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text="2+2?"))
        sampled = await create_message([message], max_tokens=5, system_prompt="be brief")
        roots = await list_roots()
        tools.answers.extend([sampled, roots])
        assert isinstance(sampled.content, types.TextContent)
        return f"{sampled.content.text} / {[str(root.uri) for root in roots.roots]}"

    ServerTasks(tools={"ask": "optional", "sample_and_roots": "optional"}).install(server)
    return server


@dataclass
class Callbacks:
    """The client's callbacks, recording what reached them."""

    answer: dict[str, Any] | None = field(default_factory=lambda: {"answer": "Ada"})
    elicited: list[types.ElicitRequestParams] = field(
        default_factory=lambda: list[types.ElicitRequestParams]()
    )
    sampled: list[types.CreateMessageRequestParams] = field(
        default_factory=lambda: list[types.CreateMessageRequestParams]()
    )
    roots_asked: list[Any] = field(default_factory=lambda: list[Any]())

    async def elicitation(self, context: Any, params: types.ElicitRequestParams) -> Any:
        self.elicited.append(params)
        if self.answer is None:
            return types.ErrorData(code=types.INVALID_REQUEST, message="nobody is here to answer")
        return types.ElicitResult(action="accept", content=self.answer)

    async def sampling(self, context: Any, params: types.CreateMessageRequestParams) -> Any:
        self.sampled.append(params)
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="4"), model="test-model"
        )

    async def roots(self, context: Any) -> Any:
        self.roots_asked.append(context.meta)
        return types.ListRootsResult(roots=[types.Root(uri="file:///work")])  # pyright: ignore[reportArgumentType]


@dataclass
class Connection:
    session: ClientSession
    wire: Wire
    watch: StatusWatch


@asynccontextmanager
async def connect(server: FastMCP[Any], **callbacks: Any) -> AsyncIterator[Connection]:
    """The SDK's 1.x client with ``callbacks``, over tapped in-memory streams to ``server.run``."""
    watch = StatusWatch()
    async with connect_tapped(server, message_handler=watch, **callbacks) as tapped:
        yield Connection(tapped.session, tapped.wire, watch)
    assert tapped.outcome.error is None


def _text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def test_elicit_in_a_task_travels_on_tasks_result_tagged_with_the_task() -> None:
    tools, answers = Tools(), Callbacks()
    async with connect(build_server(tools), elicitation_callback=answers.elicitation) as conn:
        tasks = experimental(conn.session)
        created = await tasks.call_tool_as_task("ask", {"question": "Your name?"})
        task_id = created.task.taskId
        with anyio.fail_after(BOUND_S):
            await conn.watch.wait_for(task_id, "input_required")
        assert (await tasks.get_task(task_id)).status == "input_required"
        assert answers.elicited == []  # nothing is sent before the client opens tasks/result
        with anyio.fail_after(BOUND_S):
            result = await tasks.get_task_result(task_id, types.CallToolResult)
        final = await tasks.get_task(task_id)
    assert _text(result) == "accept: Ada (task: True)"
    assert final.status == "completed"
    (params,) = answers.elicited
    assert params.message == "Your name?"
    assert isinstance(params, types.ElicitRequestFormParams)
    assert params.requestedSchema == SCHEMA
    # On the wire: the request rides the open tasks/result (it comes after that request and before
    # its answer) and carries the related-task _meta; the answer goes back under its JSON-RPC id.
    (result_request,) = conn.wire.sent("tasks/result")
    (elicitation,) = conn.wire.received("elicitation/create")
    assert elicitation["params"]["_meta"] == {RELATED: {"taskId": task_id}}
    assert elicitation["params"]["mode"] == "form"
    order = [m for _, m in conn.wire.messages]
    position = order.index(elicitation)
    assert order.index(result_request) < position < order.index(conn.wire.response_to(result_request["id"]))
    reply = next(
        m
        for d, m in conn.wire.messages
        if d == "C->S" and m.get("id") == elicitation["id"] and "method" not in m
    )
    assert reply["result"] == {"action": "accept", "content": {"answer": "Ada"}}
    statuses = [status for status, _ in conn.watch.of(task_id)]
    assert statuses.index("input_required") < statuses.index("working", statuses.index("input_required"))


async def test_sampling_and_roots_in_a_task() -> None:
    tools, answers = Tools(), Callbacks()
    async with connect(
        build_server(tools), sampling_callback=answers.sampling, list_roots_callback=answers.roots
    ) as conn:
        tasks = experimental(conn.session)
        created = await tasks.call_tool_as_task("sample_and_roots", {})
        with anyio.fail_after(BOUND_S):
            result = await tasks.get_task_result(created.task.taskId, types.CallToolResult)
    assert _text(result) == "4 / ['file:///work']"
    (params,) = answers.sampled
    assert params.maxTokens == 5
    assert params.systemPrompt == "be brief"
    assert params.meta is not None
    assert params.meta.model_dump(by_alias=True)[RELATED] == {"taskId": created.task.taskId}
    assert len(answers.roots_asked) == 1
    sampled, roots = tools.answers
    assert isinstance(sampled, types.CreateMessageResult)  # the SDK's own types reach the tool
    assert isinstance(roots, types.ListRootsResult)
    (sampling,) = conn.wire.received("sampling/createMessage")
    assert sampling["params"]["maxTokens"] == 5


async def test_a_plain_call_uses_the_ordinary_request() -> None:
    tools, answers = Tools(), Callbacks()
    async with connect(build_server(tools), elicitation_callback=answers.elicitation) as conn:
        with anyio.fail_after(BOUND_S):
            result = await conn.session.call_tool("ask", {"question": "Plain?"})
    assert _text(result) == "accept: Ada (task: False)"
    (elicitation,) = conn.wire.received("elicitation/create")
    assert RELATED not in elicitation["params"].get("_meta", {})
    assert conn.wire.sent("tasks/result") == []


async def test_a_client_without_the_capability_gets_its_task_cancelled_at_once() -> None:
    tools = Tools()
    async with connect(build_server(tools)) as conn:  # no elicitation callback: no capability declared
        tasks = experimental(conn.session)
        created = await tasks.call_tool_as_task("ask", {"question": "Anyone?"})
        with anyio.fail_after(BOUND_S):
            await conn.watch.wait_for(created.task.taskId, "cancelled")
            await tools.stopped.wait()
        final = await tasks.get_task(created.task.taskId)
    assert final.status == "cancelled"
    assert final.statusMessage == (
        "the client cannot answer elicitation/create: it did not declare the 'elicitation' capability "
        "(it has no callback for it)"
    )
    assert conn.wire.received("elicitation/create") == []


async def test_a_refused_elicitation_cancels_the_task() -> None:
    tools, answers = Tools(), Callbacks(answer=None)
    async with connect(build_server(tools), elicitation_callback=answers.elicitation) as conn:
        tasks = experimental(conn.session)
        created = await tasks.call_tool_as_task("ask", {"question": "Anyone?"})
        with anyio.fail_after(BOUND_S):
            payload = await tasks.get_task_result(created.task.taskId, types.GetTaskPayloadResult)
            await tools.stopped.wait()
        final = await tasks.get_task(created.task.taskId)
    assert final.status == "cancelled"
    assert final.statusMessage == (
        "the client could not answer elicitation/create: nobody is here to answer (code -32600)"
    )
    assert payload.model_dump(by_alias=True, exclude_none=True) == {
        "_meta": {RELATED: {"taskId": created.task.taskId}}
    }
    assert len(answers.elicited) == 1


async def test_cancel_while_input_required_releases_the_tool() -> None:
    tools, answers = Tools(), Callbacks()
    async with connect(build_server(tools), elicitation_callback=answers.elicitation) as conn:
        tasks = experimental(conn.session)
        created = await tasks.call_tool_as_task("ask", {"question": "Wait?"})
        task_id = created.task.taskId
        with anyio.fail_after(BOUND_S):
            await conn.watch.wait_for(task_id, "input_required")
            cancelled = await tasks.cancel_task(task_id)
            await tools.stopped.wait()
            payload = await tasks.get_task_result(task_id, types.GetTaskPayloadResult)
    assert cancelled.status == "cancelled"
    assert payload.model_dump(by_alias=True, exclude_none=True) == {"_meta": {RELATED: {"taskId": task_id}}}
    assert answers.elicited == []  # the request was withdrawn before any stream could carry it
    assert tools.answers == []
