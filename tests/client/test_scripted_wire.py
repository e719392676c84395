"""The SDK-free client logic against a scripted wire: clamping, status de-duplication, odd answers."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timedelta, timezone
from typing import Any, Literal

import anyio
import pytest

from mcp_tasks_compat import PeerProtocolError, TaskCancelledError, TaskFailedError
from mcp_tasks_compat._client import (
    MAX_POLL_SECONDS,
    MIN_POLL_SECONDS,
    RemoteError,
    clamp_poll_seconds,
    follow,
)
from mcp_tasks_compat._client.follow_2025 import Follower2025
from mcp_tasks_compat._client.follow_2026 import Follower2026
from mcp_tasks_compat._client.following import follower_for
from mcp_tasks_compat._client.poller import Expiry, Reporter
from mcp_tasks_compat.core._model import JsonRpcError, Task, TaskStatus

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def task(status: TaskStatus = TaskStatus.WORKING, *, at: int = 0, **changes: Any) -> Task:
    base = Task(
        task_id="t1",
        status=status,
        created_at=T0,
        last_updated_at=T0 + timedelta(seconds=at),
        ttl_ms=None,
        poll_interval_ms=100,
    )
    return base.evolve(**changes) if changes else base


@pytest.mark.parametrize(
    ("hint_ms", "expected"),
    [(0, 0.1), (50, 0.1), (250, 0.25), (10**12, MAX_POLL_SECONDS), (None, 1.0)],
)
def test_poll_hints_of_a_task_of_unknown_age_are_clamped_to_100_ms(
    hint_ms: int | None, expected: float
) -> None:
    assert clamp_poll_seconds(hint_ms) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("hint_ms", "age_s", "expected"),
    [
        (0, 0.0, MIN_POLL_SECONDS),  # a brand-new task: the absolute floor
        (10, 0.0, 0.01),  # a short hint for a young task is honoured
        (0, 0.3, 0.03),  # the floor is a tenth of the age ...
        (0, 60.0, 0.1),  # ... up to 100 ms
        (20, 60.0, 0.1),
        (500, 0.01, 0.5),  # a long hint is honoured at any age
    ],
)
def test_the_poll_floor_grows_with_the_tasks_age(hint_ms: int, age_s: float, expected: float) -> None:
    assert clamp_poll_seconds(hint_ms, age_s=age_s) == pytest.approx(expected)


def test_a_zero_hint_cannot_make_a_busy_loop() -> None:
    # The schedule a server hinting 0 gets: the polls of a task's first 10 s, counted.
    age, polls = 0.0, 0
    while age < 10.0:
        age += clamp_poll_seconds(0, age_s=age)
        polls += 1
    assert polls <= 45 + 10 * 9  # about 40 in the first second, then ten a second
    assert polls >= 10 * 9  # and the mature floor is 100 ms, not more


@pytest.mark.anyio
async def test_the_reporter_passes_each_distinct_status_once_and_never_goes_backwards() -> None:
    seen: list[tuple[str, str | None]] = []
    reporter = Reporter(lambda t: seen.append((t.status.value, t.status_message)))
    await reporter.report(task())
    await reporter.report(task(at=1))  # same (status, message): not repeated
    await reporter.report(task(at=3, status_message="two"))
    await reporter.report(task(at=2, status_message="one"))  # older than what was seen: dropped
    await reporter.report(task(TaskStatus.COMPLETED, at=4, status_message="two"))
    await reporter.report(task(at=5, status_message="late"))  # after terminal: dropped
    assert seen == [("working", None), ("working", "two"), ("completed", "two")]


@pytest.mark.anyio
async def test_an_async_on_status_is_awaited() -> None:
    seen: list[str] = []

    async def on_status(t: Task) -> None:
        await anyio.lowlevel.checkpoint()
        seen.append(t.status.value)

    await Reporter(on_status).report(task())
    assert seen == ["working"]


class ScriptedWire:
    """A 2026-07-28 wire whose tasks/get answers come from a list; records the tool each result is for."""

    def __init__(self, answers: list[Task]) -> None:
        self.answers = answers
        self.cancelled: list[str] = []
        self.results_for: list[str | None] = []

    @property
    def dialect(self) -> Literal["2026-07-28"]:
        return "2026-07-28"

    async def get(self, task_id: str, *, read_timeout: float | None = None) -> Task:
        if not self.answers:
            raise RemoteError(-32602, "Task not found")
        return self.answers.pop(0)

    async def cancel(self, task_id: str) -> Task | None:
        self.cancelled.append(task_id)
        return None

    async def to_result(self, payload: Mapping[str, Any], *, tool: str | None) -> dict[str, Any]:
        self.results_for.append(tool)
        return dict(payload)

    push: None = None  # polled only

    async def answer_input(self, key: str, request: Mapping[str, Any]) -> dict[str, Any]:
        raise RemoteError(-32601, "no input here")

    async def update(self, task_id: str, responses: Mapping[str, Mapping[str, Any]]) -> None:
        raise RemoteError(-32601, "no input here")


def test_each_dialect_s_wire_is_followed_by_that_dialect_s_follower() -> None:
    reporter, expiry = Reporter(None), Expiry(task(), resumed=False)
    modern = follower_for(ScriptedWire([]), task(), reporter, expiry, resumed=False, tool=None)
    handshake_era = follower_for(ScriptedWire2025([], {}), task(), reporter, expiry, resumed=False, tool=None)
    assert (type(modern), type(handshake_era)) == (Follower2026, Follower2025)


@pytest.mark.anyio
async def test_a_born_terminal_task_is_read_once_for_its_result() -> None:
    done = task(TaskStatus.COMPLETED, at=1, result={"content": []})
    wire = ScriptedWire([done])
    with anyio.fail_after(1):
        assert await follow(
            wire, task(TaskStatus.COMPLETED), on_status=None, overall_timeout=None, cancel_grace=1
        ) == {"content": []}
    assert wire.answers == []


@pytest.mark.anyio
async def test_a_failed_task_without_an_error_object_still_fails_with_its_message() -> None:
    wire = ScriptedWire([task(TaskStatus.FAILED, at=1, status_message="disk full")])
    with anyio.fail_after(2), pytest.raises(TaskFailedError) as caught:
        await follow(wire, task(), on_status=None, overall_timeout=None, cancel_grace=1)
    assert (caught.value.error_code, caught.value.error_message) == (-32603, "disk full")
    assert wire.cancelled == []  # it ended: nothing to cancel


@pytest.mark.anyio
async def test_a_failed_task_carries_its_json_rpc_error() -> None:
    error = JsonRpcError(code=-32000, message="quota", data={"limit": 3})
    wire = ScriptedWire([task(TaskStatus.FAILED, at=1, error=error)])
    with anyio.fail_after(2), pytest.raises(TaskFailedError) as caught:
        await follow(wire, task(), on_status=None, overall_timeout=None, cancel_grace=1)
    assert (caught.value.error_code, caught.value.error_message, caught.value.error_data) == (
        -32000,
        "quota",
        {"limit": 3},
    )


@pytest.mark.anyio
async def test_a_completed_answer_without_a_result_is_a_peer_protocol_error() -> None:
    wire = ScriptedWire([task(TaskStatus.COMPLETED, at=1), task(TaskStatus.COMPLETED, at=2)])
    with anyio.fail_after(2), pytest.raises(PeerProtocolError, match="carried no result"):
        await follow(wire, task(), on_status=None, overall_timeout=None, cancel_grace=1)
    assert wire.cancelled == []


@pytest.mark.anyio
async def test_an_on_status_error_ends_the_call_and_cancels_the_task() -> None:
    def on_status(t: Task) -> None:
        if t.status_message == "bad":
            raise RuntimeError("observer broke")

    wire = ScriptedWire([task(at=1, status_message="bad")])
    with anyio.fail_after(2), pytest.raises(RuntimeError, match="observer broke"):
        await follow(wire, task(), on_status=on_status, overall_timeout=None, cancel_grace=1)
    assert wire.cancelled == ["t1"]


class ScriptedWire2025:
    """A 2025-11-25 wire whose ``tasks/result`` answers ``payload`` at once; counts ``tasks/get``."""

    def __init__(self, answers: list[Task], payload: dict[str, Any]) -> None:
        self.answers = answers
        self.payload = payload
        self.gets = 0
        self.cancelled: list[str] = []
        self.results_for: list[str | None] = []

    @property
    def dialect(self) -> Literal["2025-11-25"]:
        return "2025-11-25"

    async def get(self, task_id: str, *, read_timeout: float | None = None) -> Task:
        self.gets += 1
        if not self.answers:
            raise RemoteError(-32602, "Task not found")
        return self.answers.pop(0)

    async def cancel(self, task_id: str) -> Task | None:
        self.cancelled.append(task_id)
        return None

    async def to_result(self, payload: Mapping[str, Any], *, tool: str | None) -> dict[str, Any]:
        self.results_for.append(tool)
        return dict(payload)

    async def result_payload(self, task_id: str) -> dict[str, Any]:
        return dict(self.payload)

    def listen(self, task_id: str, listener: Callable[[Task], None]) -> Callable[[], None]:
        return lambda: None


ENDINGS = [(False, TaskStatus.COMPLETED), (True, TaskStatus.FAILED)]


@pytest.mark.anyio
@pytest.mark.parametrize(("is_error", "status"), ENDINGS)
async def test_a_2025_tool_result_ends_the_call_without_another_tasks_get_when_nobody_listens(
    is_error: bool, status: TaskStatus
) -> None:
    """The result says how the task ended; a tasks/get after it would cost one more round trip."""
    payload = {"content": [{"type": "text", "text": "done"}], "isError": is_error}
    wire = ScriptedWire2025([task(status, at=1)], payload)
    with anyio.fail_after(2):
        result = await follow(wire, task(), on_status=None, overall_timeout=None, cancel_grace=1)
    assert result == payload
    assert wire.gets == 0


@pytest.mark.anyio
@pytest.mark.parametrize(("is_error", "status"), ENDINGS)
async def test_a_2025_tool_result_is_followed_by_one_tasks_get_for_a_listener(
    is_error: bool, status: TaskStatus
) -> None:
    """The status the task ended with carries the tool's last message, sent just before it returned,
    which no poll saw before the result (no pushed status said it either): one tasks/get learns it."""
    payload = {"content": [{"type": "text", "text": "done"}], "isError": is_error}
    wire = ScriptedWire2025([task(status, at=2, status_message="step 5/5")], payload)
    seen: list[Task] = []
    with anyio.fail_after(2):
        result = await follow(
            wire, task(status_message="step 4/5"), on_status=seen.append, overall_timeout=None, cancel_grace=1
        )
    assert result == payload
    assert wire.gets == 1
    assert [(t.status, t.status_message) for t in seen] == [
        (TaskStatus.WORKING, "step 4/5"),
        (status, "step 5/5"),
    ]


@pytest.mark.anyio
async def test_a_2025_tool_result_stands_when_the_tasks_get_after_it_fails() -> None:
    """A server that forgets a task once its result was read: the call still returns the result."""
    payload = {"content": [{"type": "text", "text": "done"}], "isError": False}
    wire = ScriptedWire2025([], payload)  # tasks/get answers -32602
    seen: list[Task] = []
    with anyio.fail_after(2):
        result = await follow(
            wire, task(status_message="step 4/5"), on_status=seen.append, overall_timeout=None, cancel_grace=1
        )
    assert result == payload
    assert wire.gets == 1
    assert (seen[-1].status, seen[-1].status_message) == (TaskStatus.COMPLETED, "step 4/5")


@pytest.mark.anyio
async def test_a_2025_answer_that_is_no_tool_result_is_settled_by_one_tasks_get() -> None:
    wire = ScriptedWire2025([task(TaskStatus.CANCELLED, at=1)], {"_meta": {}})
    with anyio.fail_after(2), pytest.raises(TaskCancelledError):
        await follow(wire, task(), on_status=None, overall_timeout=None, cancel_grace=1)
    assert wire.gets == 1


class PushingWire2025(ScriptedWire2025):
    """``notifications/tasks/status`` says completed before ``tasks/result`` answers (as our server does)."""

    def __init__(self, payload: dict[str, Any]) -> None:
        super().__init__([], payload)
        self.listeners: list[Callable[[Task], None]] = []
        self.heard = anyio.Event()

    def listen(self, task_id: str, listener: Callable[[Task], None]) -> Callable[[], None]:
        self.listeners.append(listener)
        return lambda: None

    async def result_payload(self, task_id: str) -> dict[str, Any]:
        for listener in self.listeners:
            listener(task(TaskStatus.COMPLETED, at=1))
        await self.heard.wait()  # the poll loop has passed the pushed status on
        return dict(self.payload)


@pytest.mark.anyio
async def test_a_pushed_2025_completion_needs_no_tasks_get_while_tasks_result_waits() -> None:
    payload = {"content": [{"type": "text", "text": "done"}], "isError": False}
    wire = PushingWire2025(payload)

    def on_status(t: Task) -> None:
        if t.status is TaskStatus.COMPLETED:
            wire.heard.set()

    with anyio.fail_after(2):
        assert (
            await follow(wire, task(), on_status=on_status, overall_timeout=None, cancel_grace=1) == payload
        )
    assert wire.gets == 0
