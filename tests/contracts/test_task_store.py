"""The store contract (``_engine/store.py``'s module docstring), checked against every store kind.

Example tests pin each clause; a Hypothesis state machine then runs random sequences of every
call against a store and a plain dict, and the two must agree after every step. A state must come
back exactly as it went in: every field of the task (result, error, input requests, timestamps
to the microsecond) and of the state around it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from types import MappingProxyType
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule, run_state_machine_as_test

from mcp_tasks_compat._engine.stores import (
    EVERY_OWNER,
    ActiveLimitReached,
    StoreConflict,
    TaskState,
    TaskStore,
)
from mcp_tasks_compat.core._model import JsonRpcError, Task, TaskStatus
from mcp_tasks_compat.dialects import ALL_DIALECTS, DIALECT_2025_11_25, DIALECT_2026_07_28
from mcp_tasks_compat.errors import TaskStoreError

from .conftest import StoreFactory

T0 = datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=timezone.utc)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def make_state(
    task_id: str,
    *,
    owner: str | None = "alice",
    created: datetime = T0,
    expires: datetime | None = None,
    status: TaskStatus = TaskStatus.WORKING,
    runner: str | None = None,
    lease: datetime | None = None,
) -> TaskState:
    task = Task(task_id=task_id, status=status, created_at=created, last_updated_at=created)
    return TaskState(
        task=task,
        dialect=DIALECT_2026_07_28,
        owner=owner,
        tool_name="build",
        expires_at=expires,
        runner=runner,
        lease_until=lease,
    )


def rich_state(task_id: str = "rich") -> TaskState:
    """Every field set to something that is not its default."""
    task = Task(
        task_id=task_id,
        status=TaskStatus.INPUT_REQUIRED,
        created_at=datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=timezone.utc),
        last_updated_at=datetime(2026, 1, 2, 3, 4, 6, 999999, tzinfo=timezone.utc),
        ttl_ms=3_600_000,
        poll_interval_ms=250,
        status_message="waiting for the operator ✓",
        result={"content": [{"type": "text", "text": "half"}], "isError": False, "n": 1.5},
        error=JsonRpcError(-32000, "tool failure", {"why": ["disk", None, True]}),
        input_requests=MappingProxyType(
            {"k1": {"method": "elicitation/create", "params": {"message": "go on?", "schema": {}}}}
        ),
    )
    return TaskState(
        task=task,
        dialect=DIALECT_2025_11_25,
        owner="bob",
        tool_name="deploy",
        expires_at=datetime(2026, 1, 2, 4, 4, 5, 7, tzinfo=timezone.utc),
        input_responses=MappingProxyType({"k0": {"action": "accept", "content": {"ok": True}}}),
        input_serial=2,
        runner="replica-a",
        lease_until=datetime(2026, 1, 2, 3, 4, 35, 500000, tzinfo=timezone.utc),
        version=7,
        rerun=True,
        arguments={"target": "docs", "steps": [1, 2]},
        attempt=2,
        run_on="workers",
    )


async def all_pages(store: TaskStore, owner: Any = EVERY_OWNER, limit: int = 2) -> list[list[str]]:
    pages: list[list[str]] = []
    cursor: str | None = None
    while True:
        page, cursor = await store.list_tasks(owner=owner, cursor=cursor, limit=limit)
        pages.append([state.task_id for state in page])
        if cursor is None:
            return pages


# -- create and get --------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_store_says_whether_other_processes_share_it(
    store: TaskStore, store_has_leases: bool
) -> None:
    """``shared`` is what the engine reads to claim leases and follow the notifier: a store other
    processes can open says so, and it is exactly the one whose runs' leases can run out."""
    assert store.shared is store_has_leases


@pytest.mark.anyio
async def test_a_created_state_reads_back_with_every_field(store: TaskStore) -> None:
    state = rich_state()
    await store.create(state)
    assert await store.get("rich") == state


@pytest.mark.anyio
async def test_times_in_another_zone_read_back_as_the_same_instant(store: TaskStore) -> None:
    plus_two = timezone(timedelta(hours=2))
    state = make_state("zoned", created=datetime(2026, 5, 5, 14, 0, 0, 1, tzinfo=plus_two), expires=at(60))
    await store.create(state)
    found = await store.get("zoned")
    assert found is not None
    assert found.task.created_at == datetime(2026, 5, 5, 12, 0, 0, 1, tzinfo=timezone.utc)
    assert found.expires_at == at(60)


