"""The client answering input during a task, through the session's own callbacks, in every dialect
the installed major speaks, against the project's own server (in memory, real JSON-RPC).

2026-07-28: the client reads ``inputRequests`` on ``tasks/get``, runs each through the session's
callback once and sends the answer with ``tasks/update``. 2025-11-25: the requests arrive on the
client's open ``tasks/result`` and the SDK session answers them itself. A session that cannot
answer gets a clear ``TaskCancelledError`` and the task is cancelled (not left to its TTL).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import anyio
import mcp.types as types
import pytest

from mcp_tasks_compat import TaskCancelledError
from mcp_tasks_compat._client import follow
from mcp_tasks_compat._client_api import session_kwargs
from mcp_tasks_compat._testkit.sessions import connect_in_memory
from mcp_tasks_compat.client import call_tool, resume, start_tool
from mcp_tasks_compat.core._model import Task, TaskStatus, utc_now
from mcp_tasks_compat.dialects import DIALECT_2026_07_28, Dialect
from mcp_tasks_compat.server import create_message, elicit, list_roots
from mcp_tasks_compat.testing import ToolSet, build_task_server, dialects

from .harness import text_of

pytestmark = pytest.mark.anyio

BOUND_S = 5.0
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


async def ask_both() -> str:
    """Asks for a name and for the roots at the same time."""
    found: dict[str, Any] = {}

    async def name() -> None:
        found["name"] = await elicit("Your name?", SCHEMA)

    async def roots() -> None:
        found["roots"] = await list_roots()

    async with anyio.create_task_group() as group:
        group.start_soon(name)
        group.start_soon(roots)
    return f"{found['name'].content['answer']} in {[str(root.uri) for root in found['roots'].roots]}"


async def ask(question: str) -> str:
    result = await elicit(question, SCHEMA)
    return f"{result.action}: {(result.content or {}).get('answer')}"


async def sample() -> str:
    result = await create_message(
        [types.SamplingMessage(role="user", content=types.TextContent(type="text", text="2+2?"))],
        max_tokens=4,
    )
    return f"{result.model}: {result.content.text}"


TOOLS = ToolSet(
    tools={"ask_both": ask_both, "ask": ask, "sample": sample},
    support={"ask_both": "optional", "ask": "optional", "sample": "optional"},
)


class Callbacks:
    """A session's callbacks; ``hold`` keeps the elicitation answer back until set."""

    def __init__(self, *, refuse: bool = False, raise_error: bool = False) -> None:
        self.refuse = refuse
        self.raise_error = raise_error
        self.elicited: list[str] = []
        self.hold: anyio.Event | None = None
        self.holding = anyio.Event()
        self.abandoned = anyio.Event()

    async def elicitation(self, context: Any, params: Any) -> Any:
        self.elicited.append(params.message)
        if self.raise_error:
            raise RuntimeError("the answering code broke")
        if self.refuse:
            return types.ErrorData(code=types.INVALID_REQUEST, message="nobody here to answer")
        if self.hold is not None:
            self.holding.set()
            try:
                await self.hold.wait()
            except anyio.get_cancelled_exc_class():
                self.abandoned.set()
                raise
        return types.ElicitResult(action="accept", content={"answer": "Ada"})

    async def roots(self, context: Any) -> Any:
        return types.ListRootsResult(roots=[types.Root(uri="file:///work")])  # pyright: ignore[reportArgumentType]

    async def sampling(self, context: Any, params: Any) -> Any:
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="4"), model="test-model"
        )

    def options(self, dialect: Dialect, *, elicitation: bool = True, roots: bool = True) -> dict[str, Any]:
        options: dict[str, Any] = {**session_kwargs(dialect=dialect), "sampling_callback": self.sampling}
        if elicitation:
            options["elicitation_callback"] = self.elicitation
        if roots:
            options["list_roots_callback"] = self.roots
        return options


@pytest.fixture(params=dialects())
def dialect(request: pytest.FixtureRequest) -> Dialect:
    return request.param  # type: ignore[no-any-return]


class Statuses:
    def __init__(self) -> None:
        self.seen: list[TaskStatus] = []
        self.task_id: str | None = None

    def __call__(self, task: Task) -> None:
        self.task_id = task.task_id
        self.seen.append(task.status)


