"""The server-side task engine, driven directly (no SDK): runs, waiters, cancel, owners, TTL, status.

No sleeps as synchronisation: the tests wait on events and on ``anyio.wait_all_tasks_blocked``,
bound every wait with ``fail_after``, and move time with an injected clock.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

import anyio
import anyio.abc
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_tasks_compat._engine import (
    DEFAULT_TTL_FLOOR_MS,
    EXPIRED_GRACE_MS,
    InMemoryTaskStore,
    PollPolicy,
    TaskEngine,
    TaskRecord,
    TaskState,
    ToolCallFailure,
    UnknownTask,
    current_run,
    new_task_id,
    report_status,
)
from mcp_tasks_compat._engine.expiry import SWEEP_BATCH
from mcp_tasks_compat._engine.grace import GraceTicket
from mcp_tasks_compat._engine.limits import TaskLimits
from mcp_tasks_compat._server import fails_task_2025, fails_task_2026
from mcp_tasks_compat.core._model import DEFAULT_TTL_MS, JsonRpcError, Task, TaskStatus
from mcp_tasks_compat.dialects import DIALECT_2025_11_25, DIALECT_2026_07_28, Dialect
from mcp_tasks_compat.errors import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, PeerProtocolError

pytestmark = pytest.mark.anyio

BOUND_S = 5  # an upper bound on any wait; tests normally finish in milliseconds
OK_RESULT: Mapping[str, Any] = {"content": [{"type": "text", "text": "done"}], "isError": False}
TOOL_ERROR_RESULT: Mapping[str, Any] = {
    "content": [{"type": "text", "text": "no such file"}],
    "isError": True,
}

Work = Callable[[], Awaitable[Mapping[str, Any]]]


class FakeClock:
    """A monotonic clock the test moves by hand."""

    def __init__(self, start: float = 1_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


async def create(
    engine: TaskEngine,
    *,
    owner: str | None = "alice",
    dialect: Dialect = DIALECT_2026_07_28,
    ttl_ms: int | None = 60_000,
) -> TaskRecord:
    return await engine.create(dialect=dialect, owner=owner, tool_name="build", ttl_ms=ttl_ms)


def returning(result: Mapping[str, Any]) -> Work:
    async def work() -> Mapping[str, Any]:
        return result

    return work


def blocked_until(release: anyio.Event, result: Mapping[str, Any] = OK_RESULT) -> Work:
    async def work() -> Mapping[str, Any]:
        await release.wait()
        return result

    return work


async def run_to_end(engine: TaskEngine, work: Work, **create_kwargs: Any) -> Task:
    async with anyio.create_task_group() as group:
        record = await create(engine, **create_kwargs)
        engine.start(record, work, group)
    return record.task


def served_engine() -> TaskEngine:
    """An engine with the result rules its services give it (``_server``: the engine has none)."""
    engine = TaskEngine()
    engine.runs.result_rules.update(
        {DIALECT_2025_11_25: fails_task_2025, DIALECT_2026_07_28: fails_task_2026}
    )
    return engine


# --- creation and outcomes ----------------------------------------------------------------------


async def test_a_created_task_is_working_and_readable_before_create_returns() -> None:
    engine = TaskEngine(poll_policy=PollPolicy(minimum_ms=250))
    record = await create(engine, ttl_ms=5_000)
    task = await engine.get(record.task.task_id, "alice")
    assert task.status is TaskStatus.WORKING
    assert task.ttl_ms == 5_000
    assert task.poll_interval_ms == 250
    assert task.created_at == task.last_updated_at
    assert len(task.task_id) >= 40  # 256 random bits, url-safe


async def test_task_ids_are_never_reused() -> None:
    engine = TaskEngine()
    ids = {(await create(engine)).task.task_id for _ in range(200)}
    assert len(ids) == 200


async def test_work_returning_completes_the_task_with_its_result() -> None:
    task = await run_to_end(TaskEngine(), returning(OK_RESULT))
    assert task.status is TaskStatus.COMPLETED
    assert task.result == OK_RESULT
    assert task.error is None


async def test_work_raising_fails_the_task_with_internal_error() -> None:
    async def work() -> Mapping[str, Any]:
        raise RuntimeError("disk on fire")

    task = await run_to_end(TaskEngine(), work)
    assert task.status is TaskStatus.FAILED
    assert task.error == JsonRpcError(INTERNAL_ERROR, "disk on fire")
    assert task.error.code == -32603
    assert task.status_message == "disk on fire"


async def test_an_exception_without_a_message_is_named_by_its_type() -> None:
    async def work() -> Mapping[str, Any]:
        raise KeyError

    task = await run_to_end(TaskEngine(), work)
    assert task.error == JsonRpcError(INTERNAL_ERROR, "KeyError")


async def test_tool_call_failure_fails_the_task_with_that_error() -> None:
    error = JsonRpcError(-32000, "quota exceeded", data={"retryAfterMs": 1000})

    async def work() -> Mapping[str, Any]:
        raise ToolCallFailure(error)

    task = await run_to_end(TaskEngine(), work)
    assert task.status is TaskStatus.FAILED
    assert task.error == error
    assert task.status_message == "quota exceeded"


@pytest.mark.parametrize(
    ("dialect", "status"),
    [(DIALECT_2025_11_25, TaskStatus.FAILED), (DIALECT_2026_07_28, TaskStatus.COMPLETED)],
)
async def test_is_error_result_fails_on_2025_and_completes_on_2026(
    dialect: Dialect, status: TaskStatus
) -> None:
    task = await run_to_end(served_engine(), returning(TOOL_ERROR_RESULT), dialect=dialect)
    assert task.status is status
    assert task.result == TOOL_ERROR_RESULT  # 2025 serves it from tasks/result, 2026 inline
    assert task.error is None


@pytest.mark.parametrize("dialect", [DIALECT_2025_11_25, DIALECT_2026_07_28])
async def test_a_plain_result_completes_in_both_dialects(dialect: Dialect) -> None:
    task = await run_to_end(served_engine(), returning(OK_RESULT), dialect=dialect)
    assert task.status is TaskStatus.COMPLETED


async def test_a_result_is_judged_only_by_the_rule_given_for_its_dialect() -> None:
    """The engine reads no result: without a rule for the dialect a result completes its task."""
    engine = TaskEngine()
    assert (await run_to_end(engine, returning(TOOL_ERROR_RESULT), dialect=DIALECT_2025_11_25)).status is (
        TaskStatus.COMPLETED
    )
    engine.runs.result_rules[DIALECT_2026_07_28] = lambda result: result.get("content") == []
    failing = await run_to_end(engine, returning({"content": []}), dialect=DIALECT_2026_07_28)
    assert failing.status is TaskStatus.FAILED
    assert failing.result == {"content": []}  # a failed result is kept, as 2025-11-25 serves it


# --- waiting ------------------------------------------------------------------------------------


async def test_all_concurrent_waiters_wake_when_the_task_ends() -> None:
    engine = TaskEngine()
    release = anyio.Event()
    woken: list[Task] = []

    async def waiter(task_id: str) -> None:
        woken.append(await engine.reader.wait_terminal(task_id, "alice"))

    with anyio.fail_after(BOUND_S):
        async with anyio.create_task_group() as group:
            record = await create(engine)
            engine.start(record, blocked_until(release), group)
            for _ in range(5):
                group.start_soon(waiter, record.task.task_id)
            await anyio.wait_all_tasks_blocked()
            # A change that does not end the task must not end the waits either.
            await engine.set_status_message(record.task.task_id, "half way")
            await anyio.wait_all_tasks_blocked()
            assert woken == []
            release.set()
    assert len(woken) == 5
    assert all(task.status is TaskStatus.COMPLETED for task in woken)


async def test_waiting_on_an_ended_task_returns_at_once() -> None:
    engine = TaskEngine()
    task = await run_to_end(engine, returning(OK_RESULT))
    with anyio.fail_after(BOUND_S):
        assert await engine.reader.wait_terminal(task.task_id, "alice") == task


# --- cancel -------------------------------------------------------------------------------------


@pytest.fixture(params=["task-handle", "own-scope"])
def run_stop(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways a run is stopped: through anyio's task handle (anyio >= 4.14, the default here)
    and through a cancel scope of the run's own (earlier anyio)."""
    from mcp_tasks_compat._engine import runs

    if request.param == "own-scope":
        monkeypatch.setattr(runs, "_TASK_HANDLES", False)
    elif not runs._TASK_HANDLES:
        pytest.skip("this anyio has no task handles")
    return str(request.param)


