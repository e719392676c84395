"""Input during a task, in the engine alone (no SDK): keys, partial answers, waiting, relaying.

The work asks with ``engine.inputs.request`` (as ``mcp_tasks_compat.server.elicit`` does); answers come
through ``submit_responses`` (2026-07-28 ``tasks/update``) or a relay on a ``tasks/result``
stream (2025-11-25). Every wait is bounded; nothing sleeps to synchronise.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio
import anyio.abc
import pytest

from mcp_tasks_compat._engine import InputRefused, TaskEngine, TaskRecord, current_run
from mcp_tasks_compat.core._model import JsonRpcError, TaskStatus
from mcp_tasks_compat.dialects import DIALECT_2025_11_25, DIALECT_2026_07_28, Dialect
from mcp_tasks_compat.errors import INVALID_REQUEST, TaskStateError

pytestmark = pytest.mark.anyio

BOUND_S = 5
ELICIT = {
    "method": "elicitation/create",
    "params": {"mode": "form", "message": "Name?", "requestedSchema": {}},
}
ROOTS = {"method": "roots/list"}
SAMPLE = {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}
ACCEPT = {"action": "accept", "content": {"answer": "Ada"}}


async def _status_becomes(record: TaskRecord, status: TaskStatus, outstanding: int | None = None) -> None:
    """Wait until the task shows ``status`` (and, if given, that many outstanding requests)."""
    with anyio.fail_after(BOUND_S):
        while record.task.status is not status or (
            outstanding is not None and len(record.task.input_requests) != outstanding
        ):
            await record.changed.wait()


class Asker:
    """Work that asks for the given requests one after another and keeps the answers."""

    def __init__(self, *requests: Mapping[str, Any]) -> None:
        self.requests = requests
        self.answers: list[dict[str, Any]] = []
        self.stopped = anyio.Event()

    async def __call__(self) -> Mapping[str, Any]:
        run = current_run()
        assert run is not None
        engine, record = run
        try:
            for request in self.requests:
                self.answers.append(await engine.inputs.request(record, request))
        except anyio.get_cancelled_exc_class():
            self.stopped.set()
            raise
        return {"content": [{"type": "text", "text": repr(self.answers)}]}


async def _start(
    engine: TaskEngine, group: anyio.abc.TaskGroup, work: Asker, dialect: Dialect = DIALECT_2026_07_28
) -> TaskRecord:
    record = await engine.create(dialect=dialect, owner=None, tool_name="ask", ttl_ms=60_000)
    engine.start(record, work, group)
    return record


async def test_a_request_makes_the_task_input_required_and_an_answer_makes_it_working_again() -> None:
    engine = TaskEngine()
    asker = Asker(ELICIT)
    async with engine.hosted() as host:
        group = host.runs
        record = await _start(engine, group, asker)
        await _status_becomes(record, TaskStatus.INPUT_REQUIRED, 1)
        assert dict(record.task.input_requests) == {"elicit-1": ELICIT}
        taken = await engine.inputs.submit_responses(record.task.task_id, None, {"elicit-1": ACCEPT})
        # Back to working before the acknowledgement: a tasks/get right after never shows the key.
        assert taken == ["elicit-1"]
        assert record.task.status in (TaskStatus.WORKING, TaskStatus.COMPLETED)
        assert "elicit-1" not in record.task.input_requests
        await _status_becomes(record, TaskStatus.COMPLETED)
    assert asker.answers == [ACCEPT]


async def test_keys_are_unique_over_the_tasks_life_and_never_reused() -> None:
    engine = TaskEngine()
    asker = Asker(ELICIT, ELICIT, SAMPLE, ROOTS)
    keys: list[str] = []
    async with engine.hosted() as host:
        group = host.runs
        record = await _start(engine, group, asker)
        for _ in asker.requests:
            await _status_becomes(record, TaskStatus.INPUT_REQUIRED, 1)
            (key,) = record.task.input_requests
            keys.append(key)
            await engine.inputs.submit_responses(record.task.task_id, None, {key: {"n": len(keys)}})
            # An answer to a key already answered (a retried tasks/update) is not taken again.
            assert await engine.inputs.submit_responses(record.task.task_id, None, {key: {"n": 0}}) == []
        await _status_becomes(record, TaskStatus.COMPLETED)
    assert keys == ["elicit-1", "elicit-2", "sample-3", "roots-4"]
    assert asker.answers == [{"n": 1}, {"n": 2}, {"n": 3}, {"n": 4}]


async def test_a_partial_answer_keeps_the_task_input_required_and_unknown_keys_are_ignored() -> None:
    engine = TaskEngine()
    first, second = Asker(ELICIT), Asker(ROOTS)

    async def both() -> Mapping[str, Any]:
        async with anyio.create_task_group() as group:
            group.start_soon(first)
            group.start_soon(second)
        return {"content": []}

    async with engine.hosted() as host:
        group = host.runs
        record = await engine.create(dialect=DIALECT_2026_07_28, owner=None, tool_name="ask", ttl_ms=None)
        engine.start(record, both, group)
        await _status_becomes(record, TaskStatus.INPUT_REQUIRED, 2)
        keys = sorted(record.task.input_requests)
        roots_key = next(key for key in keys if key.startswith("roots-"))
        elicit_key = next(key for key in keys if key.startswith("elicit-"))
        taken = await engine.inputs.submit_responses(
            record.task.task_id, None, {roots_key: {"roots": []}, "nobody-asked": {"action": "accept"}}
        )
        assert taken == [roots_key]
        assert record.task.status is TaskStatus.INPUT_REQUIRED
        assert list(record.task.input_requests) == [elicit_key]
        await engine.inputs.submit_responses(record.task.task_id, None, {elicit_key: ACCEPT})
        await _status_becomes(record, TaskStatus.COMPLETED)
    assert first.answers == [ACCEPT]
    assert second.answers == [{"roots": []}]
    assert len(set(keys)) == 2


async def test_cancel_while_input_required_releases_the_waiter() -> None:
    engine = TaskEngine()
    asker = Asker(ELICIT)
    async with engine.hosted() as host:
        group = host.runs
        record = await _start(engine, group, asker)
        await _status_becomes(record, TaskStatus.INPUT_REQUIRED)
        task = await engine.cancel(record.task.task_id, None, strict=True)
        assert task.status is TaskStatus.CANCELLED
        assert dict(task.input_requests) == {}
        with anyio.fail_after(BOUND_S):
            await asker.stopped.wait()  # the work was stopped, not woken to find its task ended
        # A late answer to the withdrawn request is ignored.
        assert await engine.inputs.submit_responses(record.task.task_id, None, {"elicit-1": ACCEPT}) == []
    assert record.task.status is TaskStatus.CANCELLED
    assert asker.answers == []


async def test_ttl_expiry_while_input_required_fails_the_task_and_releases_the_waiter() -> None:
    now = [100.0]
    engine = TaskEngine(ttl_floor_ms=0, clock=lambda: now[0])
    asker = Asker(ELICIT)
    async with anyio.create_task_group() as group:
        record = await engine.create(dialect=DIALECT_2026_07_28, owner=None, tool_name="ask", ttl_ms=50)
        engine.start(record, asker, group)
        await _status_becomes(record, TaskStatus.INPUT_REQUIRED)
        now[0] += 0.051
        await engine.sweep()
        with anyio.fail_after(BOUND_S):
            await asker.stopped.wait()
    assert record.task.status is TaskStatus.FAILED
    assert record.task.error is not None
    assert "TTL" in record.task.error.message


async def test_a_waiter_that_gives_up_withdraws_its_request() -> None:
    engine = TaskEngine()
    outcome: list[str] = []

    async def impatient() -> Mapping[str, Any]:
        run = current_run()
        assert run is not None
        engine_, record_ = run
        with anyio.move_on_after(0.05):  # the tool's own deadline, not synchronisation
            await engine_.inputs.request(record_, ELICIT)
        outcome.append(record_.task.status.value)
        return {"content": []}

    async with engine.hosted() as host:
        group = host.runs
        record = await engine.create(dialect=DIALECT_2026_07_28, owner=None, tool_name="ask", ttl_ms=None)
        engine.start(record, impatient, group)
        await _status_becomes(record, TaskStatus.COMPLETED)
    assert outcome == ["working"]  # withdrawn: nothing outstanding, so back to working
    assert dict(record.task.input_requests) == {}


async def test_asking_from_an_ended_task_is_refused() -> None:
    engine = TaskEngine()
    record = await engine.create(dialect=DIALECT_2026_07_28, owner=None, tool_name="ask", ttl_ms=None)
    await engine.cancel(record.task.task_id, None, strict=False)
    with pytest.raises(TaskStateError, match="cannot ask for input"):
        await engine.inputs.request(record, ELICIT)


# --- 2025-11-25: relaying on tasks/result streams ---------------------------------------------------


class Client:
    """A client side for relays: records what was sent, answers when told to."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str, Mapping[str, Any]]] = []
        self.arrived = anyio.Event()
        self.answers: dict[str, anyio.Event] = {}

    def relay(self, stream: str, answer: Mapping[str, Any] | JsonRpcError | None = None) -> Any:
        async def send(key: str, request: Mapping[str, Any]) -> Mapping[str, Any]:
            self.sent.append((stream, key, request))
            self.arrived.set()
            self.arrived = anyio.Event()
            if answer is None:
                await anyio.sleep_forever()  # this stream never answers (its client went away)
            if isinstance(answer, JsonRpcError):
                raise InputRefused(answer)
            return answer

        return send


