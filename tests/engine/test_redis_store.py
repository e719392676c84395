"""The Redis task store and notifier against a real redis-server (the session's, one prefix per test).

Each clause of the store contract (``_engine/stores/contract.py``), the Redis-only promises (key TTLs, two
replicas' pools sharing one server, one CAS winner under a race, events across instances), and
what happens when Redis goes away and comes back. No sleeps: every wait is bounded by
``fail_after`` and ends on an event or an answer.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime, timedelta, timezone
from typing import Any, cast
from urllib.parse import urlsplit

import anyio
import pytest
from tests.redis_server import redis_server

from mcp_tasks_compat._engine.stores import EVERY_OWNER, StoreConflict, StoreEvent, TaskState, TaskStore
from mcp_tasks_compat._engine.stores.redis import KEY_TTL_MARGIN, RedisTaskStore
from mcp_tasks_compat.core._model import Task, TaskStatus
from mcp_tasks_compat.dialects import DIALECT_2025_11_25, DIALECT_2026_07_28
from mcp_tasks_compat.errors import TaskStoreError

pytestmark = pytest.mark.anyio

BOUND_S = 60  # an upper bound on any wait (redis-server is another process); these finish in milliseconds
NOW = datetime.now(timezone.utc).replace(microsecond=0)


def make_state(
    task_id: str,
    *,
    created: datetime = NOW,
    owner: str | None = "alice",
    expires_in: timedelta | None = timedelta(hours=1),
    status: TaskStatus = TaskStatus.WORKING,
    runner: str | None = None,
    lease_until: datetime | None = None,
) -> TaskState:
    task = Task(task_id=task_id, status=status, created_at=created, last_updated_at=created)
    return TaskState(
        task=task,
        dialect=DIALECT_2026_07_28,
        owner=owner,
        tool_name="build",
        expires_at=None if expires_in is None else created + expires_in,
        runner=runner,
        lease_until=lease_until,
    )


async def open_store(url: str, prefix: str) -> RedisTaskStore:
    store = RedisTaskStore(url, prefix=prefix)
    await store.open()
    return store


@pytest.fixture
def prefix() -> str:
    return f"test-{uuid.uuid4().hex[:12]}:"


@pytest.fixture
async def store(redis_url: str, prefix: str) -> AsyncIterator[RedisTaskStore]:
    opened = await open_store(redis_url, prefix)
    yield opened
    await opened.close()


@pytest.fixture
async def replica(redis_url: str, prefix: str) -> AsyncIterator[RedisTaskStore]:
    """A second store on the same server and prefix, with its own connection pool (another replica)."""
    opened = await open_store(redis_url, prefix)
    yield opened
    await opened.close()


def test_it_is_a_task_store() -> None:
    typed: TaskStore = RedisTaskStore("redis://127.0.0.1:6379/0")
    assert typed.describe == "redis://127.0.0.1:6379/0"


def test_describe_hides_the_password() -> None:
    store = RedisTaskStore("redis://ops:s3cret@10.0.0.5:6380/2")
    assert store.describe == "redis://ops:***@10.0.0.5:6380/2"
    assert "s3cret" not in store.describe


def test_a_url_that_is_not_redis_is_refused() -> None:
    with pytest.raises(TaskStoreError, match="not a Redis URL"):
        RedisTaskStore("sqlite:///tasks.db")


# -- create, get, save, delete ---------------------------------------------------------------------


async def test_create_then_get_round_trips(store: RedisTaskStore) -> None:
    state = make_state("t1", owner=None, runner="replica-a", lease_until=NOW + timedelta(seconds=30))
    state = state.evolve(dialect=DIALECT_2025_11_25, input_responses={"q1": {"action": "accept"}}, rerun=True)
    await store.create(state)
    assert await store.get("t1") == state
    assert await store.get("unknown") is None


async def test_create_of_an_existing_id_conflicts_and_keeps_the_first(store: RedisTaskStore) -> None:
    first = make_state("t1")
    await store.create(first)
    with pytest.raises(StoreConflict) as conflict:
        await store.create(make_state("t1", owner="mallory"))
    assert conflict.value.current == first
    assert await store.get("t1") == first


async def test_save_is_a_compare_and_set(store: RedisTaskStore) -> None:
    created = make_state("t1")
    await store.create(created)
    done = created.evolve(task=created.task.evolve(status=TaskStatus.COMPLETED))
    saved = await store.save(done)
    assert saved.version == created.version + 1
    assert await store.get("t1") == saved

    with pytest.raises(StoreConflict) as stale:
        await store.save(done)  # the version it was read at is gone
    assert stale.value.current == saved
    assert await store.get("t1") == saved


async def test_save_of_a_deleted_task_conflicts_with_nothing(store: RedisTaskStore) -> None:
    created = make_state("t1")
    await store.create(created)
    await store.delete("t1")
    with pytest.raises(StoreConflict) as gone:
        await store.save(created)
    assert gone.value.current is None
    assert await store.get("t1") is None


async def test_delete_removes_the_task_and_its_index_entries(store: RedisTaskStore) -> None:
    lease = NOW - timedelta(seconds=1)
    await store.create(make_state("t1", runner="replica-a", lease_until=lease))
    await store.delete("t1")
    await store.delete("t1")  # deleting what is gone is no error
    assert await store.get("t1") is None
    assert await store.due_for_expiry(NOW + timedelta(days=1)) == []
    assert await store.next_expiry() is None
    assert await store.lease_expired(NOW) == []
    assert await store.list_tasks() == ([], None)
    assert await store.list_tasks(owner="alice") == ([], None)
    assert await store.connection().keys(f"{store.channel.removesuffix('events')}*") == []


async def test_a_state_that_changes_owner_moves_between_owner_lists(store: RedisTaskStore) -> None:
    created = make_state("t1", owner="alice")
    await store.create(created)
    await store.save(created.evolve(owner="bob"))
    assert await store.list_tasks(owner="alice") == ([], None)
    page, _ = await store.list_tasks(owner="bob")
    assert [state.task_id for state in page] == ["t1"]


# -- expiry and leases ---------------------------------------------------------------------------------


async def test_due_for_expiry_is_soonest_first_bounded_and_skips_what_is_not_due(
    store: RedisTaskStore,
) -> None:
    for task_id, minutes in [("late", 30), ("soon", 5), ("never", None), ("mid", 10), ("tie-b", 10)]:
        expires = None if minutes is None else timedelta(minutes=minutes)
        await store.create(make_state(task_id, expires_in=expires))
    assert await store.next_expiry() == NOW + timedelta(minutes=5)
    due = await store.due_for_expiry(NOW + timedelta(minutes=10))
    assert [state.task_id for state in due] == ["soon", "mid", "tie-b"]  # equal deadlines by id
    limited = await store.due_for_expiry(NOW + timedelta(days=1), limit=2)
    assert [state.task_id for state in limited] == ["soon", "mid"]
    assert await store.due_for_expiry(NOW + timedelta(minutes=4)) == []


async def test_a_saved_deadline_moves_the_task_in_the_expiry_order(store: RedisTaskStore) -> None:
    created = make_state("t1", expires_in=timedelta(minutes=5))
    await store.create(created)
    later = await store.save(created.evolve(expires_at=NOW + timedelta(minutes=50)))
    assert await store.next_expiry() == NOW + timedelta(minutes=50)
    assert await store.due_for_expiry(NOW + timedelta(minutes=10)) == []
    await store.save(later.evolve(expires_at=None))
    assert await store.next_expiry() is None


async def test_lease_expired_returns_running_tasks_whose_lease_ran_out(store: RedisTaskStore) -> None:
    await store.create(make_state("lapsed", runner="a", lease_until=NOW - timedelta(seconds=5)))
    await store.create(make_state("held", runner="a", lease_until=NOW + timedelta(seconds=30)))
    await store.create(make_state("nobody", runner=None, lease_until=NOW - timedelta(seconds=5)))
    finished = make_state(
        "finished", status=TaskStatus.COMPLETED, runner="a", lease_until=NOW - timedelta(seconds=5)
    )
    await store.create(finished)
    assert [state.task_id for state in await store.lease_expired(NOW)] == ["lapsed"]

    renewed = await store.get("lapsed")
    assert renewed is not None
    renewed = await store.save(renewed.evolve(lease_until=NOW + timedelta(minutes=1)))
    assert await store.lease_expired(NOW) == []
    done = renewed.task.evolve(status=TaskStatus.FAILED)
    await store.save(renewed.evolve(task=done))
    later = await store.lease_expired(NOW + timedelta(hours=1))
    assert [state.task_id for state in later] == ["held"]  # "lapsed" is terminal: no lease to lose


async def test_the_key_ttl_follows_the_deadline(store: RedisTaskStore) -> None:
    soon = datetime.now(timezone.utc) + timedelta(minutes=10)
    created = make_state("t1")
    await store.create(created.evolve(expires_at=soon))
    client = store.connection()
    key = f"{store.channel.removesuffix('events')}task:t1"
    ttl_ms = cast("int", await client.pttl(key))
    margin_ms = KEY_TTL_MARGIN // timedelta(milliseconds=1)
    assert 0 < ttl_ms <= 10 * 60_000 + margin_ms
    assert ttl_ms > 10 * 60_000  # the margin lets the replicas sweep it before Redis drops it

    current = await store.get("t1")
    assert current is not None
    await store.save(current.evolve(expires_at=None))
    assert await client.pttl(key) == -1  # no deadline, no TTL (the contract's "never")


async def test_entries_of_a_task_redis_expired_are_skipped_and_dropped(store: RedisTaskStore) -> None:
    lapsed = NOW - timedelta(seconds=1)
    await store.create(make_state("gone", created=NOW, runner="a", lease_until=lapsed))
    await store.create(make_state("kept", created=NOW + timedelta(seconds=1), expires_in=timedelta(hours=2)))
    client = store.connection()
    base = store.channel.removesuffix("events")
    await client.delete(f"{base}task:gone")  # what Redis does when the key's TTL runs out

    assert await store.next_expiry() == NOW + timedelta(seconds=1, hours=2)
    assert [state.task_id for state in await store.due_for_expiry(NOW + timedelta(days=1))] == ["kept"]
    assert await store.lease_expired(NOW) == []
    page, cursor = await store.list_tasks(limit=1)
    assert ([state.task_id for state in page], cursor) == (["kept"], None)
    assert await client.zscore(f"{base}expiry", "gone") is None
    assert await client.zscore(f"{base}leases", "gone") is None
    assert await client.zcard(f"{base}order:*") == 1
    # The per-owner count skips (and drops) the member whose hash is gone.
    assert await store.count_active("alice", at_most=10) == 1
    assert await client.smembers(f"{base}active:=alice") == {"kept"}


async def test_data_that_is_not_a_task_state_is_a_store_error(store: RedisTaskStore) -> None:
    base = store.channel.removesuffix("events")
    await store.connection().hset(f"{base}task:odd", mapping={"data": '{"schema": 99}', "version": "0"})
    with pytest.raises(TaskStoreError, match=r"task:odd .* not a task state"):
        await store.get("odd")


# -- listing ------------------------------------------------------------------------------------------


async def test_list_pages_in_creation_order_per_owner(store: RedisTaskStore) -> None:
    owners = ["alice", None, "bob", "alice", None, "alice", "alice"]
    for index, owner in enumerate(owners):
        await store.create(make_state(f"t{index}", created=NOW + timedelta(seconds=index), owner=owner))
    await store.create(make_state("t3-twin", created=NOW + timedelta(seconds=3), owner="alice"))

    async def every_page(owner: object, limit: int) -> list[list[str]]:
        pages: list[list[str]] = []
        cursor: str | None = None
        while True:
            page, cursor = await store.list_tasks(owner=cast("Any", owner), cursor=cursor, limit=limit)
            pages.append([state.task_id for state in page])
            if cursor is None:
                return pages

    assert await every_page("alice", 2) == [["t0", "t3"], ["t3-twin", "t5"], ["t6"]]
    assert await every_page(None, 2) == [["t1", "t4"]]  # unowned, not everyone's
    assert await every_page("bob", 5) == [["t2"]]
    assert await every_page("carol", 5) == [[]]
    everyone = await every_page(EVERY_OWNER, 3)
    assert everyone == [["t0", "t1", "t2"], ["t3", "t3-twin", "t4"], ["t5", "t6"]]


async def test_a_cursor_survives_deletion_of_the_task_it_ended_on(store: RedisTaskStore) -> None:
    for index in range(5):
        await store.create(make_state(f"t{index}", created=NOW + timedelta(seconds=index)))
    page, cursor = await store.list_tasks(limit=2)
    assert [state.task_id for state in page] == ["t0", "t1"]
    await store.delete("t1")
    await store.delete("t2")
    page, cursor = await store.list_tasks(cursor=cursor, limit=2)
    assert ([state.task_id for state in page], cursor) == (["t3", "t4"], None)


async def test_a_cursor_it_did_not_issue_is_a_store_error(store: RedisTaskStore) -> None:
    with pytest.raises(TaskStoreError, match="not a cursor"):
        await store.list_tasks(cursor="garbage")


# -- two replicas ---------------------------------------------------------------------------------------


async def test_two_instances_see_each_others_writes(store: RedisTaskStore, replica: RedisTaskStore) -> None:
    created = make_state("t1")
    await store.create(created)
    seen = await replica.get("t1")
    assert seen == created
    saved = await replica.save(created.evolve(task=created.task.evolve(status=TaskStatus.CANCELLED)))
    assert await store.get("t1") == saved
    with pytest.raises(StoreConflict):
        await store.save(created)  # the first replica's copy is stale now


async def test_a_cas_race_between_replicas_has_exactly_one_winner(
    store: RedisTaskStore, replica: RedisTaskStore
) -> None:
    created = make_state("t1")
    await store.create(created)
    winners: list[TaskState] = []
    losers: list[StoreConflict] = []

    async def finish(instance: RedisTaskStore, index: int) -> None:
        attempt = created.evolve(task=created.task.evolve(status_message=f"attempt {index}"))
        try:
            winners.append(await instance.save(attempt))
        except StoreConflict as conflict:
            losers.append(conflict)

    with anyio.fail_after(BOUND_S):
        async with anyio.create_task_group() as group:
            for index in range(20):
                group.start_soon(finish, (store, replica)[index % 2], index)
    assert len(winners) == 1
    assert len(losers) == 19
    assert all(conflict.current == winners[0] for conflict in losers)
    assert await replica.get("t1") == winners[0]


# -- the notifier -----------------------------------------------------------------------------------------


async def test_an_event_published_by_one_instance_reaches_a_subscriber_of_another(
    store: RedisTaskStore, replica: RedisTaskStore
) -> None:
    sent = [StoreEvent("t1", "replica-a"), StoreEvent("t2", "replica-a")]
    with anyio.fail_after(BOUND_S):
        async with replica.notifier.subscribe() as events:
            await store.connection().publish(replica.channel, "not json")  # skipped
            await store.connection().publish(
                replica.channel, '{"kind": "changed", "task": "t1"}'
            )  # no origin
            for event in sent:
                await store.notifier.publish(event)
            received = [await anext(events), await anext(events)]
    assert received == sent


async def test_events_read_and_read_by_a_replica_of_the_release_before(
    store: RedisTaskStore, replica: RedisTaskStore
) -> None:
    """A rolling upgrade: the release before sent a ``kind`` (changed, cancel or input) and read
    only messages with one of those; both re-read the task whatever the kind."""
    older = [
        '{"kind": "cancel", "task": "t1", "origin": "old"}',
        '{"kind": "input", "task": "t2", "origin": "old"}',
    ]
    with anyio.fail_after(BOUND_S):
        async with replica.notifier.subscribe() as events:
            for message in older:
                await store.connection().publish(replica.channel, message)
            received = [await anext(events), await anext(events)]
        assert received == [StoreEvent("t1", "old"), StoreEvent("t2", "old")]

        pubsub = store.connection().pubsub()
        await pubsub.subscribe(store.channel)
        try:
            await next_message_of_type(pubsub, "subscribe")  # subscribed before anything is published
            await store.notifier.publish(StoreEvent("t3", "new"))
            message = await next_message_of_type(pubsub, "message")
            assert json.loads(message["data"]) == {"kind": "changed", "task": "t3", "origin": "new"}
        finally:
            await pubsub.aclose()


async def next_message_of_type(pubsub: Any, kind: str) -> dict[str, Any]:
    """The next pub/sub reply of type ``kind`` (``subscribe``, ``message``), others skipped."""
    while True:
        reply = await pubsub.get_message(timeout=BOUND_S)
        if reply is not None and reply["type"] == kind:
            return cast("dict[str, Any]", reply)


async def test_each_prefix_has_its_own_channel(redis_url: str, store: RedisTaskStore) -> None:
    other = await open_store(redis_url, "someone-else:")
    try:
        with anyio.fail_after(BOUND_S):
            async with store.notifier.subscribe() as events:
                await other.notifier.publish(StoreEvent("theirs", "x"))
                await store.notifier.publish(StoreEvent("ours", "y"))
                assert (await anext(events)).task_id == "ours"
    finally:
        await other.close()


# -- Redis going away and coming back ----------------------------------------------------------------


async def test_redis_down_is_a_clear_store_error_and_the_store_recovers(prefix: str) -> None:
    with redis_server() as server:
        store = await open_store(server.url, prefix)
        try:
            await store.create(make_state("t1"))
            with anyio.fail_after(BOUND_S):
                async with store.notifier.subscribe() as events:
                    server.stop()
                    with pytest.raises(TaskStoreError, match="does not answer"):
                        await anext(events)

            operations: list[Callable[[], Awaitable[object]]] = [
                lambda: store.get("t1"),
                lambda: store.create(make_state("t2")),
                lambda: store.save(make_state("t1")),
                lambda: store.delete("t1"),
                lambda: store.due_for_expiry(NOW),
                store.next_expiry,
                lambda: store.lease_expired(NOW),
                store.list_tasks,
                lambda: store.notifier.publish(StoreEvent("t1", "a")),
            ]
            for operation in operations:
                with pytest.raises(TaskStoreError) as down:
                    await operation()
                message = str(down.value)
                assert server.url in message
                assert "start redis-server" in message

            server.start()  # the same port, empty (no persistence in the tests)
            assert await store.get("t1") is None
            await store.create(make_state("t3"))
            assert await store.get("t3") is not None
            with anyio.fail_after(BOUND_S):
                async with store.notifier.subscribe() as events:
                    await store.notifier.publish(StoreEvent("t3", "a"))
                    assert (await anext(events)).task_id == "t3"
        finally:
            await store.close()


async def test_after_a_redis_restart_no_pooled_connection_fails_its_next_command(prefix: str) -> None:
    """Connections opened to the Redis that went away are dropped at the first error, not left to
    fail one request each once Redis is back."""
    with redis_server() as server:
        store = await open_store(server.url, prefix)
        try:
            await store.create(make_state("t1"))
            with anyio.fail_after(BOUND_S):
                async with anyio.create_task_group() as group:  # several connections in the pool
                    for _ in range(4):
                        group.start_soon(store.get, "t1")
            server.stop()
            with pytest.raises(TaskStoreError, match="does not answer"):
                await store.get("t1")
            server.start()
            with anyio.fail_after(BOUND_S):
                async with anyio.create_task_group() as group:
                    for _ in range(4):
                        group.start_soon(store.get, "t1")
        finally:
            await store.close()


async def test_open_fails_clearly_when_nothing_listens() -> None:
    with redis_server() as server:
        url = server.url
        server.stop()
        store = RedisTaskStore(url)
        with pytest.raises(TaskStoreError, match=r"does not answer .*start redis-server, or check the URL"):
            await store.open()
        with pytest.raises(TaskStoreError, match="not open"):
            await store.get("t1")


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_open_under_trio_says_asyncio_is_needed() -> None:
    store = RedisTaskStore("redis://127.0.0.1:6379/0")
    with pytest.raises(TaskStoreError, match="needs an asyncio event loop"):
        await store.open()


# -- a replica given as the store ----------------------------------------------------------------------


async def test_a_replica_is_refused_at_open_naming_its_primary(redis_url: str, prefix: str) -> None:
    """A replica answers PING and reads; each write would fail in the Lua script's words."""
    primary = urlsplit(redis_url).port
    with redis_server(replica_of=primary) as replica:
        store = RedisTaskStore(replica.url, prefix=prefix)
        with pytest.raises(TaskStoreError) as refused:
            await store.open()
        message = refused.value.message
        assert message.startswith(f"the Redis task store {replica.url} is a replica of 127.0.0.1:{primary}")
        assert message.endswith("point the store at that primary instead")
        with pytest.raises(TaskStoreError, match="not open"):
            await store.get("t1")


async def test_a_primary_made_a_replica_later_says_so_without_lua_internals(prefix: str) -> None:
    """A failover can turn the primary into a replica under a running server: its writes are
    refused with what happened and the fix, not the script's error."""
    with redis_server() as primary, redis_server() as demoted:
        store = await open_store(demoted.url, prefix)
        try:
            await store.create(make_state("t1"))
            await store.connection().execute_command("REPLICAOF", "127.0.0.1", primary.port)  # pyright: ignore[reportUnknownMemberType]
            with pytest.raises(TaskStoreError) as refused:
                await store.create(make_state("t2"))
            message = refused.value.message
            assert "is now a read-only replica" in message, message
            assert "script" not in message, message
        finally:
            await store.close()
