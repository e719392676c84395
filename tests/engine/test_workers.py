"""Task runs on workers (issue 34), in one process: a server's engine queues, workers' engines run.

Engines on one real store (a SQLite file; a real redis-server) stand for the server and the
workers, as in tests/engine/test_fencing.py; tests/deploy/test_workers.py does the same with real
processes. Every wait ends on an event; ``BOUND_S`` is a safety net, not a wait.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from tests.engine.shared_stores import SHARED_KINDS, StoreMaker, shared_store_maker

from mcp_tasks_compat._engine import TaskEngine, TaskPolicy, Work
from mcp_tasks_compat._engine.queueing import QUEUED
from mcp_tasks_compat._engine.stores import InMemoryTaskStore, TaskState
from mcp_tasks_compat._engine.workers import WorkerRuns
from mcp_tasks_compat.core._model import TaskStatus
from mcp_tasks_compat.dialects import DIALECT_2025_11_25, DIALECT_2026_07_28
from mcp_tasks_compat.errors import PeerProtocolError

pytestmark = pytest.mark.anyio

LEASE_S = 0.6
BOUND_S = 20.0
"""A bound, not a wait: every wait below ends on an event."""


def _result(text: str) -> Mapping[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": False}


@pytest.fixture(params=SHARED_KINDS)
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> StoreMaker:
    """A new store object on one shared store per call: one per process (server, workers)."""
    return shared_store_maker(request, tmp_path, prefix="workers")


class Tools:
    """The tools the workers run: each run waits for ``release`` (or is cancelled) and says so."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.cancelled: list[str] = []
        self.running = 0
        self.most_at_once = 0
        self.changed = anyio.Event()
        self.release = anyio.Event()

    def _tell(self) -> None:
        self.changed.set()
        self.changed = anyio.Event()

    async def until(self, check: Callable[[], bool]) -> None:
        while not check():
            await self.changed.wait()

    def __call__(self, tool_name: str, arguments: Mapping[str, Any], lifespan: Any = None) -> Work:
        label = str(arguments.get("label", tool_name))

        async def work() -> Mapping[str, Any]:
            self.started.append(label)
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
            self._tell()
            try:
                await self.release.wait()
            except anyio.get_cancelled_exc_class():
                self.cancelled.append(label)
                self._tell()
                raise
            finally:
                self.running -= 1
            return _result(f"{label} done")

        return work


def _server(make_store: StoreMaker, *, max_queued: int | None = None) -> TaskEngine:
    engine = TaskEngine(store=make_store(), lease_s=LEASE_S, max_queued=max_queued)
    engine.reruns["rerun_tool"] = 2
    return engine


async def _queue(engine: TaskEngine, label: str, tool: str = "build") -> TaskState:
    await engine.open()
    record = await engine.create(
        dialect=DIALECT_2026_07_28,
        owner=None,
        tool_name=tool,
        ttl_ms=None,
        arguments={"label": label},
        run_on="workers",
    )
    return record.state


def _runs(engine: TaskEngine, tools: Tools, concurrency: int) -> WorkerRuns:
    return WorkerRuns(
        engine.reader,
        engine.writer,
        engine.replicas,
        start=engine.start,
        work_for=tools,
        concurrency=concurrency,
    )


@asynccontextmanager
async def _worker(
    make_store: StoreMaker, tools: Tools, *, concurrency: int = 2, grace_s: float = 0.0
) -> AsyncGenerator[WorkerRuns]:
    """A worker's engine taking from the shared store until the block ends (then a graceful stop)."""
    engine = TaskEngine(store=make_store(), lease_s=LEASE_S)
    engine.reruns["rerun_tool"] = 2
    runs = _runs(engine, tools, concurrency)
    stopping = anyio.Event()
    async with engine.hosted(tools=tools), anyio.create_task_group() as group:
        group.start_soon(lambda: runs.serve(stopping, grace_s=grace_s))
        try:
            yield runs
        finally:
            stopping.set()
    await engine.store.close()