async def test_a_relay_carries_the_request_and_its_answer() -> None:
    engine = TaskEngine()
    asker = Asker(ELICIT, ROOTS)
    client = Client()
    async with engine.hosted() as host:
        group = host.runs
        record = await _start(engine, group, asker, DIALECT_2025_11_25)
        with anyio.fail_after(BOUND_S):
            task = await engine.inputs.relay_until_terminal(record, client.relay("result-1", ACCEPT))
    assert task.status is TaskStatus.COMPLETED
    assert [(stream, key) for stream, key, _ in client.sent] == [
        ("result-1", "elicit-1"),
        ("result-1", "roots-2"),
    ]
    assert asker.answers == [ACCEPT, ACCEPT]


async def test_a_refused_request_cancels_the_task_saying_why() -> None:
    engine = TaskEngine()
    asker = Asker(ELICIT)
    client = Client()
    refusal = JsonRpcError(INVALID_REQUEST, "Elicitation not supported")
    async with engine.hosted() as host:
        group = host.runs
        record = await _start(engine, group, asker, DIALECT_2025_11_25)
        with anyio.fail_after(BOUND_S):
            task = await engine.inputs.relay_until_terminal(record, client.relay("result-1", refusal))
            await asker.stopped.wait()
    assert task.status is TaskStatus.CANCELLED
    assert task.status_message == (
        "the client could not answer elicitation/create: Elicitation not supported (code -32600)"
    )


