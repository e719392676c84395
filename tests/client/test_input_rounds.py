"""Ask first, then run long: the client loops a 2026-07-28 call's multi-round-trip input (SEP-2322).

Our client against our ``TaskServer``: a tool that asks with ``elicit(..., before_task=True)`` has
the call answered ``input_required`` (no task yet); the client answers each ``inputRequests``
entry through the session's own ``elicitation_callback`` and sends the call again with
``inputResponses`` and the ``requestState`` echoed, until the final round is a task (a required
tool, then followed as usual) or the plain answer. On 2025-11-25 (and mcp 1.x) the same tools ask
through the task's ``tasks/result`` relay, so the same calls give the same results there.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp.types as types
import pytest

from mcp_tasks_compat import PeerProtocolError, TaskCancelledError
from mcp_tasks_compat._adapters import get_adapter
from mcp_tasks_compat._client_api import MAX_INPUT_ROUNDS, session_kwargs, with_tasks
from mcp_tasks_compat._testkit.sessions import connect_http, connect_in_memory
from mcp_tasks_compat.client import TaskClientSession, call_tool, negotiate, start_tool
from mcp_tasks_compat.core._model import Task, TaskStatus
from mcp_tasks_compat.dialects import DIALECT_2026_07_28, Dialect
from mcp_tasks_compat.testing import build_task_server, dialects, http_server_process

from .harness import text_of
from .round_tools import TOOLS

pytestmark = pytest.mark.anyio

BOUND_S = 10.0
ROUND_TOOLS_SPEC = "tests.client.round_tools:TOOLS"
ANSWERS = {"name": "Ada", "city": "Paris"}


class Callbacks:
    """The session's elicitation callback: answers each form from :data:`ANSWERS`, or declines."""

    def __init__(self, *, decline: bool = False, broken: bool = False) -> None:
        self.decline = decline
        self.broken = broken
        self.asked: list[str] = []
        self.keys: list[str] = []

    async def elicitation(self, context: Any, params: Any) -> Any:
        self.asked.append(params.message)
        self.keys.append(str(context.request_id))
        if self.broken:
            raise RuntimeError("the answering code broke")
        if self.decline:
            return types.ElicitResult(action="decline")
        schema = getattr(params, "requested_schema", None) or params.requestedSchema  # 2.x, 1.x names
        fields = schema["properties"]
        return types.ElicitResult(action="accept", content={field: ANSWERS[field] for field in fields})

    def options(self, dialect: Dialect | None, *, elicitation: bool = True) -> dict[str, Any]:
        options: dict[str, Any] = session_kwargs(dialect=dialect)
        if elicitation:
            options["elicitation_callback"] = self.elicitation
        return options


class Statuses:
    def __init__(self) -> None:
        self.seen: list[Task] = []

    def __call__(self, task: Task) -> None:
        self.seen.append(task)

    @property
    def statuses(self) -> list[TaskStatus]:
        return [task.status for task in self.seen]


@pytest.fixture(params=dialects())
def dialect(request: pytest.FixtureRequest) -> Dialect:
    return request.param  # type: ignore[no-any-return]


def _server() -> Any:
    # A grace long enough that a tool done at once is always answered plainly, however busy the machine.
    return build_task_server(TOOLS, inline_grace_s=BOUND_S)


@asynccontextmanager
async def _session(dialect: Dialect | None, callbacks: Callbacks, **options: Any) -> AsyncIterator[Any]:
    async with connect_in_memory(
        _server(), dialect=dialect, session_options=callbacks.options(dialect, **options)
    ) as session:
        yield session