async def _until_stored(engine: TaskEngine, task_id: str, check: Callable[[TaskState], bool]) -> TaskState:
    """The stored state once ``check`` holds (re-read on each store event; polled on SQLite)."""
    while True:
        state = await engine.store.get(task_id)
        assert state is not None
        if check(state):
            return state
        await anyio.sleep(0.02)  # a poll of the store, between reads: no event to wait on from outside


async def test_a_queued_task_waits_until_a_worker_claims_and_runs_it(make_store: StoreMaker) -> None:
    server, tools = _server(make_store), Tools()
    with anyio.fail_after(BOUND_S):
        queued = await _queue(server, "a")
        assert queued.queued
        assert queued.runner is None
        assert queued.claim == 0
        assert queued.task.status is TaskStatus.WORKING
        assert queued.task.status_message == QUEUED
        async with _worker(make_store, tools) as worker:
            await tools.until(lambda: tools.started == ["a"])
            running = await server.store.get(queued.task_id)
            assert running is not None
            assert not running.queued
            assert running.runner == worker.worker_id
            assert running.claim == 1
            assert running.task.status_message == f"running on worker {worker.worker_id}"
            tools.release.set()
            ended = await _until_stored(server, queued.task_id, lambda s: s.is_terminal)
        assert ended.task.status is TaskStatus.COMPLETED
        assert ended.task.result == _result("a done")
        assert await server.queueing.queue.depth() == 0  # type: ignore[union-attr]
    await server.store.close()


async def test_two_workers_share_the_queue_and_run_each_task_once(make_store: StoreMaker) -> None:
    server, tools = _server(make_store), Tools()
    with anyio.fail_after(BOUND_S):
        ids = [(await _queue(server, f"t{i}")).task_id for i in range(6)]
        async with _worker(make_store, tools, concurrency=2), _worker(make_store, tools, concurrency=2):
            await tools.until(lambda: len(tools.started) == 4)  # 2 + 2 slots: the rest wait
            assert tools.most_at_once == 4
            tools.release.set()
            for task_id in ids:
                await _until_stored(server, task_id, lambda s: s.is_terminal)
        assert sorted(tools.started) == sorted(f"t{i}" for i in range(6))  # each once
    await server.store.close()


async def test_a_task_cancelled_while_queued_never_runs(make_store: StoreMaker) -> None:
    server, tools = _server(make_store), Tools()
    with anyio.fail_after(BOUND_S):
        cancelled = await _queue(server, "cancelled")
        await server.cancel(cancelled.task_id, None, strict=False)
        after = await _queue(server, "after")
        async with _worker(make_store, tools):
            await tools.until(lambda: "after" in tools.started)  # the queue moved past the first
        assert tools.started == ["after"]
        stored = await server.store.get(after.task_id)
        assert stored is not None
        assert stored.queued
        assert await server.queueing.queue.depth() == 1  # type: ignore[union-attr]
    await server.store.close()


async def test_a_cancel_through_the_server_stops_the_run_on_the_worker(make_store: StoreMaker) -> None:
    server, tools = _server(make_store), Tools()
    with anyio.fail_after(BOUND_S):
        state = await _queue(server, "long")
        async with _worker(make_store, tools), server.hosted():
            await tools.until(lambda: tools.started == ["long"])
            await server.cancel(state.task_id, None, strict=False)
            await tools.until(lambda: tools.cancelled == ["long"])  # SQLite: polled; Redis: notified
        stored = await server.store.get(state.task_id)
        assert stored is not None
        assert stored.task.status is TaskStatus.CANCELLED
    await server.store.close()