async def test_the_sessions_own_callbacks_answer_and_the_result_comes_back(dialect: Dialect) -> None:
    callbacks, statuses = Callbacks(), Statuses()
    async with connect_in_memory(
        build_task_server(TOOLS), dialect=dialect, session_options=callbacks.options(dialect)
    ) as session:
        with anyio.fail_after(BOUND_S):
            result = await call_tool(session, "ask_both", mode="task", on_status=statuses)
    assert text_of(result) == "Ada in ['file:///work']"
    assert callbacks.elicited == ["Your name?"]
    assert statuses.seen[0] is TaskStatus.WORKING
    if dialect == DIALECT_2026_07_28:
        # The client answers what a poll showed, so input_required was seen. (In 2025-11-25 the
        # question may be answered on tasks/result before any report of the status arrives.)
        assert TaskStatus.INPUT_REQUIRED in statuses.seen
    assert statuses.seen[-1] is TaskStatus.COMPLETED


async def test_sampling_is_answered_by_the_sampling_callback(dialect: Dialect) -> None:
    callbacks = Callbacks()
    async with connect_in_memory(
        build_task_server(TOOLS), dialect=dialect, session_options=callbacks.options(dialect)
    ) as session:
        with anyio.fail_after(BOUND_S):
            result = await call_tool(session, "sample", mode="task")
    assert text_of(result) == "test-model: 4"


async def _final_status(session: Any, task_id: str | None) -> TaskStatus:
    assert task_id is not None
    run = await resume(session, task_id)
    state = await run.status()
    assert state is not None
    return state.status


async def test_a_session_without_the_callback_gets_a_clear_error_and_the_task_is_cancelled(
    dialect: Dialect,
) -> None:
    callbacks, statuses = Callbacks(), Statuses()
    options = callbacks.options(dialect, elicitation=False)
    async with connect_in_memory(
        build_task_server(TOOLS), dialect=dialect, session_options=options
    ) as session:
        with anyio.fail_after(BOUND_S), pytest.raises(TaskCancelledError) as cancelled:
            await call_tool(session, "ask", {"question": "Anyone?"}, mode="task", on_status=statuses)
        final = await _final_status(session, statuses.task_id)
    assert final is TaskStatus.CANCELLED
    assert cancelled.value.task_id == statuses.task_id
    if dialect == DIALECT_2026_07_28:
        # The client saw the request, found no callback for it, and cancelled the task.
        assert (
            "elicitation/create 'Anyone?' (key 'elicit-1') was refused by the session's elicitation_callback"
            in (cancelled.value.message)
        )
        assert (
            "a ClientSession built without elicitation_callback= refuses every such request"
            in cancelled.value.message
        )
    else:
        # The session declared no elicitation capability, so the server cancelled the task at once.
        assert "did not declare the 'elicitation' capability" in cancelled.value.message


async def test_a_callback_that_refuses_cancels_the_task(dialect: Dialect) -> None:
    callbacks, statuses = Callbacks(refuse=True), Statuses()
    async with connect_in_memory(
        build_task_server(TOOLS), dialect=dialect, session_options=callbacks.options(dialect)
    ) as session:
        with (
            anyio.fail_after(BOUND_S),
            pytest.raises(TaskCancelledError, match="nobody here to answer") as cancelled,
        ):
            await call_tool(session, "ask", {"question": "Anyone?"}, mode="task", on_status=statuses)
        final = await _final_status(session, statuses.task_id)
    assert final is TaskStatus.CANCELLED
    assert cancelled.value.task_id == statuses.task_id
    assert callbacks.elicited == ["Anyone?"]


async def test_a_callback_that_raises_ends_the_task(dialect: Dialect) -> None:
    callbacks, statuses = Callbacks(raise_error=True), Statuses()
    async with connect_in_memory(
        build_task_server(TOOLS), dialect=dialect, session_options=callbacks.options(dialect)
    ) as session:
        with anyio.fail_after(BOUND_S):
            if dialect == DIALECT_2026_07_28:
                # Our code ran the callback: its error is the caller's, after the task was cancelled.
                with pytest.raises(RuntimeError, match="the answering code broke"):
                    await call_tool(session, "ask", {"question": "?"}, mode="task", on_status=statuses)
            else:
                # The SDK session ran it and answered the server with an error: the server cancels.
                with pytest.raises(TaskCancelledError, match="could not answer elicitation/create"):
                    await call_tool(session, "ask", {"question": "?"}, mode="task", on_status=statuses)
        final = await _final_status(session, statuses.task_id)
    assert final is TaskStatus.CANCELLED