@pytest.mark.anyio
async def test_creating_an_id_that_exists_conflicts_and_keeps_the_first(store: TaskStore) -> None:
    first = make_state("t1", owner="alice")
    await store.create(first)
    with pytest.raises(StoreConflict) as caught:
        await store.create(make_state("t1", owner="mallory"))
    assert caught.value.current == first
    assert caught.value.task_id == "t1"
    assert await store.get("t1") == first


@pytest.mark.anyio
async def test_an_unknown_id_is_none(store: TaskStore) -> None:
    assert await store.get("nope") is None


@pytest.mark.anyio
async def test_open_twice_is_harmless(store: TaskStore) -> None:
    await store.create(make_state("t1"))
    await store.open()
    assert await store.get("t1") is not None


# -- save: compare and set -------------------------------------------------------------------------


@pytest.mark.anyio
async def test_save_writes_the_next_version_and_returns_it(store: TaskStore) -> None:
    await store.create(make_state("t1"))
    stored = await store.get("t1")
    assert stored is not None
    done = stored.evolve(task=stored.task.evolve(status=TaskStatus.COMPLETED, result={"content": []}))
    saved = await store.save(done)
    assert saved == done.evolve(version=stored.version + 1)
    assert await store.get("t1") == saved
    again = await store.save(saved.evolve(task=saved.task.evolve(status_message="kept")))
    assert again.version == stored.version + 2


@pytest.mark.anyio
async def test_a_stale_save_conflicts_with_what_is_stored(store: TaskStore) -> None:
    await store.create(make_state("t1"))
    original = await store.get("t1")
    assert original is not None
    winner = await store.save(original.evolve(runner="replica-a"))
    with pytest.raises(StoreConflict) as caught:
        await store.save(original.evolve(runner="replica-b"))
    assert caught.value.current == winner
    assert await store.get("t1") == winner


@pytest.mark.anyio
async def test_a_save_from_the_future_conflicts_too(store: TaskStore) -> None:
    await store.create(make_state("t1"))
    stored = await store.get("t1")
    assert stored is not None
    with pytest.raises(StoreConflict) as caught:
        await store.save(stored.evolve(version=stored.version + 5))
    assert caught.value.current == stored


@pytest.mark.anyio
async def test_saving_a_deleted_or_unknown_task_conflicts_with_none(store: TaskStore) -> None:
    await store.create(make_state("t1"))
    stored = await store.get("t1")
    assert stored is not None
    await store.delete("t1")
    with pytest.raises(StoreConflict) as caught:
        await store.save(stored)
    assert caught.value.current is None
    with pytest.raises(StoreConflict) as caught:
        await store.save(make_state("never"))
    assert caught.value.current is None
    assert await store.get("never") is None


# -- delete ----------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_delete_forgets_the_task_and_frees_its_id(store: TaskStore) -> None:
    await store.create(make_state("t1", expires=at(10)))
    await store.delete("t1")
    await store.delete("t1")  # deleting what is gone is not an error
    await store.delete("never")
    assert await store.get("t1") is None
    assert await store.due_for_expiry(at(100)) == []
    assert await store.next_expiry() is None
    assert await all_pages(store) == [[]]
    again = make_state("t1", owner="bob")
    await store.create(again)
    assert await store.get("t1") == again


# -- expiry ----------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_due_for_expiry_is_soonest_first_at_or_before_now(store: TaskStore) -> None:
    for name, deadline in [("late", at(30)), ("soon", at(10)), ("now", at(20)), ("future", at(21))]:
        await store.create(make_state(name, expires=deadline))
    await store.create(make_state("forever", expires=None))
    due = await store.due_for_expiry(at(20))
    assert [state.task_id for state in due] == ["soon", "now"]
    assert await store.due_for_expiry(at(9)) == []
    everything = await store.due_for_expiry(at(10_000))
    assert [state.task_id for state in everything] == ["soon", "now", "future", "late"]


@pytest.mark.anyio
async def test_due_for_expiry_stops_at_the_limit(store: TaskStore) -> None:
    for index in range(5):
        await store.create(make_state(f"t{index}", expires=at(index)))
    due = await store.due_for_expiry(at(100), limit=2)
    assert [state.task_id for state in due] == ["t0", "t1"]