@pytest.mark.parametrize("mode", ["auto", "task"])
async def test_a_required_tool_asks_in_a_round_and_only_the_final_round_is_a_task(
    dialect: Dialect, mode: str
) -> None:
    callbacks, statuses = Callbacks(), Statuses()
    async with _session(dialect, callbacks) as session:
        with anyio.fail_after(BOUND_S):
            result = await call_tool(session, "greet_first", mode=mode, on_status=statuses)  # type: ignore[arg-type]
    assert text_of(result) == "Hello, accept: Ada!"
    assert callbacks.asked == ["Your name?"]
    assert statuses.statuses[-1] is TaskStatus.COMPLETED
    assert "greeting" in [task.status_message for task in statuses.seen]
    if dialect == DIALECT_2026_07_28:
        # Asked as round 1 (key elicit-1) before any task: the task never waited for input.
        assert callbacks.keys == ["elicit-1"]
        assert TaskStatus.INPUT_REQUIRED not in statuses.statuses
        assert statuses.seen[0].status is TaskStatus.WORKING


@pytest.mark.parametrize("mode", ["auto", "task", "plain"])
async def test_an_optional_tool_asks_in_a_round_first(dialect: Dialect, mode: str) -> None:
    callbacks, statuses = Callbacks(), Statuses()
    async with _session(dialect, callbacks) as session:
        with anyio.fail_after(BOUND_S):
            result = await call_tool(session, "greet_first_optional", mode=mode, on_status=statuses)  # type: ignore[arg-type]
    assert text_of(result) == "Hi, accept: Ada!"
    assert callbacks.asked == ["Your name?"]
    if dialect == DIALECT_2026_07_28:
        assert callbacks.keys == ["elicit-1"]
        # no task was ever made: the question is a round, and the quick final round is answered
        # within the grace (call_tool follows to the result, so mode="task" sends no task-at-once
        # hint; start_tool does)
        assert statuses.seen == []


async def test_a_tool_that_asks_twice_takes_two_rounds(dialect: Dialect) -> None:
    callbacks = Callbacks()
    async with _session(dialect, callbacks) as session:
        with anyio.fail_after(BOUND_S):
            result = await call_tool(session, "ask_twice")
    assert text_of(result) == "accept: Ada from accept: Paris"
    assert callbacks.asked == ["Your name?", "Your city?"]  # the first answer rides in requestState
    if dialect == DIALECT_2026_07_28:
        assert callbacks.keys == ["elicit-1", "elicit-2"]


async def test_a_declined_question_reaches_the_tool(dialect: Dialect) -> None:
    callbacks = Callbacks(decline=True)
    async with _session(dialect, callbacks) as session:
        with anyio.fail_after(BOUND_S):
            result = await call_tool(session, "greet_first_optional")
    assert text_of(result) == "Hi, decline: None!"


@pytest.mark.mcp2
@pytest.mark.parametrize("mode", ["auto", "task", "plain"])
async def test_a_session_without_the_callback_gets_the_same_clear_error_as_in_a_task(mode: str) -> None:
    callbacks = Callbacks()
    async with _session(DIALECT_2026_07_28, callbacks, elicitation=False) as session:
        with anyio.fail_after(BOUND_S), pytest.raises(TaskCancelledError) as abandoned:
            await call_tool(session, "greet_first_optional", mode=mode)  # type: ignore[arg-type]
    assert abandoned.value.task_id is None
    message = abandoned.value.message
    assert message.startswith(
        "tools/call 'greet_first_optional' asked for input this session cannot give, so the call was "
        "abandoned (no task had been created): elicitation/create 'Your name?' (key 'elicit-1') was "
        "refused by the session's elicitation_callback ("
    )
    assert message.endswith("a ClientSession built without elicitation_callback= refuses every such request")


@pytest.mark.mcp2
async def test_a_callback_that_raises_raises_as_itself() -> None:
    async with _session(DIALECT_2026_07_28, Callbacks(broken=True)) as session:
        with anyio.fail_after(BOUND_S), pytest.raises(RuntimeError, match="the answering code broke"):
            await call_tool(session, "greet_first")


