"""Concurrent commands of the Redis store share round trips, and each caller still gets its own answer.

While one round trip is out, the commands issued meanwhile wait and go out together
(``RedisLink.execute``). What must not change with it: each caller's reply or error is its own
(a conflict, a refused command, a script Redis lost), a caller cancelled while it waits leaves
the others answered, and a closed store or a Redis that went away answers every waiting caller
with a :class:`TaskStoreError` rather than leaving it waiting. Against a real redis-server; a
round trip is held out by a gate in the test, never by a sleep.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
import pytest
from redis.asyncio.connection import AbstractConnection
from tests.engine.test_redis_store import make_state, open_store
from tests.redis_server import redis_server

from mcp_tasks_compat._engine.stores import StoreConflict, redis_link
from mcp_tasks_compat._engine.stores.redis import RedisTaskStore
from mcp_tasks_compat._engine.stores.redis_link import packed, packed_here
from mcp_tasks_compat.errors import TaskStoreError

pytestmark = pytest.mark.anyio

BOUND_S = 60  # an upper bound on any wait (redis-server is another process); these finish in milliseconds
CALLERS = 40


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # redis-py is asyncio-only


@pytest.fixture
async def store(redis_url: str) -> AsyncIterator[RedisTaskStore]:
    opened = await open_store(redis_url, f"test-{uuid.uuid4().hex[:12]}:")
    yield opened
    await opened.close()


@contextmanager
def counting_sends(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Every ``send_packed_command`` of this process meanwhile, as the commands each carried."""
    sends: list[int] = []
    original = AbstractConnection.send_packed_command

    async def send(self: AbstractConnection, command: Any, check_health: bool = True) -> None:
        data = command if isinstance(command, bytes) else b"".join(bytes(part) for part in command)
        sends.append(data.count(b"*", 0, 1) + data.count(b"\r\n*"))  # arrays at the top level
        await original(self, command, check_health)

    with monkeypatch.context() as patch:
        patch.setattr(AbstractConnection, "send_packed_command", send)
        yield sends