@pytest.mark.usefixtures("run_stop")
async def test_cancel_marks_cancelled_before_returning_and_stops_the_work() -> None:
    engine = TaskEngine()
    stopped = anyio.Event()

    async def work() -> Mapping[str, Any]:
        try:
            await anyio.sleep_forever()
        finally:
            stopped.set()
        raise AssertionError("unreachable")

    with anyio.fail_after(BOUND_S):
        async with anyio.create_task_group() as group:
            record = await create(engine)
            engine.start(record, work, group)
            await anyio.wait_all_tasks_blocked()
            answer = await engine.cancel(record.task.task_id, "alice", strict=True)
            assert answer.status is TaskStatus.CANCELLED  # before any checkpoint let the work react
            assert answer.status_message == "cancelled by the client"
            await stopped.wait()
    assert record.task.status is TaskStatus.CANCELLED


class LateOutcome:
    """Work that ignores cancellation until released, then ends in one of several ways."""

    def __init__(self, outcome: str) -> None:
        self.outcome = outcome
        self.entered = anyio.Event()
        self.release = anyio.Event()
        self.ended_after_cancel = False

    async def __call__(self) -> Mapping[str, Any]:
        with anyio.CancelScope(shield=True):
            self.entered.set()
            await self.release.wait()
        self.ended_after_cancel = True
        if self.outcome == "returns":
            return OK_RESULT
        if self.outcome == "returns isError":
            return TOOL_ERROR_RESULT
        if self.outcome == "raises":
            raise RuntimeError("late failure")
        raise ToolCallFailure(JsonRpcError(-32000, "late tool failure"))


