"""A run's outcome the store will not take (issue 25, point 1; issue 33, point 2), on a real SQLite
file held locked by another writer: written again until the store takes it, however long past
the run's lease, as long as no newer claim exists; never raised into the task group (a server's
lifespan or a session)."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_tasks_compat._engine import TaskEngine
from mcp_tasks_compat._engine.stores import SqliteTaskStore
from mcp_tasks_compat.core._model import TaskStatus
from mcp_tasks_compat.dialects import DIALECT_2026_07_28

pytestmark = pytest.mark.anyio

BOUND_S = 10
OK: Mapping[str, Any] = {"content": [{"type": "text", "text": "done"}], "isError": False}


@contextmanager
def locked(path: Path) -> Iterator[sqlite3.Connection]:
    """The file's write lock, held by another connection (as another process's writer would)."""
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        yield holder
    finally:
        holder.execute("ROLLBACK")
        holder.close()


async def run_while_locked(path: Path, *, lease_s: float, locked_for_s: float) -> str:
    """Create a task, lock the file, let its run end, unlock after ``locked_for_s``; its id."""
    engine = TaskEngine(store=SqliteTaskStore(path, busy_timeout=0.05), lease_s=lease_s)
    await engine.open()
    ended = anyio.Event()

    async def work() -> Mapping[str, Any]:
        await ended.wait()
        return OK

    with anyio.fail_after(BOUND_S):
        async with anyio.create_task_group() as group:  # a run that raised would fail this group
            record = await engine.create(dialect=DIALECT_2026_07_28, owner=None, tool_name="t", ttl_ms=None)
            engine.start(record, work, group)
            with locked(path):
                ended.set()
                await anyio.sleep(locked_for_s)  # how long the other writer holds the file
    await engine.store.close()
    return record.task.task_id


async def test_an_outcome_written_again_lands_once_the_lock_is_gone(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    task_id = await run_while_locked(path, lease_s=30, locked_for_s=0.5)
    store = SqliteTaskStore(path)
    await store.open()
    state = await store.get(task_id)
    await store.close()
    assert state is not None
    assert state.task.status is TaskStatus.COMPLETED
    assert state.task.result is not None
    assert state.task.result["content"] == OK["content"]


async def test_an_outcome_refused_past_the_lease_still_lands_when_no_newer_claim_exists(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The file locked three leases long: the run's lease ran out meanwhile, but nobody claimed the
    task, so its outcome is still the task's once the store takes it (it used to be given up)."""
    path = tmp_path / "tasks.db"
    with caplog.at_level(logging.WARNING, logger="mcp_tasks_compat.engine"):
        task_id = await run_while_locked(path, lease_s=0.5, locked_for_s=1.5)
    assert "saving the outcome of task" in caplog.text  # it was refused while locked, and said so
    store = SqliteTaskStore(path)
    await store.open()
    state = await store.get(task_id)
    await store.close()
    assert state is not None
    assert state.task.status is TaskStatus.COMPLETED
    assert state.task.result is not None
    assert state.task.result["content"] == OK["content"]
