"""A durable store answers a read of the state it wrote last without parsing it again
(``task_state.WrittenStates``), and never answers so once another process wrote the task.

Real stores: two SQLite stores on one file, two Redis stores on one prefix (two replicas).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime, timezone
from pathlib import Path

import pytest

from mcp_tasks_compat._engine.stores import SqliteTaskStore, TaskState
from mcp_tasks_compat._engine.stores.redis import RedisTaskStore
from mcp_tasks_compat._engine.stores.task_state import WrittenStates, dumps
from mcp_tasks_compat.core._model import Task, TaskStatus
from mcp_tasks_compat.dialects import DIALECT_2026_07_28

pytestmark = pytest.mark.anyio

NOW = datetime(2026, 5, 1, 9, 0, 0, 1, tzinfo=timezone.utc)


def a_state(task_id: str) -> TaskState:
    task = Task(task_id=task_id, status=TaskStatus.WORKING, created_at=NOW, last_updated_at=NOW)
    return TaskState(task, DIALECT_2026_07_28, "alice", "build")


@asynccontextmanager
async def sqlite_pair(path: Path) -> AsyncIterator[tuple[SqliteTaskStore, SqliteTaskStore]]:
    one, other = SqliteTaskStore(path), SqliteTaskStore(path)
    await one.open()
    await other.open()
    try:
        yield one, other
    finally:
        await one.close()
        await other.close()


@asynccontextmanager
async def redis_pair(url: str) -> AsyncIterator[tuple[RedisTaskStore, RedisTaskStore]]:
    prefix = f"test-{uuid.uuid4().hex[:12]}:"
    one, other = RedisTaskStore(url, prefix=prefix), RedisTaskStore(url, prefix=prefix)
    await one.open()
    await other.open()
    try:
        yield one, other
    finally:
        await one.close()
        await other.close()


@pytest.fixture(params=["sqlite", "redis"])
async def pair(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[tuple[SqliteTaskStore | RedisTaskStore, SqliteTaskStore | RedisTaskStore]]:
    if request.param == "sqlite":
        async with sqlite_pair(tmp_path / "tasks.db") as stores:
            yield stores
    else:
        url = str(request.getfixturevalue("redis_url"))
        async with redis_pair(url) as stores:
            yield stores


async def test_a_read_of_what_this_store_wrote_is_that_state(
    pair: tuple[SqliteTaskStore | RedisTaskStore, SqliteTaskStore | RedisTaskStore],
) -> None:
    one, _other = pair
    created = a_state("t-1")
    await one.create(created)
    assert await one.get("t-1") is created  # the very object: nothing parsed
    saved = await one.save(created.evolve(task=created.task.evolve(status_message="half way")))
    assert await one.get("t-1") is saved


async def test_a_write_of_another_store_is_read_as_written_there(
    pair: tuple[SqliteTaskStore | RedisTaskStore, SqliteTaskStore | RedisTaskStore],
) -> None:
    one, other = pair
    created = a_state("t-1")
    await one.create(created)
    seen = await other.get("t-1")
    assert seen == created
    assert seen is not created
    cancelled = await other.save(created.evolve(task=created.task.evolve(status=TaskStatus.CANCELLED)))
    read = await one.get("t-1")  # what this store wrote last is stale now
    assert read == cancelled
    assert read is not None
    assert read.task.status is TaskStatus.CANCELLED
    await other.delete("t-1")
    assert await one.get("t-1") is None


def test_written_states_are_bounded_and_answer_only_their_exact_text() -> None:
    written = WrittenStates(limit=2)
    first, second, third = a_state("a"), a_state("b"), a_state("c")
    texts = [written.dumps(state) for state in (first, second, third)]
    assert texts[0] == dumps(first)  # the store's text, unchanged
    assert written.recall(texts[0]) is None  # the oldest, forgotten
    assert written.recall(texts[2]) is third
    assert written.recall(dumps(third.evolve(version=1))) is None  # other text: parsed, not recalled
    assert written.recall(b"not text") is None