@pytest.mark.mcp2
async def test_a_server_that_keeps_asking_is_stopped_at_the_bound() -> None:
    callbacks = Callbacks()
    async with _session(DIALECT_2026_07_28, callbacks) as session:
        with anyio.fail_after(BOUND_S), pytest.raises(PeerProtocolError) as stopped:
            await call_tool(session, "ask_forever")
        # The session is still usable afterwards.
        assert text_of(await call_tool(session, "greet_first_optional")) == "Hi, accept: Ada!"
    assert MAX_INPUT_ROUNDS == 10
    assert callbacks.asked[:MAX_INPUT_ROUNDS] == [f"Question {n}?" for n in range(1, MAX_INPUT_ROUNDS + 1)]
    assert len(callbacks.asked) == MAX_INPUT_ROUNDS + 1  # the bound, then the later call's one question
    assert stopped.value.message == (
        "tools/call 'ask_forever': the server answered input_required 10 times in a row and asked again; "
        "this client answers at most MAX_INPUT_ROUNDS = 10 rounds per call (a server that keeps asking "
        "never lets the call finish)"
    )


@pytest.mark.mcp2
async def test_start_tool_answers_the_rounds_before_it_hands_back_the_task() -> None:
    callbacks = Callbacks()
    async with _session(DIALECT_2026_07_28, callbacks) as session:
        with anyio.fail_after(BOUND_S):
            run = await start_tool(session, "greet_first")
            assert run.task_id is not None
            result = await run.result()
    assert text_of(result) == "Hello, accept: Ada!"
    assert callbacks.keys == ["elicit-1"]


@pytest.mark.mcp2
async def test_task_client_session_and_with_tasks_loop_the_rounds() -> None:
    callbacks, statuses = Callbacks(), Statuses()
    options = {"elicitation_callback": callbacks.elicitation}
    async with (
        get_adapter().app.in_memory_streams(_server()) as (read, write),
        TaskClientSession(read, write, on_status=statuses, **options) as session,
    ):
        await negotiate(session)
        with anyio.fail_after(BOUND_S):
            greeted = await session.call_tool("greet_first")
            twice = await session.call_tool("ask_twice", {}, mode="plain")
    assert text_of(greeted) == "Hello, accept: Ada!"
    assert text_of(twice) == "accept: Ada from accept: Paris"
    assert statuses.statuses[-1] is TaskStatus.COMPLETED
    async with _session(DIALECT_2026_07_28, callbacks) as session:
        with anyio.fail_after(BOUND_S):
            wrapped = await with_tasks(session).call_tool("greet_first_optional")
    assert text_of(wrapped) == "Hi, accept: Ada!"
    assert callbacks.keys == ["elicit-1", "elicit-1", "elicit-2", "elicit-1"]


@pytest.mark.mcp2
async def test_a_plain_session_without_session_kwargs_loops_the_rounds_too() -> None:
    callbacks = Callbacks()
    options = {"elicitation_callback": callbacks.elicitation}
    async with connect_in_memory(_server(), session_options=options) as session:
        with anyio.fail_after(BOUND_S):
            result = await call_tool(session, "ask_twice")
    assert text_of(result) == "accept: Ada from accept: Paris"
    assert callbacks.keys == ["elicit-1", "elicit-2"]


@pytest.mark.mcp2
async def test_over_streamable_http() -> None:
    callbacks, statuses = Callbacks(), Statuses()
    with http_server_process(ROUND_TOOLS_SPEC) as url:
        async with connect_http(url, session_options=callbacks.options(None)) as session:
            with anyio.fail_after(BOUND_S):
                greeted = await call_tool(session, "greet_first", on_status=statuses)
                twice = await call_tool(session, "ask_twice")
    assert text_of(greeted) == "Hello, accept: Ada!"
    assert text_of(twice) == "accept: Ada from accept: Paris"
    assert statuses.seen[0].status is TaskStatus.WORKING
    assert TaskStatus.INPUT_REQUIRED not in statuses.statuses
    assert statuses.statuses[-1] is TaskStatus.COMPLETED
    assert callbacks.keys == ["elicit-1", "elicit-1", "elicit-2"]