@pytest.mark.parametrize("outcome", ["returns", "returns isError", "raises", "ToolCallFailure"])
@pytest.mark.parametrize("dialect", [DIALECT_2025_11_25, DIALECT_2026_07_28])
async def test_cancel_is_sticky_whatever_the_work_does_afterwards(outcome: str, dialect: Dialect) -> None:
    engine = TaskEngine()
    work = LateOutcome(outcome)
    with anyio.fail_after(BOUND_S):
        async with anyio.create_task_group() as group:  # no exception may escape into it
            record = await create(engine, dialect=dialect)
            engine.start(record, work, group)
            await work.entered.wait()
            await engine.cancel(record.task.task_id, "alice", strict=True)
            work.release.set()
    assert work.ended_after_cancel
    task = await engine.get(record.task.task_id, "alice")
    assert task.status is TaskStatus.CANCELLED
    assert task.result is None
    assert task.error is None
    assert task.status_message == "cancelled by the client"


async def test_cancel_reason_becomes_the_status_message() -> None:
    engine = TaskEngine()
    record = await create(engine)
    task = await engine.cancel(record.task.task_id, "alice", strict=False, reason="the session ended")
    assert task.status_message == "the session ended"


@pytest.mark.parametrize("end", [TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED])
async def test_cancelling_an_ended_task_is_refused_strictly_and_acknowledged_otherwise(
    end: TaskStatus,
) -> None:
    engine = served_engine()
    record = await create(engine)
    if end is TaskStatus.CANCELLED:
        await engine.cancel(record.task.task_id, "alice", strict=True)
    else:
        outcome = returning(OK_RESULT) if end is TaskStatus.COMPLETED else returning(TOOL_ERROR_RESULT)
        record = await create(engine, dialect=DIALECT_2025_11_25)
        async with anyio.create_task_group() as group:
            engine.start(record, outcome, group)
    before = record.task
    assert before.status is end
    # 2025-11-25: MUST reject cancel of a terminal task with -32602.
    with pytest.raises(PeerProtocolError) as caught:
        await engine.cancel(before.task_id, "alice", strict=True)
    assert caught.value.jsonrpc_code == INVALID_PARAMS
    assert caught.value.message == f"Cannot cancel task in terminal status '{end.value}'"
    # 2026-07-28: an acknowledgement; the task is left as it was.
    assert await engine.cancel(before.task_id, "alice", strict=False) == before