async def test_cancel_while_the_answer_is_pending_stops_the_callback() -> None:
    if DIALECT_2026_07_28 not in dialects():
        pytest.skip("a pending 2025-11-25 answer runs inside the mcp 1.x session's receive loop")
    callbacks, statuses = Callbacks(), Statuses()
    callbacks.hold = anyio.Event()
    options = callbacks.options(DIALECT_2026_07_28)
    async with connect_in_memory(
        build_task_server(TOOLS), dialect=DIALECT_2026_07_28, session_options=options
    ) as session:
        run = await start_tool(session, "ask", {"question": "Wait?"}, on_status=statuses)
        outcome: list[BaseException] = []

        async def wait_for_result() -> None:
            try:
                await run.result()
            except TaskCancelledError as error:
                outcome.append(error)

        async with anyio.create_task_group() as group:
            group.start_soon(wait_for_result)
            with anyio.fail_after(BOUND_S):
                await callbacks.holding.wait()
                state = await run.cancel()
                await callbacks.abandoned.wait()
    assert state is not None
    assert state.status is TaskStatus.CANCELLED
    assert len(outcome) == 1


# --- dedupe across polls, SDK-free ----------------------------------------------------------------


class InputWire:
    """A 2026-07-28 wire whose task shows the same request on several polls while it is answered."""

    def __init__(self, polls_before_done: int) -> None:
        self.gets = 0
        self.polls_before_done = polls_before_done
        self.enough_polls = anyio.Event()
        self.answered: list[str] = []
        self.updates: list[dict[str, Any]] = []
        self.cancelled: list[str] = []
        self.request = {"method": "elicitation/create", "params": {"message": "Name?", "requestedSchema": {}}}

    @property
    def dialect(self) -> Literal["2026-07-28"]:
        return DIALECT_2026_07_28

    def _task(self, status: TaskStatus, **changes: Any) -> Task:
        now = utc_now()
        return Task("t1", status, now, now, poll_interval_ms=100, **changes)

    async def get(self, task_id: str, *, read_timeout: float | None = None) -> Task:
        self.gets += 1
        if self.gets >= 3:
            self.enough_polls.set()
        if self.updates and self.gets > self.polls_before_done:
            return self._task(TaskStatus.COMPLETED, result={"content": []})
        # The snapshot still lists the request (the server has not caught up with the update).
        return self._task(TaskStatus.INPUT_REQUIRED, input_requests={"elicit-1": self.request})

    async def answer_input(self, key: str, request: Mapping[str, Any]) -> dict[str, Any]:
        self.answered.append(key)
        await self.enough_polls.wait()  # a slow answer: the task is polled meanwhile
        return {"action": "accept", "content": {"name": "Ada"}}

    async def update(self, task_id: str, responses: Mapping[str, Mapping[str, Any]]) -> None:
        self.updates.append({key: dict(value) for key, value in responses.items()})

    async def cancel(self, task_id: str) -> Task | None:
        self.cancelled.append(task_id)
        return None

    async def to_result(self, payload: Mapping[str, Any], *, tool: str | None) -> dict[str, Any]:
        return dict(payload)

    push: None = None  # polled only


async def test_a_request_seen_on_several_polls_is_answered_once() -> None:
    wire = InputWire(polls_before_done=6)
    first = wire._task(TaskStatus.WORKING)  # pyright: ignore[reportPrivateUsage]
    with anyio.fail_after(BOUND_S):
        result = await follow(wire, first, on_status=None, overall_timeout=None, cancel_grace=1)
    assert result == {"content": []}
    assert wire.gets >= 4  # the request was listed on several polls, before and after the answer
    assert wire.answered == ["elicit-1"]
    assert wire.updates == [{"elicit-1": {"action": "accept", "content": {"name": "Ada"}}}]
    assert wire.cancelled == []
