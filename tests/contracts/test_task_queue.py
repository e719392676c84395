"""The workers' queue (``stores/queue.py``'s module docstring), checked against every store kind.

A write that makes a task queued adds one entry, in the same step; every other write adds none;
an entry is handed to one consumer, again only past the redelivery bound when never acked; an
acked entry is gone.
"""

from __future__ import annotations

from dataclasses import replace

import anyio
import pytest

from mcp_tasks_compat._engine.stores import StoreConflict, TaskState, TaskStore
from mcp_tasks_compat._engine.stores.queue import TaskQueue, queue_of

from .test_task_store import make_state

pytestmark = pytest.mark.anyio


def queued(task_id: str) -> TaskState:
    return replace(make_state(task_id), run_on="workers")


def the_queue(store: TaskStore) -> TaskQueue:
    queue = queue_of(store)
    assert queue is not None, f"{store.describe} has no workers' queue"
    return queue


async def take_all(
    queue: TaskQueue, consumer: str, *, redeliver_after_s: float = 60.0
) -> list[tuple[str, int]]:
    entries = await queue.take(consumer, 10, wait_s=0.05, redeliver_after_s=redeliver_after_s)
    return [(entry.task_id, entry.claim) for entry in entries]


async def test_a_queued_create_adds_one_entry_and_a_plain_one_none(store: TaskStore) -> None:
    queue = the_queue(store)
    await store.create(make_state("here"))
    await store.create(queued("waits"))
    assert await queue.depth() == 1
    assert await take_all(queue, "w1") == [("waits", 0)]
    assert await take_all(queue, "w2") == []  # handed to one consumer only


async def test_only_a_write_that_makes_a_task_queued_adds_an_entry(store: TaskStore) -> None:
    queue = the_queue(store)
    await store.create(queued("t"))
    state = await store.get("t")
    assert state is not None
    state = await store.save(state.evolve(input_serial=1))  # still queued: no second entry
    assert await queue.depth() == 1
    (entry,) = await queue.take("w1", 10, wait_s=0.05, redeliver_after_s=60)
    await queue.ack(entry)
    claimed = await store.save(state.evolve(runner="w1", claim=1))  # claimed: not queued
    assert not claimed.queued
    assert await queue.depth() == 0
    requeued = await store.save(claimed.evolve(runner=None, claim=2))  # queued again
    assert requeued.queued
    assert await take_all(queue, "w2") == [("t", 2)]


async def test_a_refused_write_queues_nothing(store: TaskStore) -> None:
    queue = the_queue(store)
    await store.create(queued("t"))
    state = await store.get("t")
    assert state is not None
    claimed = await store.save(state.evolve(runner="w1", claim=1))
    (entry,) = await queue.take("w1", 10, wait_s=0.05, redeliver_after_s=60)
    await queue.ack(entry)
    with pytest.raises(StoreConflict):  # a stale version
        await store.save(state.evolve(runner=None, claim=1))
    with pytest.raises(StoreConflict):  # a stale fence
        await store.save(claimed.evolve(runner=None, claim=2), fence=0)
    assert await queue.depth() == 0


async def test_an_ended_task_is_not_queued(store: TaskStore) -> None:
    from mcp_tasks_compat.core._model import TaskStatus

    queue = the_queue(store)
    ended = replace(queued("done"), task=replace(queued("done").task, status=TaskStatus.CANCELLED))
    assert not ended.queued
    await store.create(ended)
    assert await queue.depth() == 0


async def test_an_entry_never_acked_is_handed_again_past_the_bound(store: TaskStore, store_kind: str) -> None:
    queue = the_queue(store)
    await store.create(queued("t"))
    assert await take_all(queue, "dies", redeliver_after_s=0.2) == [("t", 0)]
    if store_kind == "memory":  # one process: a worker that took an entry lives as long as the store
        assert await take_all(queue, "other", redeliver_after_s=0.0) == []
        return
    assert await take_all(queue, "other", redeliver_after_s=60) == []  # not yet past its bound
    with anyio.fail_after(10):
        while not (again := await take_all(queue, "other", redeliver_after_s=0.2)):
            pass  # each take waits for the entry (0.05 s): this loop ends when the bound passed
    assert again == [("t", 0)]
    (entry,) = await queue.take("other", 10, wait_s=0.05, redeliver_after_s=0.0)
    await queue.ack(entry)
    assert await queue.depth() == 0
    assert await take_all(queue, "third", redeliver_after_s=0.0) == []


async def test_a_take_waits_for_an_entry_queued_meanwhile(store: TaskStore) -> None:
    queue = the_queue(store)
    found: list[tuple[str, int]] = []

    async def take() -> None:
        entries = await queue.take("w", 1, wait_s=5.0, redeliver_after_s=60)
        found.extend((entry.task_id, entry.claim) for entry in entries)

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(take)
            await anyio.wait_all_tasks_blocked()  # the take is waiting
            await store.create(queued("late"))
    assert found == [("late", 0)]