async def test_a_stopping_worker_gives_its_runs_back_and_another_finishes_them(
    make_store: StoreMaker,
) -> None:
    server, tools = _server(make_store), Tools()
    with anyio.fail_after(BOUND_S):
        state = await _queue(server, "given")
        async with _worker(make_store, tools, grace_s=0.0) as first:
            await tools.until(lambda: tools.started == ["given"])
        back = await server.store.get(state.task_id)
        assert back is not None
        assert back.queued
        assert back.attempt == 1
        assert back.claim == 2
        assert back.task.status_message == f"given back by worker {first.worker_id} as it stopped; {QUEUED}"
        assert tools.cancelled == ["given"]
        tools.release.set()
        async with _worker(make_store, tools):
            ended = await _until_stored(server, state.task_id, lambda s: s.is_terminal)
        assert ended.task.status is TaskStatus.COMPLETED
        assert ended.claim == 3
        assert tools.started == ["given", "given"]
    await server.store.close()


async def test_a_lost_worker_run_is_queued_again_or_failed_with_the_reason(make_store: StoreMaker) -> None:
    """A worker that stopped renewing (killed): past the lease, the server's sweeper queues a
    re-run tool's task again (the next attempt) and fails the others, saying why."""
    server, tools = _server(make_store), Tools()
    with anyio.fail_after(BOUND_S):
        again = await _queue(server, "again", tool="rerun_tool")
        lost = await _queue(server, "lost")
        dead = TaskEngine(store=make_store(), lease_s=LEASE_S)  # claims, then never renews
        await dead.open()
        runs = _runs(dead, tools, 2)
        entries = await runs.queue.take(runs.worker_id, 2, wait_s=1.0, redeliver_after_s=LEASE_S)
        for entry in entries:
            assert await runs._claim(entry) is not None  # pyright: ignore[reportPrivateUsage]
            await runs.queue.ack(entry)
        async with server.hosted():
            failed = await _until_stored(server, lost.task_id, lambda s: s.is_terminal)
            queued = await _until_stored(server, again.task_id, lambda s: s.queued)
        assert failed.task.status is TaskStatus.FAILED
        assert "lease" in (failed.task.status_message or "") or failed.task.error is not None
        assert queued.attempt == 2
        assert queued.claim == 2
        assert (queued.task.status_message or "").startswith("attempt 2 of 3: queued again after")
        tools.release.set()
        async with _worker(make_store, tools):
            ended = await _until_stored(server, again.task_id, lambda s: s.is_terminal)
        assert ended.task.status is TaskStatus.COMPLETED
        await dead.store.close()
    await server.store.close()


async def test_the_queue_bound_refuses_past_max_queued(make_store: StoreMaker) -> None:
    server = _server(make_store, max_queued=2)
    with anyio.fail_after(BOUND_S):
        await _queue(server, "one")
        await _queue(server, "two")
        with pytest.raises(PeerProtocolError) as refused:
            await _queue(server, "three")
    assert refused.value.data == {"limit": "max_queued", "max": 2}
    assert "too many queued tasks: 2 wait for a worker" in str(refused.value)
    await server.store.close()


async def test_a_2025_task_is_queued_the_same_way(make_store: StoreMaker) -> None:
    server = _server(make_store)
    await server.open()
    record = await server.create(
        dialect=DIALECT_2025_11_25,
        owner="s",
        tool_name="build",
        ttl_ms=60_000,
        arguments={},
        run_on="workers",
    )
    assert record.state.queued
    assert record.state.arguments == {}
    await server.store.close()


def test_workers_need_a_store_with_a_queue_shared_with_them() -> None:
    with pytest.raises(ValueError, match=r"run_on='workers' needs a task store the workers share.*memory:"):
        TaskPolicy(run_on="workers")
    engine = TaskEngine(store=InMemoryTaskStore())
    with pytest.raises(ValueError, match="a worker needs a task store with a queue"):
        _runs(engine, Tools(), 1)
    with pytest.raises(ValueError, match="run_on must be one of"):
        TaskPolicy(run_on="elsewhere")  # type: ignore[arg-type]
