"""The push link (SDK-free, every major): which streams it opens, what they cover, when it gives up."""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
import pytest

from mcp_tasks_compat._client import PushLink, RemoteError
from mcp_tasks_compat._client.push import (
    ACK_TIMEOUT_SECONDS,
    BATCH_SECONDS_PER_TASK,
    MAX_ACK_TIMEOUT_SECONDS,
    MAX_REOPENS,
)
from mcp_tasks_compat.core._model import Task

pytestmark = pytest.mark.anyio


@dataclass
class Stream:
    task_ids: list[str]
    end: anyio.Event = field(default_factory=anyio.Event)
    error: BaseException | None = None
    closed: bool = False


@dataclass
class FakeServer:
    """Records each listen the link opens; the test acknowledges, refuses or drops them."""

    streams: list[Stream] = field(default_factory=lambda: list[Stream]())
    opened: anyio.Event = field(default_factory=anyio.Event)

    async def open(self, stream_id: str, task_ids: Sequence[str]) -> None:
        stream = Stream(list(task_ids))
        self.streams.append(stream)
        event, self.opened = self.opened, anyio.Event()
        event.set()
        try:
            await stream.end.wait()
        finally:
            stream.closed = True
        if stream.error is not None:
            raise stream.error

    async def next_open(self, count: int) -> Stream:
        with anyio.fail_after(5):
            while len(self.streams) < count:
                await self.opened.wait()
        return self.streams[count - 1]


def spawner(group: anyio.abc.TaskGroup) -> Callable[[Callable[[], Coroutine[Any, Any, None]]], object]:
    return group.start_soon


def nothing(task: Task) -> None:
    del task


async def test_a_task_followed_later_gets_a_new_stream_and_the_old_one_closes_after_its_ack() -> None:
    server = FakeServer()
    async with anyio.create_task_group() as group:
        link = PushLink(server.open, spawner(group))
        link.follow("a", nothing, lambda: None)
        first = await server.next_open(1)
        assert first.task_ids == ["a"]
        assert not link.covers("a")
        assert link.acknowledged("sub-1", ["a"])
        assert link.covers("a")
        link.follow("b", nothing, lambda: None)
        second = await server.next_open(2)
        assert second.task_ids == ["a", "b"]
        assert link.covers("a")
        assert not link.covers("b")
        assert link.acknowledged("sub-2", ["a", "b"])
        assert link.covers("b")
        await anyio.wait_all_tasks_blocked()
        assert first.closed
        assert not second.closed
        group.cancel_scope.cancel()


async def test_a_refusal_stops_asking_on_this_connection() -> None:
    server = FakeServer()
    wakes: list[str] = []
    async with anyio.create_task_group() as group:
        link = PushLink(server.open, spawner(group))
        link.follow("a", nothing, lambda: wakes.append("a"))
        stream = await server.next_open(1)
        stream.error = RemoteError(-32601, "Method not found")
        stream.end.set()
        await anyio.wait_all_tasks_blocked()
        assert link.refused is not None
        assert "-32601" in link.refused
        link.follow("b", nothing, lambda: None)
        await anyio.wait_all_tasks_blocked()
        assert len(server.streams) == 1
        group.cancel_scope.cancel()


async def test_an_ack_without_task_ids_means_the_server_does_not_push() -> None:
    server = FakeServer()
    async with anyio.create_task_group() as group:
        link = PushLink(server.open, spawner(group))
        link.follow("a", nothing, lambda: None)
        await server.next_open(1)
        assert link.acknowledged("sub-1", None)
        assert not link.covers("a")
        assert link.refused is not None
        group.cancel_scope.cancel()


async def test_a_dropped_stream_wakes_its_followers_and_is_opened_again_a_few_times() -> None:
    server = FakeServer()
    wakes: list[str] = []
    async with anyio.create_task_group() as group:
        link = PushLink(server.open, spawner(group))
        link.follow("a", nothing, lambda: wakes.append("a"))
        for opened in range(1, MAX_REOPENS + 2):
            stream = await server.next_open(opened)
            assert link.acknowledged(f"sub-{opened}", ["a"])
            assert link.covers("a")
            stream.error = OSError("connection reset")
            stream.end.set()
            await anyio.wait_all_tasks_blocked()
        assert len(server.streams) == MAX_REOPENS + 1  # then no more until the next task
        assert not link.covers("a")
        assert wakes  # the follower was told, so it polls at once
        group.cancel_scope.cancel()