@asynccontextmanager
async def round_trips_held(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[tuple[anyio.Event, anyio.Event]]:
    """Every round trip of the store's hot path waits for ``release``; ``out`` is set once one waits."""
    out, release = anyio.Event(), anyio.Event()
    original = redis_link._round_trip

    async def held(client: Any, requests: list[bytes]) -> list[Any]:
        out.set()
        await release.wait()
        return await original(client, requests)

    with monkeypatch.context() as patch:
        patch.setattr(redis_link, "_round_trip", held)
        yield out, release


@pytest.mark.parametrize("pack", [packed, packed_here], ids=["hiredis when installed", "ours"])
def test_a_command_is_packed_as_redis_py_packs_it(pack: Callable[[tuple[str | int, ...]], bytes]) -> None:
    """Our packing is the protocol redis-py speaks (its ``pack_command``), text and numbers alike,
    with hiredis's packer (when installed) and without."""
    from redis.asyncio.connection import Connection

    command = ("EVALSHA", "abc", 2, "k:1", "k:é", "", 1_764_723_000_000_000, '{"a": "b\r\nc"}')
    assert pack(command) == b"".join(Connection().pack_command(*command))


async def test_concurrent_commands_share_round_trips_and_each_caller_gets_its_own_answer(
    store: RedisTaskStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken = make_state("taken")
    await store.create(taken)
    conflicts: list[StoreConflict] = []

    async def create(task_id: str) -> None:
        try:
            await store.create(make_state(task_id))
        except StoreConflict as conflict:
            conflicts.append(conflict)

    with counting_sends(monkeypatch) as sends, anyio.fail_after(BOUND_S):
        async with anyio.create_task_group() as group:
            for index in range(CALLERS):
                group.start_soon(create, f"t{index}")
            group.start_soon(create, "taken")
    assert sum(sends) == CALLERS + 1  # every command sent once
    assert len(sends) < (CALLERS + 1) / 4  # in far fewer round trips
    assert [conflict.task_id for conflict in conflicts] == ["taken"]
    assert conflicts[0].current == taken
    for index in range(CALLERS):
        assert await store.get(f"t{index}") == make_state(f"t{index}")


async def test_a_refused_command_in_a_batch_fails_its_caller_only(
    store: RedisTaskStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    link = store._link  # pyright: ignore[reportPrivateUsage]
    await store.create(make_state("t1"))
    answers: dict[str, object] = {}

    async def ask(name: str, *command: str | int) -> None:
        try:
            answers[name] = await link.execute(*command)
        except TaskStoreError as error:
            answers[name] = error

    async with round_trips_held(monkeypatch) as (out, release):
        with anyio.fail_after(BOUND_S):
            async with anyio.create_task_group() as group:
                group.start_soon(ask, "alone", "PING")
                await out.wait()  # the first is out: the next ones wait, then share one round trip
                group.start_soon(ask, "before", "HGET", store._keys.task("t1"), "version")  # pyright: ignore[reportPrivateUsage]
                group.start_soon(ask, "refused", "HGET", "only-a-key")
                group.start_soon(ask, "after", "EXISTS", store._keys.task("t1"))  # pyright: ignore[reportPrivateUsage]
                await wait_until_queued(link, 3)
                release.set()
    assert answers["alone"] == "PONG"
    assert answers["before"] == "0"
    assert answers["after"] == 1
    refused = answers["refused"]
    assert isinstance(refused, TaskStoreError)
    assert "refused a command" in str(refused)
    assert "wrong number of arguments" in str(refused)


async def test_scripts_redis_lost_are_loaded_again_and_every_command_of_the_batch_runs_once(
    store: RedisTaskStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await store.create(make_state("warm"))
    await store.connection().script_flush()  # pyright: ignore[reportUnknownMemberType]
    with counting_sends(monkeypatch) as sends, anyio.fail_after(BOUND_S):
        async with anyio.create_task_group() as group:
            for index in range(CALLERS):
                group.start_soon(store.create, make_state(f"t{index}"))
    for index in range(CALLERS):
        assert await store.get(f"t{index}") == make_state(f"t{index}")
    assert len(sends) < CALLERS / 2  # the scripts are loaded once per round trip that missed them


async def test_a_caller_cancelled_while_it_waits_leaves_the_others_answered(
    store: RedisTaskStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    link = store._link  # pyright: ignore[reportPrivateUsage]
    answers: dict[str, object] = {}

    async def ask(name: str, *command: str | int) -> None:
        answers[name] = await link.execute(*command)

    async with round_trips_held(monkeypatch) as (out, release):
        with anyio.fail_after(BOUND_S):
            async with anyio.create_task_group() as group:
                group.start_soon(ask, "alone", "PING")
                await out.wait()
                group.start_soon(ask, "kept", "ECHO", "kept")
                async with anyio.create_task_group() as cancelled:
                    cancelled.start_soon(ask, "cancelled", "ECHO", "cancelled")
                    await wait_until_queued(link, 2)
                    cancelled.cancel_scope.cancel()
                release.set()
    assert answers == {"alone": "PONG", "kept": "kept"}
    assert await link.execute("ECHO", "still") == "still"


async def test_closing_the_store_answers_every_waiting_caller(
    store: RedisTaskStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    link = store._link  # pyright: ignore[reportPrivateUsage]
    errors: list[TaskStoreError] = []

    async def ask(*command: str | int) -> None:
        try:
            await link.execute(*command)
        except TaskStoreError as error:
            errors.append(error)

    async with round_trips_held(monkeypatch) as (out, release):
        with anyio.fail_after(BOUND_S):
            async with anyio.create_task_group() as group:
                group.start_soon(ask, "PING")
                await out.wait()
                for _ in range(3):
                    group.start_soon(ask, "PING")
                await wait_until_queued(link, 3)
                await store.close()
                assert len(errors) == 3
                assert all(f"the Redis task store {store.describe} was closed" in str(e) for e in errors)
                release.set()  # the one that was out ends too, answered or not


async def test_redis_gone_mid_batch_is_a_store_error_for_each_caller_and_the_next_ones_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with redis_server() as server:
        store = await open_store(server.url, "gone:")
        try:
            await store.create(make_state("t1"))
            errors: list[TaskStoreError] = []

            async def read() -> None:
                try:
                    await store.get("t1")
                except TaskStoreError as error:
                    errors.append(error)

            async with round_trips_held(monkeypatch) as (out, release):
                with anyio.fail_after(BOUND_S):
                    async with anyio.create_task_group() as group:
                        for _ in range(5):
                            group.start_soon(read)
                        await out.wait()
                        await wait_until_queued(store._link, 4)  # pyright: ignore[reportPrivateUsage]
                        server.stop()
                        release.set()
            assert len(errors) == 5
            assert all("does not answer" in str(error) for error in errors)
            server.start()  # empty, without the scripts: loaded again on the first create
            with anyio.fail_after(BOUND_S):
                async with anyio.create_task_group() as group:
                    for index in range(5):
                        group.start_soon(store.create, make_state(f"n{index}"))
            assert await store.get("n4") == make_state("n4")
        finally:
            await store.close()


async def wait_until_queued(link: redis_link.RedisLink, count: int) -> None:
    """Until ``count`` commands wait for the round trip that is out (checked once per loop turn)."""
    while len(link._queued) < count:  # pyright: ignore[reportPrivateUsage]
        await anyio.lowlevel.checkpoint()


async def test_a_round_trip_carries_at_most_the_batch_limit_and_the_rest_go_next(
    store: RedisTaskStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    link = store._link  # pyright: ignore[reportPrivateUsage]
    monkeypatch.setattr(redis_link, "BATCH_LIMIT", 4)
    answers: list[object] = []

    async def echo(index: int) -> None:
        answers.append(await link.execute("ECHO", str(index)))

    with counting_sends(monkeypatch) as sends, anyio.fail_after(BOUND_S):
        async with round_trips_held(monkeypatch) as (out, release), anyio.create_task_group() as group:
            group.start_soon(echo, 0)
            await out.wait()
            for index in range(1, 11):
                group.start_soon(echo, index)
            await wait_until_queued(link, 10)
            release.set()
    assert sorted(answers, key=int) == [str(index) for index in range(11)]
    assert sends == [1, 4, 4, 2]
