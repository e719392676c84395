"""The store's health (``_engine/outage.py``): an outage is one log line when it begins and one,
with a count, when it ends, however many calls fail in between (issue 33, item 6).

The rules on a fake clock, then a real SQLite file held locked by another writer while a run's
outcome is retried (tests/deploy/test_outage_log.py does the same with a real Redis stopped and
started under two server processes), then the workers' queue, whose operations the health hears
of through the one store layer (issue 41, item 7): on a real SQLite file, and a worker taking from
a real Redis stopped and started again.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from tests.redis_server import redis_server

from mcp_tasks_compat._engine import TaskEngine
from mcp_tasks_compat._engine.outage import HealthHook, StoreHealth
from mcp_tasks_compat._engine.stores import InMemoryTaskStore, SqliteTaskStore
from mcp_tasks_compat._engine.stores.delegating import DelegatingStore
from mcp_tasks_compat._engine.stores.queue import queue_of
from mcp_tasks_compat._engine.stores.redis import RedisTaskStore
from mcp_tasks_compat._engine.workers import WorkerRuns
from mcp_tasks_compat.core._model import TaskStatus
from mcp_tasks_compat.dialects import DIALECT_2026_07_28
from mcp_tasks_compat.errors import TaskStoreError

BOUND_S = 10
STORE = "redis://10.0.0.5:6379/0"
OK: Mapping[str, Any] = {"content": [{"type": "text", "text": "done"}], "isError": False}


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def unreachable() -> TaskStoreError:
    """A store error as the Redis store raises one: the driver's error under it."""
    try:
        try:
            raise ConnectionRefusedError(111, "Connection refused")
        except OSError as exc:
            raise TaskStoreError(f"the Redis task store {STORE} does not answer ({exc})") from None
    except TaskStoreError as error:
        return error


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING]


def test_an_outage_is_one_line_when_it_begins_and_one_when_it_ends(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    health = StoreHealth(STORE, clock=clock)
    caplog.set_level(logging.DEBUG, logger="mcp_tasks_compat.engine")
    for index in range(40):
        health.failed(unreachable(), f"saving the outcome of task t{index}")
    assert health.down
    clock.now += 5.25
    health.succeeded(health.epoch, writing=True)
    assert not health.down
    assert warnings(caplog) == [
        f"task store {STORE} unreachable (ConnectionRefusedError: [Errno 111] Connection refused): saving the"
        " outcome of task t0 failed; until it answers, what fails is counted, not logged",
        f"task store {STORE} back after 5.2 s; 40 calls failed meanwhile",
    ]
    details = [record for record in caplog.records if record.levelno == logging.DEBUG]
    assert len(details) == 40  # each failure, with its traceback, for -v
    assert all(record.exc_info is not None for record in details)
    assert not [record for record in caplog.records if record.levelno >= logging.WARNING and record.exc_info]


def test_only_a_write_ends_an_outage_in_which_a_write_failed(caplog: pytest.LogCaptureFixture) -> None:
    """A SQLite file locked by another writer still serves reads: a read proves nothing then."""
    health = StoreHealth(STORE, clock=Clock())
    caplog.set_level(logging.WARNING, logger="mcp_tasks_compat.engine")
    health.failed(unreachable(), "following other replicas", writing=False)
    health.failed(unreachable(), "renewing the lease of task t1")
    health.succeeded(health.epoch, writing=False)
    assert health.down
    health.succeeded(health.epoch, writing=True)
    assert not health.down
    assert warnings(caplog)[-1] == f"task store {STORE} back after 0.0 s; 2 calls failed meanwhile"


def test_a_read_ends_an_outage_in_which_only_reads_failed(caplog: pytest.LogCaptureFixture) -> None:
    health = StoreHealth(STORE, clock=Clock())
    caplog.set_level(logging.WARNING, logger="mcp_tasks_compat.engine")
    health.failed(unreachable(), "following other replicas", writing=False)
    health.succeeded(health.epoch, writing=False)
    assert not health.down
    assert warnings(caplog)[-1] == f"task store {STORE} back after 0.0 s; 1 call failed meanwhile"


def test_an_operation_begun_before_the_outage_does_not_end_it() -> None:
    health = StoreHealth(STORE, clock=Clock())
    begun = health.epoch  # an answer on its way back while the store goes away
    health.failed(unreachable(), "following other replicas", writing=False)
    health.succeeded(begun, writing=True)
    assert health.down
    health.succeeded(health.epoch, writing=True)
    assert not health.down


def test_each_outage_is_told_of(caplog: pytest.LogCaptureFixture) -> None:
    health = StoreHealth(STORE, clock=Clock())
    caplog.set_level(logging.WARNING, logger="mcp_tasks_compat.engine")
    for _ in range(2):
        health.failed(unreachable(), "x")
        health.failed(unreachable(), "y")
        health.succeeded(health.epoch, writing=True)
    assert len(warnings(caplog)) == 4


def test_a_failure_that_is_not_a_lost_connection_says_failing(caplog: pytest.LogCaptureFixture) -> None:
    health = StoreHealth("sqlite:///tasks.db", clock=Clock())
    caplog.set_level(logging.WARNING, logger="mcp_tasks_compat.engine")
    try:
        raise TaskStoreError("sqlite:///tasks.db: tasks.db is locked") from sqlite3.OperationalError(
            "database is locked"
        )
    except TaskStoreError as locked:
        health.failed(locked, "saving the outcome of task t1")
    assert warnings(caplog)[0].startswith(
        "task store sqlite:///tasks.db failing (OperationalError: database is locked): saving the outcome"
    )


def test_a_shared_store_is_watched_and_a_memory_store_is_not(tmp_path: Path) -> None:
    memory = TaskEngine(store=InMemoryTaskStore())
    assert isinstance(memory.store, InMemoryTaskStore)  # nothing between the engine and it
    sqlite = TaskEngine(store=SqliteTaskStore(tmp_path / "tasks.db"))
    assert isinstance(sqlite.store, DelegatingStore)
    assert [type(hook) for hook in sqlite.store.hooks] == [HealthHook]  # no meter provider here
    assert sqlite.store.path == str(tmp_path / "tasks.db")  # the store's own attributes, through
    assert sqlite.writer.health is sqlite.health


@pytest.mark.anyio
async def test_an_outcome_retried_through_a_locked_file_is_two_log_lines(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The run's outcome is written again every few tens of milliseconds while another writer
    holds the file: each try used to log a line of its own."""
    path = tmp_path / "tasks.db"
    engine = TaskEngine(store=SqliteTaskStore(path, busy_timeout=0.02), lease_s=30)
    await engine.open()
    ended = anyio.Event()
    tried_often = anyio.Event()

    async def work() -> Mapping[str, Any]:
        await ended.wait()
        return OK

    failed = engine.health.failed
    tries: list[str] = []

    def counting(exc: BaseException, what: str, *, writing: bool = True) -> None:
        failed(exc, what, writing=writing)
        if what.startswith("saving the outcome"):
            tries.append(what)
        if len(tries) >= 4:  # enough failed tries for a line each to show
            tried_often.set()

    engine.health.failed = counting  # type: ignore[method-assign]
    caplog.set_level(logging.WARNING, logger="mcp_tasks_compat.engine")
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        with anyio.fail_after(BOUND_S):
            async with anyio.create_task_group() as group:
                record = await engine.create(
                    dialect=DIALECT_2026_07_28, owner=None, tool_name="t", ttl_ms=None
                )
                engine.start(record, work, group)
                holder.execute("BEGIN EXCLUSIVE")
                ended.set()
                await tried_often.wait()
                holder.execute("ROLLBACK")
    finally:
        holder.close()
    assert record.task.status is TaskStatus.COMPLETED
    await engine.store.close()
    lines = warnings(caplog)
    assert len(lines) == 2, lines
    assert lines[0].startswith(f"task store sqlite:///{path} failing (OperationalError: database is locked):")
    assert lines[1].startswith(f"task store sqlite:///{path} back after ")
    assert lines[1].endswith("calls failed meanwhile")
    assert not [record for record in caplog.records if record.levelno >= logging.WARNING and record.exc_info]


class Warnings(logging.Handler):
    """The engine's warnings as they are logged, waited for by their number (made in a test's loop)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []
        self._more = anyio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())
        self._more.set()
        self._more = anyio.Event()

    async def until(self, count: int) -> None:
        while len(self.lines) < count:
            await self._more.wait()