@pytest.mark.anyio
async def test_a_saved_deadline_replaces_the_old_one(store: TaskStore) -> None:
    await store.create(make_state("moved", expires=at(5)))
    await store.create(make_state("kept", expires=at(50)))
    stored = await store.get("moved")
    assert stored is not None
    moved = await store.save(stored.evolve(expires_at=at(100)))
    assert await store.next_expiry() == at(50)
    assert [state.task_id for state in await store.due_for_expiry(at(60))] == ["kept"]
    assert await store.due_for_expiry(at(100)) == [await store.get("kept"), moved]
    await store.save(moved.evolve(expires_at=None))
    assert [state.task_id for state in await store.due_for_expiry(at(1_000))] == ["kept"]


@pytest.mark.anyio
async def test_next_expiry_is_the_soonest_deadline(store: TaskStore) -> None:
    assert await store.next_expiry() is None
    await store.create(make_state("forever"))
    assert await store.next_expiry() is None
    await store.create(make_state("b", expires=at(20)))
    await store.create(make_state("a", expires=at(10.5)))
    assert await store.next_expiry() == at(10.5)
    await store.delete("a")
    assert await store.next_expiry() == at(20)


# -- leases ----------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_lease_expired_finds_unfinished_work_of_a_silent_runner(
    store: TaskStore, store_has_leases: bool
) -> None:
    await store.create(make_state("lost", runner="a", lease=at(10)))
    await store.create(make_state("lost-now", runner="a", lease=at(20)))
    await store.create(make_state("renewed", runner="b", lease=at(40)))
    await store.create(make_state("finished", runner="a", lease=at(5), status=TaskStatus.COMPLETED))
    await store.create(make_state("cancelled", runner="a", lease=at(5), status=TaskStatus.CANCELLED))
    await store.create(make_state("unclaimed"))
    await store.create(make_state("waiting", runner="a", lease=at(1), status=TaskStatus.INPUT_REQUIRED))
    expired = await store.lease_expired(at(20))
    if store_has_leases:
        assert sorted(state.task_id for state in expired) == ["lost", "lost-now", "waiting"]
        assert len(await store.lease_expired(at(20), limit=1)) == 1
    else:
        assert expired == []  # one process: its own runs never lose their lease


@pytest.mark.anyio
async def test_a_saved_lease_or_ending_clears_the_claim(store: TaskStore, store_has_leases: bool) -> None:
    await store.create(make_state("renewed", runner="a", lease=at(10)))
    await store.create(make_state("ended", runner="a", lease=at(10)))
    renewed = await store.get("renewed")
    ended = await store.get("ended")
    assert renewed is not None
    assert ended is not None
    await store.save(renewed.evolve(lease_until=at(60)))
    await store.save(ended.evolve(task=ended.task.evolve(status=TaskStatus.FAILED)))
    assert await store.lease_expired(at(30)) == []
    expected = ["renewed"] if store_has_leases else []
    assert [state.task_id for state in await store.lease_expired(at(60))] == expected


# -- listing ---------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_list_pages_in_creation_order_and_ends_with_no_cursor(store: TaskStore) -> None:
    for offset in [5, 1, 3, 0, 4, 2, 6]:  # created out of order on purpose
        await store.create(make_state(f"t{offset}", created=at(offset)))
    assert await all_pages(store, limit=3) == [["t0", "t1", "t2"], ["t3", "t4", "t5"], ["t6"]]
    await store.delete("t6")
    assert await all_pages(store, limit=3) == [["t0", "t1", "t2"], ["t3", "t4", "t5"]]
    page, cursor = await store.list_tasks(limit=100)
    assert [state.task_id for state in page] == [f"t{index}" for index in range(6)]
    assert cursor is None
    assert page[0] == await store.get("t0")


@pytest.mark.anyio
async def test_tasks_created_in_the_same_microsecond_are_each_listed_once(store: TaskStore) -> None:
    for name in ["c", "a", "d", "b"]:
        await store.create(make_state(name, created=T0))
    assert await all_pages(store, limit=1) == [["a"], ["b"], ["c"], ["d"]]


