"""Limits per owner and exact errors for hostile input, on both majors and every dialect they serve.

The 2025-11-25 wire checks speak raw JSON-RPC lines to ``mcp-tasks-compat example-server`` over
stdio (the same on both majors); the owner checks go through the public client in memory.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from mcp_tasks_compat._engine import TaskEngine, UnknownTask
from mcp_tasks_compat._engine.limits import MAX_SAFE_INTEGER, TaskLimits, echoed_id
from mcp_tasks_compat._engine.stores import InMemoryTaskStore
from mcp_tasks_compat._server import task_not_found
from mcp_tasks_compat._testkit.sessions import connect_in_memory
from mcp_tasks_compat.client import start_tool
from mcp_tasks_compat.core._model import TaskStatus
from mcp_tasks_compat.dialects import DIALECT_2025_11_25, DIALECT_2026_07_28, Dialect
from mcp_tasks_compat.errors import INVALID_PARAMS, INVALID_REQUEST, PeerProtocolError, TaskStoreError
from mcp_tasks_compat.testing import build_task_server, dialects

from .harness import StdioPeer, stdio_peer

pytestmark = pytest.mark.anyio

BOUND = 60.0
LONG = {"text": "held", "seconds": 30.0, "steps": 1}


@asynccontextmanager
async def example_server(*options: str) -> AsyncIterator[StdioPeer]:
    command = [sys.executable, "-m", "mcp_tasks_compat", "example-server", *options]
    async with stdio_peer(command) as peer:
        await peer.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        )
        await peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        yield peer


def create(text: str = "x", *, ttl: Any = 60_000, arguments: Any = None) -> dict[str, Any]:
    args = {"text": text, "seconds": 30.0, "steps": 1} if arguments is None else arguments
    return {"name": "slow_echo", "arguments": args, "task": {"ttl": ttl}}


def error_of(frame: dict[str, Any]) -> dict[str, Any]:
    assert "error" in frame, frame
    error: dict[str, Any] = frame["error"]
    assert "Traceback" not in error["message"]
    return error


async def test_2025_wire_limits_and_exact_errors() -> None:
    with anyio.fail_after(BOUND):
        async with example_server("--max-active-tasks", "2") as peer:
            first = (await peer.request("tools/call", create()))["result"]["task"]
            await peer.request("tools/call", create())
            refused = error_of(await peer.request("tools/call", create()))
            assert refused["code"] == INVALID_REQUEST
            assert "max_active_tasks_per_owner" in refused["message"]
            assert "--max-active-tasks" in refused["message"]
            # the session lives on, and a new task is accepted once one ends
            cancelled = await peer.request("tasks/cancel", {"taskId": first["taskId"]})
            assert cancelled["result"]["status"] == "cancelled"
            third = (await peer.request("tools/call", create()))["result"]["task"]
            assert third["status"] == "working"

            # TTLs: capped (never above 2**53 - 1), a negative one refused
            huge = error_of(await peer.request("tools/call", create(ttl=-1)))
            assert huge["code"] == INVALID_PARAMS
            await peer.request("tasks/cancel", {"taskId": third["taskId"]})
            capped = (await peer.request("tools/call", create(ttl=2**62)))["result"]["task"]
            assert capped["ttl"] <= MAX_SAFE_INTEGER
            assert capped["ttl"] == TaskLimits().max_ttl_ms

            # an unknown 1 MB id comes back as a short prefix
            unknown = error_of(await peer.request("tasks/get", {"taskId": "z" * 1_000_000}))
            assert unknown["code"] == INVALID_PARAMS
            assert len(unknown["message"]) < 300

            # ... and so does a 100 kB tool name (found by tests/fuzz)
            long_name = {"name": "n" * 100_000, "arguments": {}, "task": {}}
            named = error_of(await peer.request("tools/call", long_name))
            assert len(named["message"]) < 300

            # tasks/list with a cursor this server never issued
            bad_cursor = error_of(await peer.request("tasks/list", {"cursor": "never-issued"}))
            assert bad_cursor["code"] == INVALID_PARAMS
            listed = (await peer.request("tasks/list", {}))["result"]["tasks"]
            for task in listed:  # free the owner's slots: only the malformed call is under test
                await peer.request("tasks/cancel", {"taskId": task["taskId"]})

            # malformed arguments with params.task: refused at once, no task created
            malformed = error_of(await peer.request("tools/call", create(arguments=[1])))
            assert malformed["code"] == INVALID_PARAMS
            after = (await peer.request("tasks/list", {}))["result"]["tasks"]
            assert len(after) == len(listed)


@pytest.mark.parametrize("dialect", dialects())
async def test_active_limit_is_per_owner_and_frees_up(dialect: Dialect) -> None:
    server = build_task_server(max_active_tasks_per_owner=2)
    with anyio.fail_after(BOUND):
        async with (
            connect_in_memory(server, dialect=dialect) as mine,
            connect_in_memory(server, dialect=dialect) as other,
        ):
            runs = [await start_tool(mine, "slow_echo", LONG) for _ in range(2)]
            with pytest.raises(Exception, match="max_active_tasks_per_owner") as refused:
                await start_tool(mine, "slow_echo", LONG)
            assert "Traceback" not in str(refused.value)
            if dialect == DIALECT_2025_11_25:
                # the owner is the session: another session is not affected
                async with await start_tool(other, "slow_echo", LONG) as theirs:
                    assert theirs.task_id is not None
            else:
                # unauthenticated 2026-07-28: the whole server is one owner
                with pytest.raises(Exception, match="max_active_tasks_per_owner"):
                    await start_tool(other, "slow_echo", LONG)
            ended = await runs[0].cancel()
            assert ended is not None
            assert ended.status is TaskStatus.CANCELLED
            async with await start_tool(mine, "slow_echo", LONG) as again:
                assert again.task_id is not None
            await runs[1].cancel()


async def test_no_active_limit_counts_nothing() -> None:
    # None means no limit: the store is never asked to count (a store without an index of active
    # tasks would otherwise pay for it on every create).
    class NeverCount(InMemoryTaskStore):
        async def create(self, state: Any, *, active_limit: int | None = None) -> None:
            assert active_limit is None, "asked to count although there is no limit"
            await super().create(state)

        async def count_active(self, owner: str | None, *, at_most: int) -> int:
            raise AssertionError("counted although there is no limit")

    engine = TaskEngine(store=NeverCount(), limits=TaskLimits(max_active_tasks_per_owner=None))
    for _ in range(3):
        await engine.create(dialect=DIALECT_2026_07_28, owner=None, tool_name="t", ttl_ms=None)
    assert len(await engine.reader.owned_by(None)) == 3


def test_a_store_whose_create_cannot_count_is_refused_where_the_server_is_built() -> None:
    """A custom store written before ``create`` took ``active_limit`` would fail at its first
    create; it is refused at construction instead, with the fix."""

    class OldStore(InMemoryTaskStore):
        async def create(self, state: Any) -> None:  # pyright: ignore[reportIncompatibleMethodOverride]
            await super().create(state)

    with pytest.raises(TypeError, match=r"OldStore.*active_limit.*ActiveLimitReached"):
        TaskEngine(store=OldStore())
    with pytest.raises(TypeError, match="active_limit"):
        build_task_server(store=OldStore())


def test_a_store_whose_save_cannot_fence_is_refused_where_the_server_is_built() -> None:
    """A custom store whose ``save`` predates the fencing token would let a replica paused past
    its lease overwrite the run that replaced it; it is refused at construction, with the fix."""

    class UnfencedStore(InMemoryTaskStore):
        async def save(self, state: Any) -> Any:  # pyright: ignore[reportIncompatibleMethodOverride]
            return await super().save(state)

    with pytest.raises(TypeError, match=r"UnfencedStore.*fence.*StoreConflict"):
        TaskEngine(store=UnfencedStore())
    with pytest.raises(TypeError, match="fence"):
        build_task_server(store=UnfencedStore())


def test_ttl_bounds() -> None:
    engine = TaskEngine(ttl_floor_ms=1_000)
    assert engine.effective_ttl(10**30, requested=True) == TaskLimits().max_ttl_ms
    assert engine.effective_ttl(None, requested=True) == TaskLimits().max_ttl_ms
    assert engine.effective_ttl(5, requested=True) == 1_000
    with pytest.raises(PeerProtocolError) as negative:
        engine.effective_ttl(-1, requested=True)
    assert negative.value.jsonrpc_code == INVALID_PARAMS
    uncapped = TaskEngine(limits=TaskLimits(max_ttl_ms=None))
    assert uncapped.effective_ttl(None, requested=True) is None
    assert uncapped.effective_ttl(2**80, requested=True) == MAX_SAFE_INTEGER
    with pytest.raises(ValueError, match="2\\*\\*53"):
        TaskLimits(max_ttl_ms=2**53)
    with pytest.raises(ValueError, match="max_active_tasks_per_owner"):
        TaskLimits(max_active_tasks_per_owner=0)


def test_echoed_ids_are_bounded() -> None:
    assert echoed_id("short") == "short"
    echoed = echoed_id("x" * 1_000_000)
    assert len(echoed) < 100
    assert "1000000 characters" in echoed
    with pytest.raises(UnknownTask) as caught:
        TaskLimits().check_task_id("y" * 257)
    assert caught.value.detail == "task ids are at most 256 characters"
    assert task_not_found(caught.value).message.endswith("(task ids are at most 256 characters)")


@pytest.fixture(params=["sqlite", "redis"])
def shared_store_factory(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    """Makes stores that share one place (two replicas' view of the same tasks)."""
    if request.param == "sqlite":
        from mcp_tasks_compat._engine import SqliteTaskStore

        path = str(tmp_path / "tasks.db")
        return lambda: SqliteTaskStore(path)
    from mcp_tasks_compat._engine.stores.redis import RedisTaskStore

    url = request.getfixturevalue("redis_url")
    prefix = f"limits-{request.node.name}:"
    return lambda: RedisTaskStore(url, prefix=prefix)


@pytest.mark.parametrize("dialect", dialects())
async def test_active_limit_is_counted_in_a_shared_store(dialect: Dialect, shared_store_factory: Any) -> None:
    first = build_task_server(max_active_tasks_per_owner=2, store=shared_store_factory())
    second = build_task_server(max_active_tasks_per_owner=2, store=shared_store_factory())
    with anyio.fail_after(BOUND):
        async with (
            connect_in_memory(first, dialect=dialect) as mine,
            connect_in_memory(second, dialect=dialect) as replica,
        ):
            runs = [await start_tool(mine, "slow_echo", LONG) for _ in range(2)]
            with pytest.raises(Exception, match="max_active_tasks_per_owner"):
                await start_tool(mine, "slow_echo", LONG)
            if dialect != DIALECT_2025_11_25:
                # unauthenticated 2026-07-28: one owner, counted on every replica of the store
                with pytest.raises(Exception, match="max_active_tasks_per_owner"):
                    await start_tool(replica, "slow_echo", LONG)
            for run in runs:
                await run.cancel()


async def test_concurrent_creations_cannot_overshoot_the_active_limit(shared_store_factory: Any) -> None:
    """40 creations of one owner at once against a limit of 30, through two replicas of one shared
    store (20 each): the store counts and inserts in one step, so at most 30 are admitted in all
    (all 40 were once; 30 per replica before the count moved into the store's create)."""
    limits = TaskLimits(max_active_tasks_per_owner=30)
    replicas = [TaskEngine(store=shared_store_factory(), limits=limits) for _ in range(2)]
    for engine in replicas:
        await engine.open()
    admitted: list[str] = []
    refused: list[PeerProtocolError] = []

    async def create_one(engine: TaskEngine) -> None:
        try:
            record = await engine.create(
                dialect=DIALECT_2026_07_28, owner="batch", tool_name="slow_echo", ttl_ms=60_000
            )
        except PeerProtocolError as exc:
            refused.append(exc)
        else:
            admitted.append(record.task.task_id)

    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as group:
            for index in range(40):
                group.start_soon(create_one, replicas[index % 2])
    assert len(admitted) + len(refused) == 40
    assert len(admitted) == 30  # nothing else holds tasks of this owner: exactly the limit
    assert await replicas[0].store.count_active("batch", at_most=100) == 30
    assert all(exc.jsonrpc_code == INVALID_REQUEST for exc in refused)
    assert all("30 of at most 30" in str(exc) for exc in refused)
    for engine in replicas:
        await engine.store.close()


class _StoreDownOnce(InMemoryTaskStore):
    """A store whose first create fails as an unreachable store's does."""

    def __init__(self) -> None:
        super().__init__()
        self.failed = False

    async def create(self, state: Any, *, active_limit: int | None = None) -> None:
        if not self.failed:
            self.failed = True
            raise TaskStoreError("the task store is unreachable")
        await super().create(state, active_limit=active_limit)


async def test_a_creation_the_store_refused_no_longer_counts_against_the_limit() -> None:
    """A creation that failed (store down) must not count, or the owner would be refused for
    tasks it does not have."""
    engine = TaskEngine(store=_StoreDownOnce(), limits=TaskLimits(max_active_tasks_per_owner=1))

    async def create() -> Any:
        return await engine.create(
            dialect=DIALECT_2026_07_28, owner="o", tool_name="slow_echo", ttl_ms=60_000
        )

    with pytest.raises(TaskStoreError):
        await create()
    created = await create()  # admitted: the failed one is not counted
    assert created.task.status is TaskStatus.WORKING
    with pytest.raises(PeerProtocolError, match="max_active_tasks_per_owner"):
        await create()
