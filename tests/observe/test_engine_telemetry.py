"""The engine's traces and metrics across replicas (two engines sharing one SQLite file or one
redis-server, as two replicas of a server do): a cancel through B joins the trace of the create
on A, a re-run after a crash joins it too, and the metrics move as the tasks go through create,
input, cancel, failure, a limit and a lease that runs out; the workers' queue is timed as the
store's other operations are, on a real redis-server. SDK-free: it runs under every SDK."""

from __future__ import annotations

import socket
import sys
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from opentelemetry import trace
from tests.redis_server import redis_server

from mcp_tasks_compat._engine import TaskEngine, Work
from mcp_tasks_compat._engine.limits import TaskLimits
from mcp_tasks_compat._engine.stores import SqliteTaskStore, TaskStore
from mcp_tasks_compat._engine.stores.queue import queue_of
from mcp_tasks_compat._engine.stores.redis import RedisTaskStore
from mcp_tasks_compat._engine.workers import WorkerRuns
from mcp_tasks_compat.core._model import TaskStatus
from mcp_tasks_compat.dialects import DIALECT_2025_11_25, DIALECT_2026_07_28
from mcp_tasks_compat.errors import PeerProtocolError, TaskStoreError

from .conftest import Telemetry

pytestmark = pytest.mark.anyio
BOUND_S = 60  # a bound, not a wait: one of the stores is a redis-server process
TOOL = {"gen_ai.tool.name": "build"}


async def hang() -> Mapping[str, Any]:
    await anyio.sleep_forever()
    raise AssertionError("unreachable")


@pytest.fixture(params=["sqlite", "redis"])
def shared_store(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], TaskStore]:
    """Stores of one shared place, one per replica: a SQLite file, or a prefix on a redis-server."""
    if request.param == "sqlite":
        path = tmp_path / "tasks.db"
        return lambda: SqliteTaskStore(path)
    url: str = request.getfixturevalue("redis_url")
    prefix = f"observe-{uuid.uuid4().hex[:12]}:"
    return lambda: RedisTaskStore(url, prefix=prefix)


async def test_a_cancel_through_b_joins_the_trace_of_the_create_on_a(
    telemetry: Telemetry, shared_store: Callable[[], TaskStore]
) -> None:
    # A short lease: without a notifier (SQLite) A hears of the cancel at its next renewal.
    a = TaskEngine(store=shared_store(), lease_s=0.6)
    b = TaskEngine(store=shared_store())
    tracer = trace.get_tracer("test")
    with anyio.fail_after(BOUND_S):
        async with a.hosted() as host_a, b.hosted():
            with tracer.start_as_current_span("client call") as creating:
                record = await a.create(
                    dialect=DIALECT_2026_07_28, owner=None, tool_name="build", ttl_ms=None
                )
                a.start(record, hang, host_a.runs)
            with tracer.start_as_current_span("another client") as other:
                await b.cancel(record.task.task_id, None, strict=False)
            (run,) = await telemetry.ended("mcp_tasks.run build")  # A heard of it and stopped the run
            stored = await b.store.get(record.task.task_id)  # the context is kept with the task
        await a.store.close()
        await b.store.close()
    trace_id = creating.get_span_context().trace_id
    (cancel,) = telemetry.named("tasks/cancel build")
    assert cancel.context.trace_id == run.context.trace_id == trace_id
    assert [link.context.span_id for link in cancel.links] == [other.get_span_context().span_id]
    assert [dict(e.attributes or {})["mcp_tasks.task.status"] for e in cancel.events] == ["cancelled"]
    assert run.parent is not None
    assert run.parent.span_id == creating.get_span_context().span_id
    assert dict(run.attributes or {})["mcp_tasks.task.status"] == "cancelled"
    assert stored is not None
    assert dict(stored.trace_context)["traceparent"].split("-")[1] == f"{trace_id:032x}"


async def test_a_rerun_after_a_crash_joins_the_trace_that_created_the_task(
    telemetry: Telemetry, tmp_path: Path
) -> None:
    path = tmp_path / "tasks.db"
    first = TaskEngine(store=SqliteTaskStore(path))
    first.reruns["build"] = 1
    await first.open()
    with trace.get_tracer("test").start_as_current_span("client call") as creating:
        record = await first.create(
            dialect=DIALECT_2026_07_28, owner=None, tool_name="build", ttl_ms=None, arguments={"n": 1}
        )
    dead = await anyio.run_process([sys.executable, "-c", "import os; print(os.getpid())"])
    await first.store.save(record.state.evolve(runner=f"{socket.gethostname()}/{int(dead.stdout)}/dead"))
    await first.store.close()

    def rerun_work(tool_name: str, arguments: Mapping[str, Any], lifespan: Any) -> Work | None:
        async def work() -> Mapping[str, Any]:
            return {"content": [], "isError": False}

        return work

    restarted = TaskEngine(store=SqliteTaskStore(path))
    restarted.reruns["build"] = 1
    with anyio.fail_after(BOUND_S):
        async with restarted.hosted(tools=rerun_work):
            await restarted.reader.wait_terminal(record.task.task_id, None)
            (run,) = await telemetry.ended("mcp_tasks.run build")
    assert run.context.trace_id == creating.get_span_context().trace_id
    assert dict(run.attributes or {})["mcp_tasks.run.attempt"] == 2
    assert telemetry.value("mcp_tasks.reruns", **TOOL) >= 1