@pytest.mark.anyio
async def test_count_active_counts_an_owners_unfinished_tasks_up_to_at_most(store: TaskStore) -> None:
    for index in range(4):
        await store.create(make_state(f"a{index}", owner="alice", created=at(index)))
    await store.create(make_state("done", owner="alice", created=at(9), status=TaskStatus.COMPLETED))
    await store.create(make_state("n1", owner=None, created=at(10)))
    await store.create(make_state("b1", owner="bob", created=at(11)))
    assert await store.count_active("alice", at_most=100) == 4  # the completed one is not counted
    assert await store.count_active("alice", at_most=3) == 3
    assert await store.count_active(None, at_most=100) == 1  # unowned is an owner of its own
    assert await store.count_active("nobody", at_most=100) == 0
    first = await store.get("a0")
    assert first is not None
    await store.save(first.evolve(task=first.task.evolve(status=TaskStatus.CANCELLED)))
    await store.delete("a1")
    assert await store.count_active("alice", at_most=100) == 2
    await store.delete("done")  # deleting a terminal task changes no count
    assert await store.count_active("alice", at_most=100) == 2
    assert await store.count_active("bob", at_most=100) == 1


@pytest.mark.anyio
async def test_a_create_within_a_limit_counts_the_owners_unfinished_tasks(store: TaskStore) -> None:
    for index in range(2):
        await store.create(make_state(f"a{index}", owner="alice", created=at(index)), active_limit=2)
    await store.create(make_state("done", owner="alice", created=at(5), status=TaskStatus.COMPLETED))
    with pytest.raises(ActiveLimitReached) as reached:
        await store.create(make_state("a2", owner="alice", created=at(6)), active_limit=2)
    assert reached.value.active == 2
    assert await store.get("a2") is None  # refused: nothing was written
    await store.create(make_state("b0", owner="bob", created=at(7)), active_limit=2)  # another owner
    await store.create(make_state("a3", owner="alice", created=at(8)), active_limit=3)
    first = await store.get("a0")
    assert first is not None
    await store.save(first.evolve(task=first.task.evolve(status=TaskStatus.CANCELLED)))
    await store.create(make_state("a4", owner="alice", created=at(9)), active_limit=3)  # a0 ended
    with pytest.raises(StoreConflict):  # an id that exists conflicts, limit or not
        await store.create(make_state("a4", owner="alice", created=at(9)), active_limit=100)
    assert await store.count_active("alice", at_most=100) == 3


@pytest.mark.anyio
async def test_a_state_saved_with_another_owner_moves_its_active_count(store: TaskStore) -> None:
    await store.create(make_state("t1", owner="alice"))
    created = await store.get("t1")
    assert created is not None
    await store.save(created.evolve(owner="bob"))
    assert await store.count_active("alice", at_most=10) == 0
    assert await store.count_active("bob", at_most=10) == 1


@pytest.mark.anyio
async def test_list_by_owner_unowned_or_every_owner(store: TaskStore) -> None:
    await store.create(make_state("a1", owner="alice", created=at(1)))
    await store.create(make_state("n1", owner=None, created=at(2)))
    await store.create(make_state("b1", owner="bob", created=at(3)))
    await store.create(make_state("a2", owner="alice", created=at(4)))
    await store.create(make_state("n2", owner=None, created=at(5)))
    assert await all_pages(store, owner="alice") == [["a1", "a2"]]
    assert await all_pages(store, owner=None) == [["n1", "n2"]]
    assert await all_pages(store, owner="nobody") == [[]]
    assert await all_pages(store, limit=10) == [["a1", "n1", "b1", "a2", "n2"]]
    default, cursor = await store.list_tasks()  # the default is every owner
    assert [state.task_id for state in default] == ["a1", "n1", "b1", "a2", "n2"]
    assert cursor is None


@pytest.mark.anyio
async def test_a_cursor_survives_the_deletion_of_its_pages_last_task(store: TaskStore) -> None:
    for index in range(5):
        await store.create(make_state(f"t{index}", created=at(index)))
    page, cursor = await store.list_tasks(limit=2)
    assert [state.task_id for state in page] == ["t0", "t1"]
    assert cursor is not None
    await store.delete("t1")
    await store.delete("t2")
    rest, end = await store.list_tasks(cursor=cursor, limit=10)
    assert [state.task_id for state in rest] == ["t3", "t4"]
    assert end is None


@pytest.mark.anyio
@pytest.mark.parametrize("cursor", ["garbage", "", "|t1", "2026-13-45T00:00:00Z|t1", "2026-01-01T00:00:00Z|"])
async def test_a_cursor_the_store_did_not_issue_is_a_store_error(store: TaskStore, cursor: str) -> None:
    await store.create(make_state("t1"))
    with pytest.raises(TaskStoreError, match="not a cursor"):
        await store.list_tasks(cursor=cursor)


