"""The engine's one store layer (``_engine/stores/delegating.py``, issue 41 item 7): every operation
of the store contract and of its workers' queue is handed on and told to the hooks, which nest.

On a real SQLite file, with hooks that write down what they are told (the contract suite runs the
whole store contract through the layer: ``tests/contracts/conftest.py``, kind ``layered``).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from tests.contracts.test_task_store import T0, make_state

from mcp_tasks_compat._engine.stores import EVERY_OWNER, InMemoryTaskStore, SqliteTaskStore, StoreConflict
from mcp_tasks_compat._engine.stores.delegating import OPERATIONS, DelegatingStore, StoreOperation, delegating
from mcp_tasks_compat._engine.stores.queue import queue_of

pytestmark = pytest.mark.anyio


class Told:
    """A hook writing down what it is told, in one list shared by the hooks of a test."""

    def __init__(self, name: str, told: list[str]) -> None:
        self.name = name
        self.told = told

    def before(self, operation: StoreOperation) -> str:
        self.told.append(f"{self.name} before {operation.name}")
        return self.name

    def succeeded(self, operation: StoreOperation, mark: str) -> None:
        assert mark == self.name
        self.told.append(f"{self.name} succeeded {operation.name}")

    def raised(self, operation: StoreOperation, mark: str, exc: BaseException) -> None:
        assert mark == self.name
        self.told.append(f"{self.name} raised {operation.name} {type(exc).__name__}")


def test_a_layer_without_hooks_is_the_store_itself() -> None:
    store = InMemoryTaskStore()
    assert delegating(store, None, None) is store


async def test_every_operation_is_handed_on_and_told_to_the_hooks_which_nest(tmp_path: Path) -> None:
    told: list[str] = []
    store = delegating(SqliteTaskStore(tmp_path / "tasks.db"), Told("outer", told), Told("inner", told))
    assert isinstance(store, DelegatingStore)
    queue = queue_of(store)
    assert queue is not None
    await store.open()
    try:
        await store.create(replace(make_state("t1"), run_on="workers"), active_limit=10)
        state = await store.get("t1")
        assert state is not None
        await store.save(state.evolve(input_serial=1))
        assert await store.count_active("alice", at_most=10) == 1
        assert await store.due_for_expiry(T0) == []
        await store.next_expiry()
        assert await store.lease_expired(T0) == []
        assert len((await store.list_tasks(owner=EVERY_OWNER))[0]) == 1
        assert await queue.depth() == 1
        (entry,) = await queue.take("worker", 1, wait_s=0.05, redeliver_after_s=30)
        await queue.ack(entry)
        await store.delete("t1")
    finally:
        await store.close()
    named = {operation.name for operation in OPERATIONS}
    assert {line.split()[-1] for line in told} == named  # each one told, none missed
    assert told[:4] == [
        "outer before open",
        "inner before open",
        "inner succeeded open",
        "outer succeeded open",
    ]


async def test_an_operation_that_raises_is_told_as_raised(tmp_path: Path) -> None:
    told: list[str] = []
    store = delegating(SqliteTaskStore(tmp_path / "tasks.db"), Told("outer", told), Told("inner", told))
    await store.open()
    try:
        await store.create(make_state("t1"))
        stale = make_state("t1")  # version 0: the stored one moved on
        await store.save(stale)
        told.clear()
        with pytest.raises(StoreConflict):
            await store.save(stale)
    finally:
        await store.close()
    assert told == [
        "outer before save",
        "inner before save",
        "inner raised save StoreConflict",
        "outer raised save StoreConflict",
    ]