async def test_the_stream_closes_when_nothing_is_followed() -> None:
    server = FakeServer()
    async with anyio.create_task_group() as group:
        link = PushLink(server.open, spawner(group))
        unfollow = link.follow("a", nothing, lambda: None)
        stream = await server.next_open(1)
        link.acknowledged("sub-1", ["a"])
        unfollow()
        await anyio.wait_all_tasks_blocked()
        assert stream.closed
        assert link.refused is None
        group.cancel_scope.cancel()


async def test_pushed_states_reach_the_tasks_listener() -> None:
    server = FakeServer()
    seen: list[Task] = []
    async with anyio.create_task_group() as group:
        link = PushLink(server.open, spawner(group))
        link.follow("a", seen.append, lambda: None)
        base = {"createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:01Z", "ttlMs": None}
        link.deliver({"taskId": "a", "status": "completed", "result": {"content": []}, **base})
        link.deliver({"taskId": "b", "status": "working", **base})  # nobody follows it
        link.deliver({"taskId": 7})  # malformed: ignored
        group.cancel_scope.cancel()
    assert [(task.task_id, task.status.value, task.result) for task in seen] == [
        ("a", "completed", {"content": []})
    ]


async def test_tasks_followed_one_after_another_share_few_streams_and_wait_without_polling() -> None:
    """A session creating tasks one after another while following them (issue 43): a replacement
    is batched, never one stream per task; a task waiting for it is pushed (not polled)."""
    server = FakeServer()
    count = 40
    async with anyio.create_task_group() as group:
        link = PushLink(server.open, spawner(group))
        acked = 0

        async def ack_what_opened() -> None:
            nonlocal acked
            await anyio.wait_all_tasks_blocked()
            while acked < len(server.streams):
                acked += 1
                assert link.acknowledged(f"sub-{acked}", server.streams[acked - 1].task_ids)

        for index in range(count):
            link.follow(f"t{index}", nothing, lambda: None)
            if acked:  # the server has shown it pushes: a task waiting for a stream is not polled
                assert link.pushes(f"t{index}")
            await ack_what_opened()
        with anyio.fail_after(5):
            while not all(link.covers(f"t{index}") for index in range(count)):
                await server.next_open(acked + 1)
                await ack_what_opened()
        await anyio.wait_all_tasks_blocked()  # the replaced streams close
        assert len(server.streams) <= count // 2, [len(stream.task_ids) for stream in server.streams]
        assert [stream.closed for stream in server.streams].count(False) == 1  # one stream per session
        group.cancel_scope.cancel()


async def test_a_late_ack_is_asked_again_with_a_longer_bound_and_push_comes_back() -> None:
    """A stream not acknowledged in time (a loaded server) is not a refusal: the link asks again
    with the bound doubled, and the next ack covers the tasks again (issue 43)."""
    server = FakeServer()
    async with anyio.create_task_group() as group:
        link = PushLink(server.open, spawner(group))
        link.ack_bound = 0.05  # the first stream times out at once, whatever the machine's load
        link.follow("a", nothing, lambda: None)
        first = await server.next_open(1)
        second = await server.next_open(2)  # asked again, not given up
        await anyio.wait_all_tasks_blocked()
        assert first.closed
        assert link.refused is None
        assert 0.1 <= link.ack_bound <= MAX_ACK_TIMEOUT_SECONDS
        assert second.task_ids == ["a"]
        assert link.acknowledged("sub-2", ["a"])
        assert link.covers("a")
        assert link.ack_bound == ACK_TIMEOUT_SECONDS  # a quick ack brings the bound back down
        group.cancel_scope.cancel()


async def test_a_replacement_waits_longer_the_more_tasks_it_would_re_read() -> None:
    """Each replacement re-reads every task it asks for: one more task next to many covered
    waits a window that grows with them; as many new tasks as covered open one at once."""
    server = FakeServer()
    covered = 80
    async with anyio.create_task_group() as group:
        link = PushLink(server.open, spawner(group))
        for index in range(covered):
            link.follow(f"t{index}", nothing, lambda: None)
        first = await server.next_open(1)
        assert link.acknowledged("sub-1", first.task_ids)
        assert len(first.task_ids) == covered
        began = anyio.current_time()
        link.follow("late", nothing, lambda: None)
        second = await server.next_open(2)
        assert anyio.current_time() - began >= 0.9 * BATCH_SECONDS_PER_TASK * covered  # not 50 ms
        assert link.pushes("late")  # waiting for its stream, it is not polled meanwhile
        assert link.acknowledged("sub-2", second.task_ids)
        for index in range(covered + 1):  # as many again as covered: the window is cut short
            link.follow(f"u{index}", nothing, lambda: None)
        await anyio.wait_all_tasks_blocked()
        assert len(server.streams) == 3
        assert len(server.streams[2].task_ids) == 2 * (covered + 1)
        group.cancel_scope.cancel()