async def test_a_worker_run_joins_the_trace_that_queued_it_and_is_measured(
    telemetry: Telemetry, tmp_path: Path
) -> None:
    """Issue 34: one trace from the client's call through the queue to the worker's run; the
    queue's wait, depth and the worker's runs measured."""
    path = tmp_path / "tasks.db"
    server = TaskEngine(store=SqliteTaskStore(path), max_queued=10)
    await server.open()
    with trace.get_tracer("test").start_as_current_span("client call") as creating:
        record = await server.create(
            dialect=DIALECT_2026_07_28,
            owner=None,
            tool_name="build",
            ttl_ms=None,
            arguments={},
            run_on="workers",
        )
    assert telemetry.value("mcp_tasks.queue.depth") == 0  # read before the create: none waited

    def run_here(tool_name: str, arguments: Mapping[str, Any], lifespan: Any = None) -> Work | None:
        async def work() -> Mapping[str, Any]:
            return {"content": [], "isError": False}

        return work

    worker = TaskEngine(store=SqliteTaskStore(path))
    runs = WorkerRuns(
        worker.reader, worker.writer, worker.replicas, start=worker.start, work_for=run_here, concurrency=1
    )
    stop = anyio.Event()
    with anyio.fail_after(BOUND_S):
        async with worker.hosted(tools=run_here), anyio.create_task_group() as group:
            group.start_soon(lambda: runs.serve(stop, grace_s=1))
            (run,) = await telemetry.ended("mcp_tasks.run build")
            stop.set()
    assert run.context.trace_id == creating.get_span_context().trace_id
    assert telemetry.value("mcp_tasks.worker.runs", **TOOL) == 1
    assert telemetry.value("mcp_tasks.queue.wait", **TOOL) >= 1  # one wait recorded
    stored = await server.store.get(record.task.task_id)
    assert stored is not None
    assert stored.task.status is TaskStatus.COMPLETED
    await server.store.close()
    await worker.store.close()


async def test_the_task_metrics_move_through_create_input_cancel_and_failure(telemetry: Telemetry) -> None:
    engine = TaskEngine(limits=TaskLimits(max_active_tasks_per_owner=2))
    attrs = {**TOOL, "mcp_tasks.dialect": DIALECT_2025_11_25}
    before = {
        name: telemetry.value(name, **attrs)
        for name in ("mcp_tasks.created", "mcp_tasks.active", "mcp_tasks.input_waiting")
    }
    ended = {
        s: telemetry.value("mcp_tasks.ended", **attrs, **{"mcp_tasks.task.status": s})
        for s in ("cancelled", "failed")
    }
    refusals = telemetry.value("mcp_tasks.limit.refusals", **{"mcp_tasks.dialect": DIALECT_2025_11_25})
    store_ops = telemetry.value("mcp_tasks.store.duration", **{"mcp_tasks.store": "memory"})

    def delta(name: str) -> float:
        return telemetry.value(name, **attrs) - before[name]

    with anyio.fail_after(BOUND_S):
        async with engine.hosted() as host:
            group = host.runs
            asks = await engine.create(dialect=DIALECT_2025_11_25, owner="o", tool_name="build", ttl_ms=None)
            fails = await engine.create(dialect=DIALECT_2025_11_25, owner="o", tool_name="build", ttl_ms=None)
            assert (delta("mcp_tasks.created"), delta("mcp_tasks.active")) == (2, 2)
            with pytest.raises(PeerProtocolError):  # the owner's limit: two active
                await engine.create(dialect=DIALECT_2025_11_25, owner="o", tool_name="build", ttl_ms=None)
            assert (
                telemetry.value("mcp_tasks.limit.refusals", **{"mcp_tasks.dialect": DIALECT_2025_11_25})
                == refusals + 1
            )

            asking = anyio.Event()

            async def ask() -> Mapping[str, Any]:
                asking.set()
                await engine.inputs.request(asks, {"method": "elicitation/create", "params": {}})
                return {}

            engine.start(asks, ask, group)
            await asking.wait()
            while asks.task.status is not TaskStatus.INPUT_REQUIRED:
                await asks.changed.wait()
            assert delta("mcp_tasks.input_waiting") == 1
            await engine.cancel(asks.task.task_id, "o", strict=False)
            assert delta("mcp_tasks.input_waiting") == 0

            async def boom() -> Mapping[str, Any]:
                raise RuntimeError("no")

            engine.start(fails, boom, group)
            await engine.reader.wait_terminal(fails.task.task_id, "o")
    assert delta("mcp_tasks.active") == 0
    for status in ("cancelled", "failed"):
        assert (
            telemetry.value("mcp_tasks.ended", **attrs, **{"mcp_tasks.task.status": status})
            == ended[status] + 1
        )
        assert telemetry.value("mcp_tasks.run.duration", **attrs, **{"mcp_tasks.task.status": status}) >= 1
    assert telemetry.value("mcp_tasks.store.duration", **{"mcp_tasks.store": "memory"}) > store_ops
    for attributes, _point in telemetry.points("mcp_tasks.ended"):
        assert set(attributes) <= {"gen_ai.tool.name", "mcp_tasks.dialect", "mcp_tasks.task.status"}