# --- owners -------------------------------------------------------------------------------------


async def test_another_principal_cannot_see_or_touch_a_task() -> None:
    engine = TaskEngine()
    record = await create(engine, owner="alice")
    task_id = record.task.task_id
    for attempt in (
        lambda: engine.get(task_id, "bob"),
        lambda: engine.lookup(task_id, "bob"),
        lambda: engine.cancel(task_id, "bob", strict=True),
        lambda: engine.cancel(task_id, "bob", strict=False),
        lambda: engine.reader.wait_terminal(task_id, "bob"),
        lambda: engine.get(task_id, None),
    ):
        with pytest.raises(UnknownTask) as caught:
            await attempt()
        # The same answer as for an unknown id, so ids cannot be probed (the wording is a service's).
        assert (caught.value.task_id, caught.value.detail) == (task_id, None)
    assert record.task.status is TaskStatus.WORKING  # bob's cancel did nothing
    assert (await engine.get(task_id, "alice")).task_id == task_id


async def test_an_unknown_id_is_a_typed_error_without_dialect_text() -> None:
    with pytest.raises(UnknownTask) as caught:
        await TaskEngine().get("no-such-task", "alice")
    assert caught.value.task_id == "no-such-task"
    assert not isinstance(caught.value, PeerProtocolError)


async def test_a_task_without_owner_is_readable_by_its_id_alone() -> None:
    # Unauthenticated transports have no principal: the unguessable id is the bearer handle.
    engine = TaskEngine()
    record = await create(engine, owner=None)
    assert (await engine.get(record.task.task_id, "anyone")).task_id == record.task.task_id


async def test_owned_by_lists_only_that_principals_tasks() -> None:
    engine = TaskEngine()
    mine = {(await create(engine, owner="alice")).task.task_id for _ in range(3)}
    await create(engine, owner="bob")
    assert {task.task_id for task in await engine.reader.owned_by("alice")} == mine


# --- TTL ----------------------------------------------------------------------------------------


def test_effective_ttl_floors_requests_and_caps_unlimited_unless_uncapped() -> None:
    engine = TaskEngine(ttl_floor_ms=10_000, default_ttl_ms=30_000)
    assert engine.effective_ttl(None, requested=False) == 30_000
    assert engine.effective_ttl(1_000, requested=True) == 10_000
    assert engine.effective_ttl(50_000, requested=True) == 50_000
    assert engine.effective_ttl(None, requested=True) == TaskLimits().max_ttl_ms  # capped by default
    uncapped = TaskEngine(ttl_floor_ms=10_000, limits=TaskLimits(max_ttl_ms=None))
    assert uncapped.effective_ttl(None, requested=True) is None
    assert TaskEngine(ttl_floor_ms=10_000).effective_ttl(None, requested=False) == 10_000
    with pytest.raises(ValueError, match="ttl_floor_ms"):
        TaskEngine(ttl_floor_ms=-1)


async def test_the_model_and_the_engine_share_one_default_ttl() -> None:
    """One constant, an hour in ms (``core._model.DEFAULT_TTL_MS``): a task built without a TTL,
    the engine's floor, and what it grants a call that asks for none or for less."""
    now = datetime.now(timezone.utc)
    bare = Task(task_id="t", status=TaskStatus.WORKING, created_at=now, last_updated_at=now)
    assert bare.ttl_ms == DEFAULT_TTL_MS == DEFAULT_TTL_FLOOR_MS == 3_600_000
    engine = TaskEngine()
    assert engine.ttl_floor_ms == engine.default_ttl_ms == DEFAULT_TTL_MS
    granted = engine.effective_ttl(None, requested=False)
    assert granted == engine.effective_ttl(60_000, requested=True) == DEFAULT_TTL_MS
    record = await create(engine, ttl_ms=granted)
    assert (await engine.get(record.task.task_id, "alice")).ttl_ms == bare.ttl_ms


