"""Cancelling a caller mid-wait never ends the client session, on every public entry point.

mcp 1.x ended the whole ``ClientSession`` when a request was cancelled while its answer was being
routed to it (the receive loop stopped reading, the transport's reader died on
``BrokenResourceError``). The scenario that showed it most (a pending ``TaskRun.result()`` cancelled
right after ``TaskRun.cancel()``, so the ``tasks/result`` answer is under way) is repeated on one
session, in memory, over stdio and over HTTP, on every dialect of the installed major; before the
fix it killed the session in about two runs of three. Each test then proves the session alive.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from mcp_tasks_compat import TaskCancelledError
from mcp_tasks_compat._testkit.sessions import connect_http, connect_in_memory, connect_stdio
from mcp_tasks_compat.client import call_tool, resume, start_tool
from mcp_tasks_compat.core._model import Task, TaskStatus
from mcp_tasks_compat.dialects import Dialect
from mcp_tasks_compat.testing import build_task_server, dialects, http_server_process

pytestmark = pytest.mark.anyio

BOUND = 60.0
ROUNDS = 4
"""Repetitions of the racy scenario on one session (the bug showed in about 2 runs of 3)."""
SLOW = {"text": "slow", "seconds": 60.0, "steps": 1200}
"""A task that reports a step every 50 ms, for longer than the test's bound: every one is cancelled,
and none may end before its cancel arrives, however busy the machine."""

TRANSPORTS = ["memory", "stdio", "http"]


@asynccontextmanager
async def opened(transport: str, dialect: Dialect) -> AsyncIterator[Any]:
    if transport == "memory":
        async with connect_in_memory(build_task_server(), dialect=dialect) as session:
            yield session
    elif transport == "stdio":
        async with connect_stdio(dialect=dialect) as session:
            yield session
    else:
        with http_server_process() as url:
            async with connect_http(url, dialect=dialect) as session:
                yield session


def stepping() -> tuple[anyio.Event, Callable[[Task], None], list[Task]]:
    """An event set at the task's first step message, the ``on_status`` that sets it, what it saw."""
    stepped = anyio.Event()
    seen: list[Task] = []

    def on_status(task: Task) -> None:
        seen.append(task)
        if task.status_message:
            stepped.set()

    return stepped, on_status, seen


async def follow_to_cancelled(run: Any) -> None:
    with pytest.raises(TaskCancelledError):
        await run.result()


async def alive(session: Any) -> None:
    """The session still answers: a short task runs to its result."""
    result = await call_tool(session, "slow_echo", {"text": "alive", "seconds": 0.01, "steps": 1})
    assert result.content[0].text == "alive"


async def ends_cancelled(session: Any, task_id: str) -> None:
    run = await resume(session, task_id)
    with pytest.raises(TaskCancelledError):
        await run.result()


@pytest.mark.parametrize("dialect", dialects())
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_cancel_then_abandon_the_pending_result(transport: str, dialect: Dialect) -> None:
    with anyio.fail_after(BOUND):
        async with opened(transport, dialect) as session:
            for _ in range(ROUNDS):
                stepped, on_status, _seen = stepping()
                run = await start_tool(session, "slow_echo", SLOW, on_status=on_status)
                async with anyio.create_task_group() as group:
                    group.start_soon(follow_to_cancelled, run)
                    await stepped.wait()
                    final = await run.cancel()
                    assert final is not None
                    assert final.status is TaskStatus.CANCELLED
                    group.cancel_scope.cancel()  # the pending result(), its answer under way
                await alive(session)


@pytest.mark.parametrize("dialect", dialects())
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_cancel_while_waiting_on_every_entry_point(transport: str, dialect: Dialect) -> None:
    with anyio.fail_after(BOUND):
        async with opened(transport, dialect) as session:
            # call_tool: cancelling the caller cancels the remote task (shielded tasks/cancel).
            stepped, on_status, seen = stepping()
            async with anyio.create_task_group() as group:
                group.start_soon(lambda: call_tool(session, "slow_echo", SLOW, on_status=on_status))
                await stepped.wait()
                group.cancel_scope.cancel()
            await ends_cancelled(session, seen[0].task_id)
            await alive(session)

            # TaskRun.result(): abandoning the wait leaves the task running and the handle usable.
            stepped, on_status, _seen = stepping()
            short = {"text": "kept", "seconds": 0.5, "steps": 10}
            run = await start_tool(session, "slow_echo", short, on_status=on_status)
            async with anyio.create_task_group() as group:
                group.start_soon(run.result)
                await stepped.wait()
                group.cancel_scope.cancel()
            assert not run.done
            assert (await run.result()).content[0].text == "kept"

            # TaskRun.cancel(): abandoned while it polls for the terminal status; a second one ends it.
            stepped, on_status, _seen = stepping()
            run = await start_tool(session, "slow_echo", SLOW, on_status=on_status)
            async with anyio.create_task_group() as following:
                following.start_soon(follow_to_cancelled, run)
                await stepped.wait()
                async with anyio.create_task_group() as group:
                    group.start_soon(run.cancel)
                    await anyio.lowlevel.checkpoint()
                    group.cancel_scope.cancel()
                final = await run.cancel()
                assert final is not None
                assert final.status is TaskStatus.CANCELLED
            await alive(session)

            # resume(): a resumed handle's wait, abandoned, then the task cancelled through it.
            stepped, on_status, _seen = stepping()
            started = await start_tool(session, "slow_echo", SLOW)
            assert started.task_id is not None
            resumed = await resume(session, started.task_id, on_status=on_status)
            async with anyio.create_task_group() as group:
                group.start_soon(resumed.result)
                await stepped.wait()
                group.cancel_scope.cancel()
            final = await resumed.cancel()
            assert final is not None
            assert final.status is TaskStatus.CANCELLED
            await alive(session)


def test_the_cancel_safe_table_wraps_every_answer_stream_once() -> None:
    """mcp 1.x: the session's pending-request table delivers answers without a checkpoint."""
    pytest.importorskip("mcp.server.fastmcp", reason="the table is the 1.x adapter's")
    from mcp_tasks_compat._detect import sdk_info

    if sdk_info().major != 1:
        pytest.skip("needs mcp 1.x")
    from mcp_tasks_compat._adapters.v1.client import _CancelSafeTable, _make_cancel_safe, _RoutedAtOnce

    class Session:
        def __init__(self) -> None:
            self._response_streams: dict[Any, Any] = {1: "pending"}

    session = Session()
    assert _make_cancel_safe(session)  # type: ignore[arg-type]
    table = session._response_streams
    assert isinstance(table, _CancelSafeTable)
    assert isinstance(table[1], _RoutedAtOnce)  # an entry made before is wrapped too
    table[2] = "later"
    assert isinstance(table[2], _RoutedAtOnce)
    assert _make_cancel_safe(session)  # type: ignore[arg-type]
    assert session._response_streams is table  # installed once