async def test_a_lease_that_runs_out_is_counted(telemetry: Telemetry, tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    gone = TaskEngine(store=SqliteTaskStore(path))
    await gone.open()
    record = await gone.create(dialect=DIALECT_2026_07_28, owner=None, tool_name="build", ttl_ms=None)
    await gone.store.save(record.state.evolve(runner="elsewhere/1/x", lease_until=gone.reader.now()))
    await gone.store.close()
    expiries = telemetry.value("mcp_tasks.lease.expiries")
    survivor = TaskEngine(store=SqliteTaskStore(path))
    await survivor.open()
    judge = survivor.expiry.leases.judge
    looked_at = 0.0
    judge.clock = lambda: looked_at  # the survivor's monotonic clock: leases are judged on it
    assert await survivor.expiry.sweep_lost_runs() == 0  # first seen: counted from now
    assert telemetry.value("mcp_tasks.lease.expiries") == expiries
    looked_at += survivor.settings.lease_s
    assert await survivor.expiry.sweep_lost_runs() == 1
    assert telemetry.value("mcp_tasks.lease.expiries") == expiries + 1
    failed = await survivor.store.get(record.task.task_id)
    assert failed is not None
    assert failed.task.status is TaskStatus.FAILED
    await survivor.store.close()


async def test_the_workers_queue_is_timed_and_its_failures_counted(telemetry: Telemetry) -> None:
    """Issue 41, item 7: the queue's take, ack and depth are store operations like the others,
    timed by store and operation, and a take that fails (its redis-server stopped) is a store
    error. They used to be reached around the timing: none was measured."""
    queue_operations = ("queue_depth", "queue_take", "queue_ack")

    def redis_ops(metric: str, operation: str) -> float:
        return telemetry.value(metric, **{"mcp_tasks.store": "redis", "mcp_tasks.store.operation": operation})

    timed = {op: redis_ops("mcp_tasks.store.duration", op) for op in queue_operations}
    errors = {op: redis_ops("mcp_tasks.store.errors", op) for op in queue_operations}
    with redis_server() as redis, anyio.fail_after(BOUND_S):
        engine = TaskEngine(store=RedisTaskStore(redis.url, prefix="timed-queue:"), max_queued=10)
        await engine.open()
        queue = queue_of(engine.store)
        assert queue is not None
        await engine.create(  # the room under max_queued: a depth read
            dialect=DIALECT_2026_07_28, owner=None, tool_name="build", ttl_ms=None, run_on="workers"
        )
        (entry,) = await queue.take("worker", 1, wait_s=1.0, redeliver_after_s=30)
        await queue.ack(entry)
        assert {op: redis_ops("mcp_tasks.store.duration", op) - timed[op] for op in queue_operations} == {
            op: 1 for op in queue_operations
        }
        assert errors == {op: redis_ops("mcp_tasks.store.errors", op) for op in queue_operations}
        await anyio.to_thread.run_sync(redis.stop)
        with pytest.raises(TaskStoreError):
            await queue.take("worker", 1, wait_s=0.01, redeliver_after_s=30)
        await engine.store.close()
    assert redis_ops("mcp_tasks.store.errors", "queue_take") == errors["queue_take"] + 1
    assert (
        redis_ops("mcp_tasks.store.duration", "queue_take") == timed["queue_take"] + 2
    )  # the failure timed too