async def test_a_task_that_outlives_its_ttl_is_failed_then_kept_for_a_grace_period() -> None:
    clock = FakeClock()
    engine = TaskEngine(clock=clock, ttl_floor_ms=0)
    stopped = anyio.Event()

    async def work() -> Mapping[str, Any]:
        try:
            await anyio.sleep_forever()
        finally:
            stopped.set()
        raise AssertionError("unreachable")

    ttl_ms = 120_000  # longer than the grace period, so the two are told apart
    with anyio.fail_after(BOUND_S):
        async with anyio.create_task_group() as group:
            record = await create(engine, ttl_ms=ttl_ms)
            task_id = record.task.task_id
            engine.start(record, work, group)
            await anyio.wait_all_tasks_blocked()

            clock.advance(ttl_ms / 1000 - 0.001)
            assert await engine.sweep() == 0
            assert record.task.status is TaskStatus.WORKING

            clock.advance(0.001)
            assert await engine.sweep() == 0  # failed, not removed
            await stopped.wait()  # the run was stopped
    task = await engine.get(task_id, "alice")
    assert task.status is TaskStatus.FAILED
    assert task.error == JsonRpcError(INTERNAL_ERROR, f"Task exceeded its TTL of {ttl_ms} ms and was stopped")

    clock.advance(EXPIRED_GRACE_MS / 1000 - 0.001)
    assert await engine.sweep() == 0
    assert (await engine.get(task_id, "alice")).status is TaskStatus.FAILED

    clock.advance(0.001)
    assert await engine.sweep() == 1
    with pytest.raises(UnknownTask):
        await engine.get(task_id, "alice")


async def test_an_ended_task_is_kept_for_its_ttl_from_the_end_then_removed() -> None:
    clock = FakeClock()
    engine = TaskEngine(clock=clock, ttl_floor_ms=0)
    release = anyio.Event()
    with anyio.fail_after(BOUND_S):
        async with anyio.create_task_group() as group:
            record = await create(engine, ttl_ms=10_000)
            engine.start(record, blocked_until(release), group)
            clock.advance(9)  # most of the TTL goes on the run
            release.set()
    assert record.task.status is TaskStatus.COMPLETED

    clock.advance(2)  # past the creation-based deadline: the stale schedule is ignored
    assert await engine.sweep() == 0
    assert (await engine.get(record.task.task_id, "alice")).result == OK_RESULT

    clock.advance(8)  # 10 s after the end
    assert await engine.sweep() == 1
    with pytest.raises(UnknownTask):
        await engine.get(record.task.task_id, "alice")


async def test_one_sweep_takes_every_due_task_not_one_batch() -> None:
    # A burst of tasks that expire together (10,000 in the bench) must go in one sweep: the store
    # hands them out SWEEP_BATCH at a time, and the sweeper used to sleep between batches.
    clock = FakeClock()
    engine = TaskEngine(clock=clock, ttl_floor_ms=0)
    count = 2 * SWEEP_BATCH + 7
    tasks = [await run_to_end(engine, returning(OK_RESULT), ttl_ms=1_000) for _ in range(count)]
    clock.advance(2)
    assert await engine.sweep() == count
    for task in tasks:
        with pytest.raises(UnknownTask):
            await engine.get(task.task_id, "alice")
    assert await engine.sweep() == 0


async def test_unlimited_ttl_is_never_swept() -> None:
    clock = FakeClock()
    engine = TaskEngine(clock=clock)
    task = await run_to_end(engine, returning(OK_RESULT), ttl_ms=None)
    clock.advance(10**9)
    assert await engine.sweep() == 0
    assert (await engine.get(task.task_id, "alice")).status is TaskStatus.COMPLETED


