"""How many round trips to redis-server a task costs on the hot path: create, finish, read.

Counted on the wire (every command or pipeline sent is one ``send_packed_command``), through a
real redis-server, with the engine's background (sweeper, leases, notifier) running: the figure
is asserted, not assumed. A round trip of the hot path's commands may carry the background's
too (concurrent commands share round trips); it is the hot path's if it carries one of its
commands. The save publishes its event from inside its script, the
sweeper is not woken by a create whose deadline comes after its next round, and leases are
checked on their own timer, and the per-owner limit is counted inside the create script, so a
task is three round trips with or without a limit; two when it is read back within a moment of
ending here, which needs no read (``records.LiveRecords.recently_ended``).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from typing import Any

import anyio
import anyio.abc
import pytest
from redis.asyncio.connection import AbstractConnection

from mcp_tasks_compat._engine import TaskEngine, records
from mcp_tasks_compat._engine.limits import TaskLimits
from mcp_tasks_compat._engine.stores import redis_link
from mcp_tasks_compat._engine.stores.redis import RedisTaskStore
from mcp_tasks_compat.core._model import TaskStatus
from mcp_tasks_compat.dialects import DIALECT_2026_07_28

pytestmark = pytest.mark.anyio

BOUND_S = 60  # an upper bound on any wait (redis-server is another process); these finish in milliseconds
TASKS = 20


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # redis-py is asyncio-only


_HOT_PATH: ContextVar[bool] = ContextVar("hot_path", default=False)
"""Set in the task doing the hot path; the runs it starts inherit it, the background does not."""
_HANDSHAKE: ContextVar[bool] = ContextVar("handshake", default=False)
_SHARED_TRIP: ContextVar[str | None] = ContextVar("shared_trip", default=None)
"""Whose a round trip of the hot path's link is (``hot``, ``background``), by the commands it carries."""


_SETUP_COMMANDS = (b"HELLO", b"CLIENT", b"SELECT", b"AUTH", b"PING", b"SUBSCRIBE")


def _is_setup(command: Any) -> bool:
    """Whether a packed command opens or checks a connection rather than doing a task's work."""
    packed = command if isinstance(command, (bytes, str)) else b"".join(bytes(part) for part in command)
    head = packed.encode() if isinstance(packed, str) else packed
    return any(f"\r\n{name.decode()}\r\n".encode() in head[:64] for name in _SETUP_COMMANDS)


@contextmanager
def counting_round_trips(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    """Round trips every redis-py connection of this process made meanwhile: ``hot`` those of the
    hot path (its task and the runs it started), ``background`` the others (sweeper, leases)."""
    sent = {"hot": 0, "background": 0, "handshake": 0}
    original_send = AbstractConnection.send_packed_command
    original_on_connect = AbstractConnection.on_connect
    original_packed = redis_link.packed
    original_round_trip = redis_link._round_trip
    hot_requests: list[bytes] = []  # packed by the hot path (compared by identity)

    def packed(command: Any) -> bytes:
        request = original_packed(command)
        if _HOT_PATH.get():
            hot_requests.append(request)
        return request

    async def round_trip(client: Any, requests: list[bytes]) -> list[Any]:
        hot = any(request is mine for request in requests for mine in hot_requests)
        token = _SHARED_TRIP.set("hot" if hot else "background")
        try:
            return await original_round_trip(client, requests)
        finally:
            _SHARED_TRIP.reset(token)

    async def send(self: AbstractConnection, command: Any, check_health: bool = True) -> None:
        if _HANDSHAKE.get() or _is_setup(command):
            sent["handshake"] += 1  # a new pooled connection's setup (HELLO, CLIENT ...), not a task's
        else:
            sent[_SHARED_TRIP.get() or ("hot" if _HOT_PATH.get() else "background")] += 1
        await original_send(self, command, check_health)

    async def on_connect(self: AbstractConnection, *args: Any, **kwargs: Any) -> None:
        token = _HANDSHAKE.set(True)
        try:
            await original_on_connect(self, *args, **kwargs)
        finally:
            _HANDSHAKE.reset(token)

    with monkeypatch.context() as patch:
        patch.setattr(AbstractConnection, "send_packed_command", send)
        patch.setattr(AbstractConnection, "on_connect", on_connect)
        patch.setattr(redis_link, "packed", packed)
        patch.setattr(redis_link, "_round_trip", round_trip)
        token = _HOT_PATH.set(True)
        try:
            yield sent
        finally:
            _HOT_PATH.reset(token)


@asynccontextmanager
async def serving(
    redis_url: str, limits: TaskLimits
) -> AsyncIterator[tuple[TaskEngine, anyio.abc.TaskGroup]]:
    store = RedisTaskStore(redis_url, prefix=f"test-{uuid.uuid4().hex[:12]}:")
    engine = TaskEngine(store=store, lease_s=3_600, limits=limits, ttl_floor_ms=0)
    try:
        async with engine.hosted(max_sleep_s=3_600) as host:  # rounds an hour apart: none while counting
            yield engine, host.runs
    finally:
        await store.close()


async def one_task(engine: TaskEngine, group: anyio.abc.TaskGroup) -> None:
    """Create, run to its end (the work returns at once) and read back one task."""

    async def work() -> Mapping[str, Any]:
        return {"content": [], "isError": False}

    record = await engine.create(dialect=DIALECT_2026_07_28, owner="alice", tool_name="job", ttl_ms=3_600_000)
    engine.start(record, work, group)
    with anyio.fail_after(BOUND_S):
        while not record.task.is_terminal:
            await record.changed.wait()
    task = await engine.get(record.task.task_id, "alice")
    assert task.status is TaskStatus.COMPLETED


@pytest.mark.parametrize(
    ("limit", "ended_kept_s", "round_trips"),
    [(None, records.ENDED_KEPT_S, 2), (1_000, records.ENDED_KEPT_S, 2), (None, -1.0, 3), (1_000, -1.0, 3)],
    ids=[
        "no-limit: create, finish (the read of the task that just ended here needs none)",
        "limit: the same (counted inside the create script)",
        "no-limit, read once the moment is over: create, finish, read",
        "limit, read once the moment is over: the same",
    ],
)
async def test_a_task_costs_three_round_trips_on_the_hot_path(
    redis_url: str, monkeypatch: pytest.MonkeyPatch, limit: int | None, ended_kept_s: float, round_trips: int
) -> None:
    monkeypatch.setattr(records, "ENDED_KEPT_S", ended_kept_s)
    async with serving(redis_url, TaskLimits(max_active_tasks_per_owner=limit)) as (engine, group):
        await one_task(engine, group)  # warm: scripts loaded, connections open
        with counting_round_trips(monkeypatch) as sent:
            for _ in range(TASKS):
                await one_task(engine, group)
        assert sent["hot"] == TASKS * round_trips
        # The background may still finish its first rounds (the recovery, the first sweep and
        # lease check), but a create does not wake it: it made two round trips per create before.
        assert sent["background"] < TASKS // 2