@pytest.mark.anyio
async def test_the_workers_queue_tells_the_health_of_what_succeeds(tmp_path: Path) -> None:
    """The queue's operations are the store's like the others: a depth read ends an outage in
    which only reads failed, and only an ack (a write) one in which a write failed (a take may
    only read: an idle worker's look at an empty SQLite queue takes no write lock). The queue used
    to be reached around the layer: none of them ended an outage."""
    engine = TaskEngine(store=SqliteTaskStore(tmp_path / "tasks.db"))
    await engine.open()
    queue = queue_of(engine.store)
    assert queue is not None
    try:
        await engine.create(
            dialect=DIALECT_2026_07_28, owner=None, tool_name="t", ttl_ms=None, run_on="workers"
        )
        engine.health.failed(unreachable(), "following other replicas", writing=False)
        assert await queue.depth() == 1
        assert not engine.health.down
        engine.health.failed(unreachable(), "renewing the lease of task t1")
        await queue.depth()
        (entry,) = await queue.take("worker", 1, wait_s=0.01, redeliver_after_s=30)
        assert engine.health.down  # reads prove nothing about writes
        await queue.ack(entry)
        assert not engine.health.down
    finally:
        await engine.store.close()


@pytest.mark.anyio
async def test_a_queue_take_that_fails_marks_the_store_unreachable_and_one_that_lands_ends_it(
    tmp_path: Path,
) -> None:
    """A worker's take loop alone (no background: nothing else touches the store) on a
    redis-server of the test's own, stopped and started again (its data on disk): two lines, the
    first naming the take, the second ended by a take that landed."""
    logger = logging.getLogger("mcp_tasks_compat.engine")
    told = Warnings()
    logger.addHandler(told)
    try:
        with redis_server(data_dir=str(tmp_path)) as redis:
            engine = TaskEngine(store=RedisTaskStore(redis.url, prefix="queue-health:"))
            runs = WorkerRuns(
                engine.reader,
                engine.writer,
                engine.replicas,
                start=engine.start,
                work_for=lambda tool_name, arguments: None,
                concurrency=1,
            )
            await engine.open()
            await runs.queue.take("first", 1, wait_s=0.01, redeliver_after_s=30)  # the group made
            with anyio.fail_after(BOUND_S):
                async with anyio.create_task_group() as group:
                    group.start_soon(runs.take_and_run, group)
                    await anyio.to_thread.run_sync(redis.stop)
                    await told.until(1)
                    assert engine.health.down
                    await anyio.to_thread.run_sync(redis.start)
                    await told.until(2)
                    await runs.stop_taking()
            await engine.store.close()
    finally:
        logger.removeHandler(told)
    assert not engine.health.down
    assert len(told.lines) == 2, told.lines
    assert told.lines[0].startswith(f"task store {redis.url}")
    assert " unreachable (" in told.lines[0]
    assert told.lines[0].endswith(
        "taking queued tasks failed; until it answers, what fails is counted, not logged"
    )
    assert told.lines[1].startswith(f"task store {redis.url} back after ")
