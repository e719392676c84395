"""A 2025-11-25 client polls only as a watchdog once the server has shown it pushes statuses.

Against the project's own server (``slow_echo`` reports a status per step, each sent as a
``notifications/tasks/status``), with an ``on_status`` listener: the statuses reach the listener
from the notifications, the result through the pending ``tasks/result``, and ``tasks/get`` goes
out about once a second from the first notification on, instead of at the hint's pace; before
that, while only a listener is served, no faster than ``STATUS_POLL_SECONDS`` (a young task's
quick result comes through ``tasks/result`` anyway). A transport that drops those notifications
stands for a server that does not push: the client keeps polling at the hint's pace there, so the
statuses still arrive, the last one included (the result arrives first: one ``tasks/get`` learns
the status the task ended with).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from mcp_tasks_compat._adapters import get_adapter
from mcp_tasks_compat._client.follow_2025 import STATUS_POLL_SECONDS
from mcp_tasks_compat._client_api import session_kwargs, with_tasks
from mcp_tasks_compat.client import call_tool, negotiate
from mcp_tasks_compat.core._model import Task, TaskStatus
from mcp_tasks_compat.testing import build_task_server

from .harness import CountingWrite, StreamWrapper, text_of

pytestmark = pytest.mark.anyio

SECONDS = 2.5
STEPS = 5
WATCHDOG_GETS = 4
"""The most ``tasks/get`` over the 2 s after the first pushed step: a watchdog poll a second, and
one more a poll already under way may send as the push arrives."""


class DroppingRead(StreamWrapper):
    """A client's read stream that drops ``notifications/tasks/status`` (a server that does not push)."""

    @staticmethod
    def _pushed_status(message: Any) -> bool:
        inner = getattr(message, "message", message)
        root = getattr(inner, "root", inner)  # mcp 1.x wraps the message in a RootModel
        return getattr(root, "method", None) == "notifications/tasks/status"

    def __aiter__(self) -> DroppingRead:
        return self

    async def __anext__(self) -> Any:
        while True:
            message = await self._stream.__anext__()
            if not self._pushed_status(message):
                return message

    async def receive(self) -> Any:
        return await self.__anext__()


@asynccontextmanager
async def counted_session(requests: Counter[str], *, pushes: bool = True) -> AsyncIterator[Any]:
    """A 2025-11-25 session to the project's server whose requests are counted by method."""
    app = get_adapter().app
    async with app.in_memory_streams(build_task_server()) as (read, write):
        streams = (read if pushes else DroppingRead(read), CountingWrite(write, requests))
        async with app.open_session(streams, session_kwargs(dialect="2025-11-25")) as session:
            await app.handshake(session, dialect_2025=True)
            negotiated = await negotiate(session)
            assert negotiated.dialect == "2025-11-25"
            yield session


async def follow_slow_echo(session: Any, requests: Counter[str]) -> tuple[Any, list[Task], int, float]:
    """``slow_echo`` as a task; also the ``tasks/get`` sent by the time its first step was reported,
    and the seconds from the call to that moment."""
    seen: list[Task] = []
    first_step: list[tuple[int, float]] = []
    started = time.monotonic()

    def on_status(task: Task) -> None:
        seen.append(task)
        if task.status_message == f"step 1/{STEPS}":
            first_step.append((requests["tasks/get"], time.monotonic() - started))

    result = await call_tool(
        session,
        "slow_echo",
        {"text": "paced", "seconds": SECONDS, "steps": STEPS},
        mode="task",
        on_status=on_status,
    )
    assert first_step, "the first step was never reported"
    return result, seen, *first_step[0]


def step_messages(seen: list[Task]) -> list[str | None]:
    return [task.status_message for task in seen if task.status is TaskStatus.WORKING and task.status_message]


async def test_pushed_statuses_leave_only_a_watchdog_poll() -> None:
    requests: Counter[str] = Counter()
    async with counted_session(requests) as session:
        result, seen, gets_before_push, first_push_s = await follow_slow_echo(session, requests)
    assert text_of(result) == "paced"
    assert step_messages(seen) == [f"step {step}/{STEPS}" for step in range(1, STEPS + 1)]
    assert seen[-1].status is TaskStatus.COMPLETED
    assert requests["tasks/result"] == 1
    # Until the first step (0.5 s) nothing says the server pushes: a status poll, one a tenth of a
    # second at most (about 5; at the young task's hint it was about 24, and 28 for a 1 s step).
    assert gets_before_push <= first_push_s / STATUS_POLL_SECONDS + 2, (first_push_s, requests)
    # From then on a watchdog poll a second over the remaining 2 s (it was about 20 more).
    assert requests["tasks/get"] - gets_before_push <= WATCHDOG_GETS, (gets_before_push, requests)


async def test_a_server_that_does_not_push_is_polled_at_the_hints_pace() -> None:
    requests: Counter[str] = Counter()
    async with counted_session(requests, pushes=False) as session:
        result, seen, gets_before_first_step, _ = await follow_slow_echo(session, requests)
    assert text_of(result) == "paced"
    # Only polls bring statuses here: at the hint's pace every step that lasts is seen; the last
    # one ends the task at once, so tasks/result usually answers before a poll sees it, and one
    # tasks/get after the result learns the status the task ended with: its last message.
    assert step_messages(seen)[: STEPS - 1] == [f"step {step}/{STEPS}" for step in range(1, STEPS)]
    assert seen[-1].status is TaskStatus.COMPLETED
    assert seen[-1].status_message == f"step {STEPS}/{STEPS}", [task.status_message for task in seen]
    assert requests["tasks/get"] - gets_before_first_step > 2 * WATCHDOG_GETS, requests


async def test_a_server_that_does_not_push_still_hands_the_last_step_to_progress_callback() -> None:
    """docs/client.md: the last callback carries the last message the tool sent, polled or pushed."""
    requests: Counter[str] = Counter()
    heard: list[tuple[float, float | None, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        heard.append((value, total, message))

    async with counted_session(requests, pushes=False) as session:
        result = await with_tasks(session, mode="task").call_tool(
            "slow_echo", {"text": "paced", "seconds": SECONDS, "steps": STEPS}, progress_callback=progress
        )
    assert text_of(result) == "paced"
    messages = [message for _, _, message in heard]
    assert messages[-1] == f"step {STEPS}/{STEPS}", messages
    assert len(messages) == len(set(messages)), messages  # none handed on twice
