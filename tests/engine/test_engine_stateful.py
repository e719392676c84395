"""The task engine against a simple model: create, finish, cancel, let time pass, read.

Each Hypothesis example runs one engine on an event loop in a helper thread (an anyio blocking
portal); every step is applied to the engine and to a plain-Python model of statuses and
retention deadlines, and the two must agree after every step. Time only moves when a rule moves
the injected clock, and every step waits until all runs are blocked again (no sleeps).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, precondition, rule

from mcp_tasks_compat._engine import EXPIRED_GRACE_MS, TaskEngine, TaskRecord, ToolCallFailure, UnknownTask
from mcp_tasks_compat._server import fails_task_2025, fails_task_2026
from mcp_tasks_compat.core._model import JsonRpcError, TaskStatus
from mcp_tasks_compat.dialects import DIALECT_2025_11_25, DIALECT_2026_07_28, Dialect
from mcp_tasks_compat.errors import INVALID_PARAMS, PeerProtocolError

OWNER = "alice"
OUTCOMES = ("returns", "returns isError", "raises", "ToolCallFailure")


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Run:
    """The engine side of one task: its record and the switch that lets its work end."""

    record: TaskRecord
    release: anyio.Event
    outcome: list[str] = field(default_factory=lambda: ["returns"])


async def _work(run: Run) -> Mapping[str, Any]:
    await run.release.wait()
    outcome = run.outcome[0]
    if outcome == "returns":
        return {"content": [], "isError": False}
    if outcome == "returns isError":
        return {"content": [], "isError": True}
    if outcome == "raises":
        raise RuntimeError("work raised")
    raise ToolCallFailure(JsonRpcError(-32000, "tool failure"))


@dataclass
class Expected:
    """The model of one task."""

    status: str
    dialect: Dialect
    ttl_ms: int | None
    deadline: float  # model clock; inf = unlimited
    running: bool = True  # the work has not ended or been stopped

    def retain_from(self, now: float) -> None:
        """Ending restarts retention: the task is kept for its TTL after it ended."""
        if self.ttl_ms is not None:
            self.deadline = now + self.ttl_ms / 1000


def _expected_end(outcome: str, dialect: Dialect) -> str:
    if outcome == "returns":
        return "completed"
    if outcome == "returns isError":
        return "failed" if dialect == DIALECT_2025_11_25 else "completed"
    return "failed"


class EngineMachine(RuleBasedStateMachine):
    tasks = Bundle("tasks")

    def __init__(self) -> None:
        super().__init__()
        self._portal_cm = start_blocking_portal("asyncio")
        self.portal: BlockingPortal = self._portal_cm.__enter__()
        self.clock = FakeClock()
        self.engine: TaskEngine = self.portal.call(self._make_engine)
        self._host, self.group = self.portal.start_task(self._host_runs)
        self.runs: dict[str, Run] = {}
        self.model: dict[str, Expected] = {}

    async def _make_engine(self) -> TaskEngine:
        engine = TaskEngine(clock=self.clock, ttl_floor_ms=0)
        # the rules the dialects' services give a server's engine (the engine judges no result)
        engine.runs.result_rules.update(
            {DIALECT_2025_11_25: fails_task_2025, DIALECT_2026_07_28: fails_task_2026}
        )
        return engine

    async def _host_runs(self, *, task_status: anyio.abc.TaskStatus[anyio.abc.TaskGroup]) -> None:
        async with anyio.create_task_group() as group:
            task_status.started(group)
            await anyio.sleep_forever()

    def teardown(self) -> None:
        self._host.cancel()
        self._portal_cm.__exit__(None, None, None)

    def settle(self) -> None:
        async def wait() -> None:
            with anyio.fail_after(5):
                await anyio.wait_all_tasks_blocked()

        self.portal.call(wait)

    # --- rules --------------------------------------------------------------------------------

    @rule(
        target=tasks,
        dialect=st.sampled_from([DIALECT_2025_11_25, DIALECT_2026_07_28]),
        ttl_ms=st.sampled_from([None, 1_000, 120_000]),
    )
    def create(self, dialect: Dialect, ttl_ms: int | None) -> str:
        async def create_and_start() -> Run:
            record = await self.engine.create(dialect=dialect, owner=OWNER, tool_name="t", ttl_ms=ttl_ms)
            run = Run(record=record, release=anyio.Event())
            self.engine.start(record, lambda: _work(run), self.group)
            return run

        run = self.portal.call(create_and_start)
        task_id = run.record.task.task_id
        self.runs[task_id] = run
        deadline = math.inf if ttl_ms is None else self.clock.now + ttl_ms / 1000
        self.model[task_id] = Expected("working", dialect, ttl_ms, deadline)
        self.settle()
        note(f"create {task_id[:6]} {dialect} ttl={ttl_ms}")
        return task_id

    @precondition(lambda self: any(e.running for e in self.model.values()))
    @rule(data=st.data(), outcome=st.sampled_from(OUTCOMES))
    def work_ends(self, data: st.DataObject, outcome: str) -> None:
        # Creation order (dicts keep it), not the random ids' order, so a replay draws the same task.
        task_id = data.draw(st.sampled_from([t for t, e in self.model.items() if e.running]))
        note(f"work of {task_id[:6]} ends: {outcome}")
        run = self.runs[task_id]
        run.outcome[0] = outcome
        self.portal.call(run.release.set)
        self.settle()
        expected = self.model[task_id]
        expected.running = False
        if expected.status == "working":
            expected.status = _expected_end(outcome, expected.dialect)
            expected.retain_from(self.clock.now)

    @rule(task_id=tasks, strict=st.booleans())
    def cancel(self, task_id: str, strict: bool) -> None:
        expected = self.model.get(task_id)
        note(f"cancel {task_id[:6]} strict={strict}")

        async def cancel() -> str:
            try:
                task = await self.engine.cancel(task_id, OWNER, strict=strict)
            except PeerProtocolError as error:
                return f"refused {error.jsonrpc_code}"
            except UnknownTask:
                return f"refused {INVALID_PARAMS}"  # as both services answer it
            return task.status.value

        answer = self.portal.call(cancel)
        self.settle()
        refused = f"refused {INVALID_PARAMS}"
        if expected is None:
            assert answer == refused  # gone: unknown id
        elif expected.status in ("completed", "failed", "cancelled"):
            assert answer == (refused if strict else expected.status)
        else:
            assert answer == "cancelled"
            expected.status = "cancelled"
            expected.running = False
            expected.retain_from(self.clock.now)

    @rule(seconds=st.sampled_from([0.5, 1.0, 60.0, 120.0]))
    def time_passes(self, seconds: float) -> None:
        self.clock.now += seconds
        note(f"+{seconds} s, sweep")
        self.portal.call(self.engine.sweep)
        self.settle()
        now = self.clock.now
        for task_id, expected in list(self.model.items()):
            if expected.deadline > now:
                continue
            if expected.status in ("completed", "failed", "cancelled"):
                del self.model[task_id]
            else:
                assert expected.ttl_ms is not None
                expected.status = "failed"
                expected.running = False
                expected.deadline = now + min(expected.ttl_ms, EXPIRED_GRACE_MS) / 1000

    # --- invariants ---------------------------------------------------------------------------

    @invariant()
    def engine_agrees_with_model(self) -> None:
        async def statuses() -> dict[str, str | None]:
            seen: dict[str, str | None] = {}
            for task_id in self.runs:
                try:
                    seen[task_id] = (await self.engine.get(task_id, OWNER)).status.value
                except UnknownTask:
                    seen[task_id] = None
            return seen

        actual = self.portal.call(statuses)
        expected = {task_id: (e.status if (e := self.model.get(task_id)) else None) for task_id in self.runs}
        assert actual == expected

    @invariant()
    def ended_tasks_carry_what_ended_them(self) -> None:
        for task_id, expected in self.model.items():
            task = self.runs[task_id].record.task
            if task.status is TaskStatus.FAILED:
                assert task.error is not None or task.result is not None
            if task.status is TaskStatus.COMPLETED:
                assert task.result is not None
            if task.status is TaskStatus.CANCELLED:
                assert task.result is None
            assert task.status.value == expected.status


TestEngineMachine = EngineMachine.TestCase