class RecordingStore(InMemoryTaskStore):
    """The in-memory store, logging which of its methods the engine calls."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    async def get(self, task_id: str) -> TaskState | None:
        self.calls.append("get")
        return await super().get(task_id)

    async def save(self, state: TaskState, *, fence: int | None = None) -> TaskState:
        self.calls.append("save")
        return await super().save(state, fence=fence)

    async def delete(self, task_id: str) -> None:
        self.calls.append("delete")
        await super().delete(task_id)

    async def due_for_expiry(self, now: datetime, *, limit: int = 100) -> list[TaskState]:
        self.calls.append("due_for_expiry")
        return await super().due_for_expiry(now, limit=limit)

    async def list_tasks(self, **kwargs: Any) -> tuple[list[TaskState], str | None]:
        self.calls.append("list_tasks")
        return await super().list_tasks(**kwargs)


async def test_sweeping_asks_the_store_only_for_what_is_due() -> None:
    clock = FakeClock()
    store = RecordingStore()
    engine = TaskEngine(clock=clock, store=store, ttl_floor_ms=0)
    for _ in range(50):
        await run_to_end(engine, returning(OK_RESULT), ttl_ms=3_600_000)
    short = await run_to_end(engine, returning(OK_RESULT), ttl_ms=1_000)
    store.calls.clear()
    clock.advance(1)
    assert await engine.sweep() == 1
    assert store.calls == ["due_for_expiry", "delete"]
    assert await store.get(short.task_id) is None
    assert len(store) == 50


async def test_the_sweeper_is_woken_only_for_a_deadline_before_its_next_round() -> None:
    # A create used to wake the sweeper every time (two store reads per task); now only a
    # deadline the sweeper would otherwise miss wakes it, and then at that deadline, not at once.
    store = RecordingStore()
    engine = TaskEngine(store=store, ttl_floor_ms=0)
    async with engine.hosted(max_sleep_s=3_600):
        await anyio.wait_all_tasks_blocked()  # the first round is over: asleep for an hour
        store.calls.clear()
        for _ in range(20):
            await create(engine, ttl_ms=7_200_000)  # due long after the next round
        await anyio.wait_all_tasks_blocked()
        assert "due_for_expiry" not in store.calls
        short = await create(engine, ttl_ms=200)  # due long before the next round
        await anyio.wait_all_tasks_blocked()
        assert "due_for_expiry" not in store.calls  # nothing is due yet: no sweep now
        with anyio.fail_after(10):
            while not short.task.is_terminal:
                await short.changed.wait()
        assert short.task.status is TaskStatus.FAILED
        assert "TTL" in (short.task.status_message or "")
        assert store.calls.count("due_for_expiry") == 1


class NoScanDict(dict[str, TaskState]):
    """A state table that fails the test if anything iterates over it."""

    def _scan(self, *args: object) -> Any:
        raise AssertionError("the store scanned every task")

    __iter__ = values = items = keys = _scan


async def test_in_memory_store_hands_out_due_states_without_scanning_the_live_ones() -> None:
    store = InMemoryTaskStore()
    store._states = NoScanDict()  # pyright: ignore[reportPrivateUsage]
    clock = FakeClock()
    engine = TaskEngine(store=store, clock=clock, ttl_floor_ms=0)
    records = [await create(engine, ttl_ms=ttl) for ttl in (5_000, 1_000, 3_000, None)]
    start = engine.reader.now()
    assert await store.due_for_expiry(start + timedelta(seconds=0.5)) == []
    due = await store.due_for_expiry(start + timedelta(seconds=3.5))
    assert [state.task.ttl_ms for state in due] == [1_000, 3_000]  # in deadline order
    assert records[3].state.expires_at is None


# --- status messages ----------------------------------------------------------------------------


async def test_status_messages_reach_listeners_at_most_once_per_interval() -> None:
    clock = FakeClock()
    engine = TaskEngine(clock=clock, status_interval_s=1.0)
    heard: list[str | None] = []

    async def listener(task: Task) -> None:
        heard.append(task.status_message)

    record = await create(engine)
    record.listeners.append(listener)
    task_id = record.task.task_id
    await engine.set_status_message(task_id, "a")
    await engine.set_status_message(task_id, "b")  # same instant: stored, not sent
    assert (await engine.get(task_id, "alice")).status_message == "b"
    clock.advance(0.5)
    await engine.set_status_message(task_id, "c")
    clock.advance(0.5)
    await engine.set_status_message(task_id, "d")
    await engine.cancel(task_id, "alice", strict=True)  # an end is always sent, whatever the rate
    assert heard == ["a", "d", "cancelled by the client"]
    await engine.set_status_message(task_id, "too late")  # an ended task keeps its message
    assert (await engine.get(task_id, "alice")).status_message == "cancelled by the client"
    await engine.set_status_message("no-such-task", "ignored")


async def test_a_failing_listener_does_not_break_the_task() -> None:
    engine = TaskEngine()

    async def broken(task: Task) -> None:
        raise ConnectionError("peer went away")

    async with anyio.create_task_group() as group:
        record = await create(engine)
        record.listeners.append(broken)
        engine.start(record, returning(OK_RESULT), group)
    assert record.task.status is TaskStatus.COMPLETED


async def test_report_status_inside_work_and_outside() -> None:
    engine = TaskEngine(status_interval_s=0)
    seen: dict[str, Any] = {}

    async def work() -> Mapping[str, Any]:
        run = current_run()
        assert run is not None
        seen["record"] = run[1]
        seen["reported"] = await report_status("compiling 3/7")
        seen["message"] = run[1].task.status_message
        return OK_RESULT

    assert current_run() is None
    assert await report_status("nobody listens") is False
    task = await run_to_end(engine, work)
    assert seen["reported"] is True
    assert seen["message"] == "compiling 3/7"
    assert seen["record"].task.task_id == task.task_id
    assert current_run() is None  # the context does not leak out of the run


# --- shutdown -----------------------------------------------------------------------------------


def forever_noting_its_stop(stopped: list[str]) -> Callable[[], Awaitable[Mapping[str, Any]]]:
    """Work that never ends by itself and notes in ``stopped`` when it is stopped."""

    async def forever() -> Mapping[str, Any]:
        try:
            await anyio.sleep_forever()
        finally:
            stopped.append("stopped")
        raise AssertionError("unreachable")

    return forever


@pytest.mark.usefixtures("run_stop")
async def test_leaving_running_cancels_every_run_and_marks_it_cancelled() -> None:
    engine = TaskEngine()
    stopped: list[str] = []
    forever = forever_noting_its_stop(stopped)

    with anyio.fail_after(BOUND_S):
        async with engine.hosted() as host:
            group = host.runs
            done = await create(engine)
            engine.start(done, returning(OK_RESULT), group)
            runs = [await create(engine) for _ in range(3)]
            for record in runs:
                engine.start(record, forever, group)
            await anyio.wait_all_tasks_blocked()
    assert stopped == ["stopped"] * 3
    for record in runs:
        assert record.task.status is TaskStatus.CANCELLED
        assert record.task.status_message == "the server stopped this task"
    assert done.task.status is TaskStatus.COMPLETED  # an ended task is left alone


@pytest.mark.usefixtures("run_stop")
async def test_an_undecided_call_whose_caller_goes_is_stopped_and_a_task_it_became_is_cancellable() -> None:
    engine = TaskEngine()
    stopped: list[str] = []
    forever = forever_noting_its_stop(stopped)

    async def make(status_message: str | None) -> TaskRecord:
        return await create(engine)

    with anyio.fail_after(BOUND_S):
        async with anyio.create_task_group() as group:
            with anyio.CancelScope() as caller:  # the request goes while the call is undecided
                group.start_soon(_cancel_when_blocked, caller)
                await engine.runs.begin(forever, group, ticket=GraceTicket.fixed(60), create=make)
            await anyio.wait_all_tasks_blocked()
            assert stopped == ["stopped"]
            task = await engine.runs.begin(forever, group, ticket=GraceTicket.fixed(0), create=make)
            assert isinstance(task, Task)
            assert task.status is TaskStatus.WORKING
            answer = await engine.cancel(task.task_id, "alice", strict=True)
            assert answer.status is TaskStatus.CANCELLED
    assert stopped == ["stopped", "stopped"]


async def test_with_no_grace_the_task_exists_before_its_work_starts() -> None:
    """No grace (off, or skipped for a tool known to be long): the task is created first, so a
    create the store refuses (the owner's limit) never runs the tool at all; with a grace the
    work runs while the call is undecided."""
    engine = TaskEngine()
    ran: list[str] = []

    async def noting() -> Any:
        ran.append("ran")
        return OK_RESULT

    async def refused(status_message: str | None) -> TaskRecord:
        await anyio.wait_all_tasks_blocked()  # a store round trip: a work spawned first runs here
        raise PeerProtocolError("too many active tasks", jsonrpc_code=INVALID_REQUEST)

    made: list[TaskRecord] = []

    async def make(status_message: str | None) -> TaskRecord:
        assert ran == [], "the work started before its task existed"
        made.append(await create(engine))
        return made[0]

    with anyio.fail_after(BOUND_S):
        async with anyio.create_task_group() as group:
            with pytest.raises(PeerProtocolError):
                await engine.runs.begin(noting, group, ticket=GraceTicket.fixed(0), create=refused)
            await anyio.wait_all_tasks_blocked()
            assert ran == []
            task = await engine.runs.begin(noting, group, ticket=GraceTicket.fixed(0), create=make)
            assert isinstance(task, Task)
            assert task.status is TaskStatus.WORKING  # a task begins so, even a quick one
            record = made[0]
            while not record.task.is_terminal:
                await record.changed.wait()
    assert ran == ["ran"]
    assert record.task.status is TaskStatus.COMPLETED


async def _cancel_when_blocked(scope: anyio.CancelScope) -> None:
    await anyio.wait_all_tasks_blocked()
    scope.cancel()


# --- poll interval hint -------------------------------------------------------------------------


@given(
    minimum=st.integers(min_value=0, max_value=10_000),
    spread=st.integers(min_value=0, max_value=100_000),
    ratio=st.floats(min_value=0, max_value=10),
    ages=st.lists(st.floats(min_value=0, max_value=1e9), min_size=2, max_size=5),
)
def test_poll_hint_is_clamped_and_never_shrinks_as_a_task_ages(
    minimum: int, spread: int, ratio: float, ages: list[float]
) -> None:
    policy = PollPolicy(minimum_ms=minimum, maximum_ms=minimum + spread, ratio=ratio)
    hints = [policy.hint_ms(age) for age in sorted(ages)]
    assert all(minimum <= hint <= minimum + spread for hint in hints)
    assert hints == sorted(hints)


def test_poll_hint_defaults_are_short_while_young_and_grow_after() -> None:
    policy = PollPolicy()
    assert [policy.hint_ms(age) for age in (0, 100, 200)] == [10, 10, 10]
    assert policy.hint_ms(1_270) == 63
    assert policy.hint_ms(10_000) == 500
    assert policy.hint_ms(10**9) == 5_000


def test_the_proportional_schedule_is_the_earlier_default() -> None:
    policy = PollPolicy.proportional()
    assert policy.hint_ms(0) == 100
    assert policy.hint_ms(10_000) == 1_000
    assert policy.hint_ms(10**9) == 5_000


def test_task_ids_never_start_with_a_dash() -> None:
    # A leading "-" (1 id in 64 from token_urlsafe) made `mcp-tasks-compat tasks show ID` read the
    # id as an option; 2,000 ids would hold about 31 such without the rule.
    ids = [new_task_id() for _ in range(2_000)]
    assert not [task_id for task_id in ids if task_id.startswith("-")]
    assert len(set(ids)) == len(ids)
