"""Fenced runs (issue 33): a run whose claim a newer one replaced never writes, an outcome waits out
any outage while its claim is its own, and leases are judged on the store's clock.

Two engines on one real store (a SQLite file; a real redis-server) stand for two replicas. A
"paused" replica is an engine whose background (lease renewals, notifier, sweeper) does not run
while the other serves, as a process stopped with SIGSTOP; ``tests/chaos`` does the same with real
processes and signals.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread
import pytest
from tests.engine.shared_stores import SHARED_KINDS, StoreMaker, shared_store_maker
from tests.redis_server import redis_server

from mcp_tasks_compat._engine import TaskEngine, Work
from mcp_tasks_compat._engine.stores import TaskStore
from mcp_tasks_compat._engine.stores.redis import RedisTaskStore
from mcp_tasks_compat.core._model import TaskStatus
from mcp_tasks_compat.dialects import DIALECT_2026_07_28

pytestmark = pytest.mark.anyio

LEASE_S = 0.6
BOUND_S = 20.0
"""A bound, not a wait: every wait below ends on an event."""


def _result(text: str) -> Mapping[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": False}


@pytest.fixture(params=SHARED_KINDS)
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> StoreMaker:
    """A new store object on one shared store per call: one per replica."""
    return shared_store_maker(request, tmp_path, prefix="fencing", busy_timeout=0.05)


class Reruns:
    """The tool runner of the replica that takes a lost run over: each re-run waits for ``release``."""

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.release = anyio.Event()
        self.count = 0

    def __call__(self, tool_name: str, arguments: Mapping[str, Any], lifespan: Any = None) -> Work:
        async def work() -> Mapping[str, Any]:
            self.count += 1
            self.started.set()
            await self.release.wait()
            return _result("the re-run's result")

        return work


def _replica(make_store: StoreMaker, *, clock: Callable[[], float] = time.time) -> TaskEngine:
    engine = TaskEngine(store=make_store(), lease_s=LEASE_S, clock=clock)
    engine.reruns["build"] = 1
    return engine


async def _created(engine: TaskEngine) -> Any:
    await engine.open()
    return await engine.create(
        dialect=DIALECT_2026_07_28, owner=None, tool_name="build", ttl_ms=None, arguments={"target": "x"}
    )


@asynccontextmanager
async def _serving(engine: TaskEngine, reruns: Reruns | None = None) -> AsyncGenerator[anyio.abc.TaskGroup]:
    async with engine.hosted(tools=reruns) as host:
        yield host.runs
    await engine.store.close()


async def test_a_run_whose_claim_was_taken_never_writes_its_outcome(
    make_store: StoreMaker, caplog: pytest.LogCaptureFixture
) -> None:
    """Replica A paused past its lease: B runs the task again; A's run then ends (its tool did not
    notice the pause) and its outcome is refused by the store: the task's result is B's."""
    paused, other = _replica(make_store), _replica(make_store)
    record = await _created(paused)
    finish_first = anyio.Event()
    reruns = Reruns()

    async def first_run() -> Mapping[str, Any]:
        await finish_first.wait()
        return _result("the paused run's stale result")

    with anyio.fail_after(BOUND_S), caplog.at_level(logging.WARNING, logger="mcp_tasks_compat.engine"):
        async with _serving(other, reruns):
            async with anyio.create_task_group() as paused_runs:  # left once A's run is over
                paused.start(record, first_run, paused_runs)
                await reruns.started.wait()  # A's lease ran out: B claimed the task and runs it
                finish_first.set()  # A wakes and its run ends: its outcome must not land
            stored = await other.store.get(record.task.task_id)
            assert stored is not None
            assert not stored.is_terminal, "the paused run's outcome was written"
            assert stored.claim == 2
            reruns.release.set()
            task = await other.reader.wait_terminal(record.task.task_id, None)
    await paused.store.close()
    assert task.status is TaskStatus.COMPLETED
    assert task.result is not None
    assert task.result["content"] == _result("the re-run's result")["content"]
    assert reruns.count == 1
    assert "lost its claim" in caplog.text


async def test_a_paused_replica_stops_its_run_at_its_first_renewal_after_waking(
    make_store: StoreMaker,
) -> None:
    """A paused replica wakes (its background runs again) while its tool still runs: the first
    lease renewal is refused by the newer claim and the tool is cancelled, within one renewal."""
    paused, other = _replica(make_store), _replica(make_store)
    record = await _created(paused)
    cancelled = anyio.Event()
    reruns = Reruns()

    async def first_run() -> Mapping[str, Any]:
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        raise AssertionError("unreachable")  # pragma: no cover

    with anyio.fail_after(BOUND_S):
        async with _serving(other, reruns):
            async with anyio.create_task_group() as paused_runs:
                paused.start(record, first_run, paused_runs)
                await reruns.started.wait()
                async with anyio.create_task_group() as awake:
                    awake.start_soon(paused.replicas.renew_leases)  # A wakes up
                    with anyio.fail_after(LEASE_S):  # one renewal is a third of it
                        await cancelled.wait()
                    awake.cancel_scope.cancel()
            reruns.release.set()
            task = await other.reader.wait_terminal(record.task.task_id, None)
    await paused.store.close()
    assert task.status is TaskStatus.COMPLETED
    assert task.result is not None
    assert task.result["content"] == _result("the re-run's result")["content"]


async def test_an_outcome_that_waited_out_a_store_outage_past_the_lease_still_lands(tmp_path: Path) -> None:
    """Two replicas on a redis-server of the test's own (its data on disk), stopped for five
    leases while A's run ends: A's outcome lands once Redis is back, and B, which saw the store
    fail, neither re-ran nor failed the task meanwhile (nobody could renew a lease)."""
    with redis_server(data_dir=str(tmp_path)) as redis:

        def make() -> TaskStore:
            return RedisTaskStore(redis.url, prefix="outage:")

        runner, other = _replica(make), _replica(make)
        reruns = Reruns()
        ended = anyio.Event()

        async def work() -> Mapping[str, Any]:
            await ended.wait()
            return _result("the run's own result")

        with anyio.fail_after(BOUND_S):
            async with _serving(runner) as runs, _serving(other, reruns):
                record = await _created(runner)
                runner.start(record, work, runs)
                await anyio.to_thread.run_sync(redis.stop)
                ended.set()
                await anyio.sleep(5 * LEASE_S)  # the fault: how long the store is away
                await anyio.to_thread.run_sync(redis.start)
                task = await runner.reader.wait_terminal(record.task.task_id, None)
                stored = await other.store.get(record.task.task_id)
    assert task.status is TaskStatus.COMPLETED, task
    assert task.result is not None
    assert task.result["content"] == _result("the run's own result")["content"]
    assert stored is not None
    assert stored.task == task  # as B reads it too
    assert reruns.count == 0


@pytest.mark.parametrize("runner_skew_s", [30.0, -30.0], ids=["runner-ahead", "runner-behind"])
async def test_clock_skew_between_replicas_neither_reruns_a_live_task_nor_keeps_a_dead_one(
    make_store: StoreMaker, runner_skew_s: float
) -> None:
    """The runner's clock 30 s ahead of (or behind) the store's and the other replica's 30 s the
    other way: leases are judged on the store's clock, so the live run is never taken over while it
    renews, and once its replica is gone the other takes it within a lease and a sweep."""
    runner = _replica(make_store, clock=lambda: time.time() + runner_skew_s)
    other = _replica(make_store, clock=lambda: time.time() - runner_skew_s)
    reruns = Reruns()
    renewals_seen = 0

    async def forever() -> Mapping[str, Any]:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")  # pragma: no cover

    with anyio.fail_after(BOUND_S):
        async with _serving(other, reruns):
            async with _serving(runner, Reruns()) as runs:  # a re-run tool: left working at its stop
                record = await _created(runner)
                runner.start(record, forever, runs)
                first = record.state.version
                while renewals_seen < 12:  # four leases of renewals, with the other sweeping
                    state = await other.store.get(record.task.task_id)
                    assert state is not None
                    renewals_seen = state.version - first
                    assert state.claim == record.state.claim == 1, "a live run was taken over"
                    await anyio.sleep(LEASE_S / 6)  # polling the store for a change
                assert reruns.count == 0
            # The runner's replica is gone (its server stopped: a re-run tool's run is left working)
            await reruns.started.wait()  # the other took the dead run over
            reruns.release.set()
            task = await other.reader.wait_terminal(record.task.task_id, None)
    assert task.status is TaskStatus.COMPLETED
    assert reruns.count == 1
