"""The read after a task ends here needs no round trip, and never hides a deletion for long.

A task that ended in this process is answered from memory for a moment
(``records.LiveRecords.recently_ended``): an ended state never changes again, so only a deletion
could make the store's answer differ. These tests pin the limits of that: a deletion by this
process is seen at once, one by another process (the operator's ``tasks purge``, here a second
store on the same Redis) once the moment is over, and a task past its deadline is always read.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from tests.engine.test_redis_store import make_state

from mcp_tasks_compat._engine import TaskEngine, UnknownTask, records
from mcp_tasks_compat._engine.stores.redis import RedisTaskStore
from mcp_tasks_compat.core._model import TaskStatus
from mcp_tasks_compat.dialects import DIALECT_2026_07_28

pytestmark = pytest.mark.anyio

BOUND_S = 60  # an upper bound on any wait (redis-server is another process); these finish in milliseconds
TTL_MS = 60_000


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # redis-py is asyncio-only


class Clock:
    """The engine's wall clock, moved forward by the test."""

    def __init__(self) -> None:
        self.ahead_s = 0.0

    def __call__(self) -> float:
        return time.time() + self.ahead_s


@asynccontextmanager
async def two_processes(redis_url: str, clock: Clock) -> AsyncIterator[tuple[TaskEngine, RedisTaskStore]]:
    """An engine on a Redis prefix, and the operator's own store on the same prefix."""
    prefix = f"test-{uuid.uuid4().hex[:12]}:"
    store, operator = RedisTaskStore(redis_url, prefix=prefix), RedisTaskStore(redis_url, prefix=prefix)
    engine = TaskEngine(store=store, ttl_floor_ms=0, clock=clock)
    try:
        await engine.open()
        await operator.open()
        yield engine, operator
    finally:
        await operator.close()
        await store.close()


async def ended_here(engine: TaskEngine) -> str:
    """A task created and run to its end in ``engine``'s process; its id."""

    async def work() -> Mapping[str, Any]:
        return {"content": [], "isError": False}

    record = await engine.create(dialect=DIALECT_2026_07_28, owner="alice", tool_name="job", ttl_ms=TTL_MS)
    async with anyio.create_task_group() as group:
        engine.start(record, work, group)
    assert record.task.is_terminal
    return record.task.task_id


async def test_a_task_read_right_after_it_ended_here_is_its_ended_state(redis_url: str) -> None:
    async with two_processes(redis_url, Clock()) as (engine, _):
        task_id = await ended_here(engine)
        task = await engine.get(task_id, "alice")
        assert task.status is TaskStatus.COMPLETED
        with pytest.raises(UnknownTask):
            await engine.get(task_id, "bob")  # the owner is checked all the same


async def test_a_task_this_process_deletes_is_gone_at_once(redis_url: str) -> None:
    async with two_processes(redis_url, Clock()) as (engine, _):
        task_id = await ended_here(engine)
        await engine.writer.forget(task_id)
        with pytest.raises(UnknownTask):
            await engine.get(task_id, "alice")


async def test_a_task_purged_elsewhere_is_gone_once_the_moment_is_over(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with two_processes(redis_url, Clock()) as (engine, operator):
        task_id = await ended_here(engine)
        await operator.delete(task_id)
        monkeypatch.setattr(records, "ENDED_KEPT_S", -1.0)  # the moment is over
        with pytest.raises(UnknownTask):
            await engine.get(task_id, "alice")


async def test_a_task_past_its_deadline_is_read_from_the_store(redis_url: str) -> None:
    clock = Clock()
    async with two_processes(redis_url, clock) as (engine, operator):
        task_id = await ended_here(engine)
        await operator.delete(task_id)  # as another replica's sweeper does at the deadline
        clock.ahead_s = TTL_MS / 1000 + 1
        with pytest.raises(UnknownTask):
            await engine.get(task_id, "alice")


def test_ended_tasks_are_remembered_for_a_moment_and_only_so_many() -> None:
    now = [100.0]
    held = records.LiveRecords(clock=lambda: now[0])
    running = records.TaskRecord(make_state("running"))
    held.add(running)
    held.release_if_idle(running)
    assert held.recently_ended("running") is None  # not ended: read the store
    for index in range(records.ENDED_KEPT + 1):
        ended = records.TaskRecord(make_state(f"t{index}", status=TaskStatus.COMPLETED))
        held.add(ended)
        held.release_if_idle(ended)
    assert held.recently_ended("t0") is None  # the oldest, over the count
    last = held.recently_ended(f"t{records.ENDED_KEPT}")
    assert last is not None
    assert last.task.status is TaskStatus.COMPLETED
    now[0] += records.ENDED_KEPT_S + 0.001
    assert held.recently_ended(f"t{records.ENDED_KEPT}") is None  # the moment is over


def test_a_read_answered_from_before_an_end_here_takes_the_ended_state() -> None:
    """A store read (a tasks/get, a 2026-07-28 listen stream's lookup) out while the task ended here
    and its record went answers with the working state: the record made of it is the ended one, or
    a listen stream watching it would wait for a change that already happened (found on
    PostgreSQL, whose reads take long enough to lose this race)."""
    held = records.LiveRecords(clock=lambda: 100.0)
    working = make_state("t")
    record = records.TaskRecord(working)
    held.add(record)
    ended = working.evolve(task=working.task.evolve(status=TaskStatus.COMPLETED), version=working.version + 1)
    record.state = ended
    held.release_if_idle(record)  # the run ended; the read below was already out
    assert held.record_of(working).state == ended
    newer = ended.evolve(version=ended.version + 1)  # a newer state read from the store wins
    assert held.record_of(newer).state == newer
