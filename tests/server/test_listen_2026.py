"""``subscriptions/listen`` for task states (2026-07-28), SDK-free: what a stream agrees to and sends.
The mcp 2.x server tests (tests/server/v2/test_push_2026.py) keep routing and the wire over HTTP."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest
from tests.engine.shared_stores import SHARED_KINDS, StoreMaker, shared_store_maker

from mcp_tasks_compat._engine import TaskEngine, TaskPolicy
from mcp_tasks_compat._engine.stores import TaskState, TaskStore
from mcp_tasks_compat._server import (
    TaskListen2026,
    Tasks2026Service,
    asked_task_ids,
    asks_core_kinds,
    listen_2026,
    principal_id,
)
from mcp_tasks_compat.dialects import DIALECT_2026_07_28
from mcp_tasks_compat.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    PeerProtocolError,
)

from .fake_caller import FakeCaller

pytestmark = pytest.mark.anyio

ALICE = principal_id("client-a", None, "alice")
BOB = principal_id("client-a", None, "bob")


def listen() -> TaskListen2026:
    tasks = TaskPolicy(tools={"echo": "optional"})
    return TaskListen2026(tasks, Tasks2026Service(tasks))


def test_the_filter_is_read_from_wire_params() -> None:
    assert asked_task_ids({"notifications": {"taskIds": ["a", 1]}}) == ["a", 1]
    assert asked_task_ids({"notifications": {"toolsListChanged": True}}) is None
    assert asked_task_ids("not params") is None
    with pytest.raises(PeerProtocolError) as caught:
        asked_task_ids({"notifications": {"taskIds": "a"}})
    assert caught.value.jsonrpc_code == INVALID_PARAMS
    assert asks_core_kinds({"notifications": {"taskIds": [], "toolsListChanged": True}})
    assert not asks_core_kinds({"notifications": {"taskIds": []}})


async def test_a_stream_without_the_extension_is_refused_before_anything_is_agreed() -> None:
    with pytest.raises(PeerProtocolError) as caught:
        async with listen().open([], FakeCaller(ALICE), declares_tasks=False, subscription_id=1):
            raise AssertionError("opened")
    assert caught.value.jsonrpc_code == MISSING_REQUIRED_CLIENT_CAPABILITY


async def test_the_acknowledgement_agrees_to_the_callers_own_tasks_once_each() -> None:
    service = listen()
    engine = service._tasks.engine  # pyright: ignore[reportPrivateUsage]
    mine = await engine.create(dialect=DIALECT_2026_07_28, owner=ALICE, tool_name="echo", ttl_ms=None)
    theirs = await engine.create(dialect=DIALECT_2026_07_28, owner=BOB, tool_name="echo", ttl_ms=None)
    asked: list[object] = [mine.task.task_id, theirs.task.task_id, "unknown", 7, mine.task.task_id]
    async with service.open(asked, FakeCaller(ALICE), declares_tasks=True, subscription_id=5) as stream:
        ack = stream.acknowledgement()
    assert ack == {
        "method": "notifications/subscriptions/acknowledged",
        "params": {
            "notifications": {"taskIds": [mine.task.task_id]},
            "_meta": {"io.modelcontextprotocol/subscriptionId": 5},
        },
    }


async def test_each_agreed_task_is_pushed_now_and_on_each_change_until_it_ends() -> None:
    service = listen()
    engine = service._tasks.engine  # pyright: ignore[reportPrivateUsage]
    record = await engine.create(dialect=DIALECT_2026_07_28, owner=ALICE, tool_name="echo", ttl_ms=None)
    task_id = record.task.task_id
    sent: list[Mapping[str, Any]] = []
    first = anyio.Event()

    async def send(wire: Mapping[str, Any]) -> None:
        sent.append(wire)
        first.set()

    with anyio.fail_after(5):
        async with (
            service.open([task_id], FakeCaller(ALICE), declares_tasks=True, subscription_id="s") as stream,
            anyio.create_task_group() as group,
        ):
            group.start_soon(stream.push, send)
            await first.wait()
            await engine.cancel(task_id, ALICE, strict=False)
    statuses = [(wire["method"], wire["params"]["taskId"], wire["params"]["status"]) for wire in sent]
    assert statuses == [
        ("notifications/tasks", task_id, "working"),
        ("notifications/tasks", task_id, "cancelled"),
    ]
    assert all(wire["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "s" for wire in sent)


async def test_streams_past_the_limit_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(listen_2026, "MAX_STREAMS", 1)
    service = listen()
    async with service.open([], FakeCaller(ALICE), declares_tasks=True, subscription_id=1):
        with pytest.raises(PeerProtocolError) as caught:
            async with service.open([], FakeCaller(ALICE), declares_tasks=True, subscription_id=2):
                raise AssertionError("opened past the limit")
        assert (caught.value.jsonrpc_code, caught.value.message) == (
            INTERNAL_ERROR,
            "Subscription limit reached",
        )
    async with service.open([], FakeCaller(ALICE), declares_tasks=True, subscription_id=3):
        pass  # the first one closed: room again


@pytest.fixture(params=SHARED_KINDS)
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> StoreMaker:
    """A new store object on one shared store per call: one per process (this server, another)."""
    return shared_store_maker(request, tmp_path, prefix="listen")


class ChangedBehindTheRead:
    """A shared store whose read of ``task_id`` lets another process end the task once the state
    is read and before it is returned: the window between a stream's read and its watch, in which
    that process's event finds nothing held here (this server's notifier is not even running)."""

    def __init__(self, store: TaskStore, task_id: str, other: TaskEngine) -> None:
        self.store, self.task_id, self.other = store, task_id, other
        self.armed = True
        self.real_get = store.get

    async def get(self, task_id: str) -> TaskState | None:
        state = await self.real_get(task_id)
        if self.armed and task_id == self.task_id:
            self.armed = False
            await self.other.cancel(task_id, ALICE, strict=False)
        return state


async def test_a_change_made_elsewhere_between_the_streams_read_and_its_watch_is_pushed(
    make_store: StoreMaker,
) -> None:
    """The bench smoke's hang (issue 43): a task a worker ended while a stream was opening was
    pushed as still working and never again; the stream re-reads each task once it watches it."""
    elsewhere = TaskEngine(store=make_store())
    tasks = TaskPolicy(tools={"echo": "optional"}, store=make_store())
    here = TaskListen2026(tasks, Tasks2026Service(tasks))
    await elsewhere.open()
    await tasks.engine.open()
    record = await elsewhere.create(dialect=DIALECT_2026_07_28, owner=ALICE, tool_name="echo", ttl_ms=None)
    task_id = record.task.task_id
    store = tasks.engine.store
    hook = ChangedBehindTheRead(store, task_id, elsewhere)
    store.get = hook.get  # type: ignore[method-assign]  # this test's store, not the SDK
    sent: list[Mapping[str, Any]] = []
    ended = anyio.Event()

    async def send(wire: Mapping[str, Any]) -> None:
        sent.append(wire)
        if wire["params"]["status"] != "working":
            ended.set()

    try:
        with anyio.fail_after(5):
            async with (
                here.open([task_id], FakeCaller(ALICE), declares_tasks=True, subscription_id=1) as stream,
                anyio.create_task_group() as group,
            ):
                assert not hook.armed  # the change happened behind the stream's read
                group.start_soon(stream.push, send)
                await ended.wait()
    finally:
        await elsewhere.store.close()
        await store.close()
    assert [wire["params"]["status"] for wire in sent] == ["cancelled"]