async def test_a_request_goes_to_one_stream_and_moves_on_when_that_stream_closes() -> None:
    """Two concurrent tasks/result streams: a request is sent on one of them only; when that one
    closes before the answer, the request is sent again on the stream still open."""
    engine = TaskEngine()
    asker = Asker(ELICIT)
    client = Client()
    async with engine.hosted() as host:
        group = host.runs
        record = await _start(engine, group, asker, DIALECT_2025_11_25)
        await _status_becomes(record, TaskStatus.INPUT_REQUIRED)
        silent = anyio.CancelScope()

        async def first_stream() -> None:
            with silent:
                await engine.inputs.relay_until_terminal(record, client.relay("result-1"))

        async with anyio.create_task_group() as streams:
            streams.start_soon(first_stream)
            with anyio.fail_after(BOUND_S):
                await client.arrived.wait()
            assert [stream for stream, _, _ in client.sent] == ["result-1"]
            finished: list[TaskStatus] = []

            async def second_stream() -> None:
                finished.append(
                    (
                        await engine.inputs.relay_until_terminal(record, client.relay("result-2", ACCEPT))
                    ).status
                )

            streams.start_soon(second_stream)
            await anyio.wait_all_tasks_blocked()
            assert [stream for stream, _, _ in client.sent] == ["result-1"]  # claimed: not sent twice
            silent.cancel()  # the first client disconnects before answering
        assert finished == [TaskStatus.COMPLETED]
    assert [(stream, key) for stream, key, _ in client.sent] == [
        ("result-1", "elicit-1"),
        ("result-2", "elicit-1"),
    ]
    assert asker.answers == [ACCEPT]


async def test_an_engine_serving_two_lifespans_keeps_sweeping_after_one_ends() -> None:
    """The same tasks served by two servers at once (the bench's detach rows did): the lifespan
    that ends first used to leave the other's sweeper without its next round, and it crashed."""
    engine = TaskEngine(ttl_floor_ms=0)
    async with engine.hosted():
        async with engine.hosted():
            pass  # the second lifespan ends first
        record = await engine.create(dialect=DIALECT_2026_07_28, owner=None, tool_name="ask", ttl_ms=30)
        with anyio.fail_after(BOUND_S):  # the sweeper left running expires it
            task = await engine.reader.wait_terminal(record.task.task_id, None)
    assert task.status is TaskStatus.FAILED
    assert task.error is not None
    assert "TTL" in task.error.message