# -- the state machine -----------------------------------------------------------------------------

IDS = st.sampled_from([f"task-{index}" for index in range(6)])
OWNERS = st.sampled_from(["alice", "bob", None])
# A narrow window of instants, microseconds included, so deadlines collide and straddle "now".
INSTANTS = st.integers(min_value=0, max_value=40).flatmap(
    lambda second: st.integers(min_value=0, max_value=2).map(
        lambda micro: at(second) + timedelta(microseconds=micro)
    )
)
JSON_SCALARS = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8)
JSON = st.recursive(
    JSON_SCALARS | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
JSON_OBJECTS = st.dictionaries(st.text(max_size=6), JSON, max_size=3)
# Unfinished work more often than not, so that lost leases come up.
STATUSES = st.sampled_from([TaskStatus.WORKING, TaskStatus.INPUT_REQUIRED]) | st.sampled_from(
    list(TaskStatus)
)


@st.composite
def states(draw: st.DrawFn, task_id: str) -> TaskState:
    created = draw(INSTANTS)
    task = Task(
        task_id=task_id,
        status=draw(STATUSES),
        created_at=created,
        last_updated_at=created + timedelta(microseconds=draw(st.integers(0, 10**7))),
        ttl_ms=draw(st.none() | st.integers(0, 10**9)),
        poll_interval_ms=draw(st.none() | st.integers(1, 10**5)),
        status_message=draw(st.none() | st.text(max_size=10)),
        result=draw(st.none() | JSON_OBJECTS),
        error=draw(
            st.none() | st.builds(JsonRpcError, st.integers(-33000, -32000), st.text(max_size=8), JSON)
        ),
        input_requests=MappingProxyType(draw(st.dictionaries(st.text(max_size=4), JSON_OBJECTS, max_size=2))),
    )
    return TaskState(
        task=task,
        dialect=draw(st.sampled_from(ALL_DIALECTS)),
        owner=draw(OWNERS),
        tool_name=draw(st.text(max_size=8)),
        expires_at=draw(st.none() | INSTANTS),
        input_responses=MappingProxyType(
            draw(st.dictionaries(st.text(max_size=4), JSON_OBJECTS, max_size=2))
        ),
        input_serial=draw(st.integers(0, 1000)),
        runner=draw(st.sampled_from(["replica-a", "replica-b", None])),
        lease_until=draw(st.none() | INSTANTS),
        version=draw(st.integers(0, 3)),
        rerun=draw(st.booleans()),
        arguments=draw(st.none() | JSON_OBJECTS),
        attempt=draw(st.integers(1, 101)),
        claim=draw(st.integers(0, 3)),
    )


class StoreMachine(RuleBasedStateMachine):
    """One store on its own event loop (a blocking portal) against ``model``: task id -> state."""

    def __init__(self, factory: StoreFactory, backend: str, has_leases: bool) -> None:
        super().__init__()
        self._portal_cm = start_blocking_portal(backend)
        self.portal: BlockingPortal = self._portal_cm.__enter__()
        self.store = factory()
        self.portal.call(self.store.open)
        self.has_leases = has_leases
        self.model: dict[str, TaskState] = {}

    def teardown(self) -> None:
        try:
            self.portal.call(self.store.close)
        finally:
            self._portal_cm.__exit__(None, None, None)

    def call(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        async def run() -> Any:
            return await method(*args, **kwargs)

        return self.portal.call(run)

    @rule(data=st.data(), task_id=IDS)
    def create(self, data: st.DataObject, task_id: str) -> None:
        state = data.draw(states(task_id))
        if task_id in self.model:
            with pytest.raises(StoreConflict) as caught:
                self.call(self.store.create, state)
            assert caught.value.current == self.model[task_id]
        else:
            self.call(self.store.create, state)
            self.model[task_id] = state

    @rule(task_id=IDS)
    def get(self, task_id: str) -> None:
        assert self.call(self.store.get, task_id) == self.model.get(task_id)

    @rule(
        data=st.data(),
        task_id=IDS,
        skew=st.sampled_from([0, 0, 0, -1, 1]),
        fence_skew=st.sampled_from([None, None, 0, 0, -1, 1]),
    )
    def save(self, data: st.DataObject, task_id: str, skew: int, fence_skew: int | None) -> None:
        """Save a new state over the stored one; ``skew`` != 0 is a stale (or made-up) version,
        ``fence_skew`` a run's write (``None``: not a run's) whose claim is the stored one (0) or
        not: a stale claim never writes, whatever its version."""
        current = self.model.get(task_id)
        version = (current.version if current is not None else data.draw(st.integers(0, 3))) + skew
        new = data.draw(states(task_id)).evolve(version=version)
        fence = None if fence_skew is None else (current.claim if current is not None else 0) + fence_skew
        if current is None or skew != 0 or fence_skew not in (None, 0):
            with pytest.raises(StoreConflict) as caught:
                self.call(self.store.save, new, fence=fence)
            assert caught.value.current == current
            return
        saved = self.call(self.store.save, new, fence=fence)
        assert saved == new.evolve(version=version + 1)
        self.model[task_id] = saved

    @rule(task_id=IDS)
    def delete(self, task_id: str) -> None:
        self.call(self.store.delete, task_id)
        self.model.pop(task_id, None)

    def edges(self) -> list[datetime]:
        """Every stored deadline and lease: the instants where "at or before now" is decided."""
        moments = {
            moment for state in self.model.values() for moment in (state.expires_at, state.lease_until)
        }
        return sorted(moment for moment in moments if moment is not None)

    @rule(now=INSTANTS, limit=st.integers(1, 4))
    def expiry_and_leases_at(self, now: datetime, limit: int) -> None:
        self.check_expiry_and_leases(now, limit)

    @rule(limit=st.integers(1, 4))
    def expiry_and_leases_at_every_edge(self, limit: int) -> None:
        for now in self.edges():
            self.check_expiry_and_leases(now, limit)

    def check_expiry_and_leases(self, now: datetime, limit: int) -> None:
        due = self.call(self.store.due_for_expiry, now, limit=limit)
        expected = sorted(
            (
                state
                for state in self.model.values()
                if state.expires_at is not None and state.expires_at <= now
            ),
            key=lambda state: (state.expires_at, state.task_id),
        )
        self._check_soonest_first(due, expected, limit, lambda state: state.expires_at)
        lost = self.call(self.store.lease_expired, now, limit=limit)
        if not self.has_leases:
            assert lost == []
            return
        expected = [
            state
            for state in self.model.values()
            if not state.is_terminal
            and state.runner is not None
            and state.lease_until is not None
            and state.lease_until <= now
        ]
        # The contract names no order for lost leases: any ``limit`` of them, each once.
        assert len(lost) == min(limit, len(expected))
        assert len({state.task_id for state in lost}) == len(lost)
        assert all(state in expected for state in lost)

    @rule()
    def next_expiry(self) -> None:
        deadlines = [state.expires_at for state in self.model.values() if state.expires_at is not None]
        assert self.call(self.store.next_expiry) == (min(deadlines) if deadlines else None)

    @staticmethod
    def _check_soonest_first(
        found: list[TaskState], expected: list[TaskState], limit: int, deadline: Callable[[TaskState], Any]
    ) -> None:
        """The first ``limit`` deadlines in order; among equal deadlines any order is the contract."""
        note(f"found {[state.task_id for state in found]}, expected {[state.task_id for state in expected]}")
        assert [deadline(state) for state in found] == [deadline(state) for state in expected[:limit]]
        assert len({state.task_id for state in found}) == len(found)
        assert all(state in expected for state in found)

    @rule(owner=st.sampled_from(["alice", "bob", None, EVERY_OWNER]), limit=st.integers(1, 4))
    def list_every_page(self, owner: Any, limit: int) -> None:
        listed: list[TaskState] = []
        cursor: str | None = None
        for _ in range(len(self.model) + 2):
            page, cursor = self.call(self.store.list_tasks, owner=owner, cursor=cursor, limit=limit)
            assert len(page) <= limit
            listed.extend(page)
            if cursor is None:
                break
        assert cursor is None
        expected = sorted(
            (state for state in self.model.values() if owner is EVERY_OWNER or state.owner == owner),
            key=lambda state: (state.task.created_at, state.task_id),
        )
        assert listed == expected


def test_a_store_agrees_with_a_dict(
    store_factory: StoreFactory, anyio_backend: str, store_has_leases: bool
) -> None:
    # Half the profile's examples (at least 25): every one opens a store (a file for SQLite).
    examples = max(25, settings.default.max_examples // 2)
    run_state_machine_as_test(
        lambda: StoreMachine(store_factory, anyio_backend, store_has_leases),
        settings=settings(settings.default, max_examples=examples),
    )
