"""Cancelling a caller whose session was opened for this one call (mcp 1.x stdio and HTTP).

langchain-mcp-adapters (and other frameworks) open a session per tool call by default: the
transport, a ``ClientSession``, ``initialize()``, ``call_tool``, close. Cancelling such a caller
after its task started used to raise ``ExceptionGroup([BrokenResourceError])`` on mcp 1.x over
stdio, 8 runs of 8: the call gave up its pending ``tasks/result``, whose answer (the server sends
it once the task is cancelled; mcp 1.x never says a request was given up) arrived after the session
had closed its end of the stream and killed the SDK's stdio reader. The call now waits, within its
cancel grace, for the answers its session still owes. Each run here asserts the caller's own
``CancelledError`` and, on the server, a run stopped by ``tasks/cancel`` (its task ``cancelled``).
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from contextlib import AbstractContextManager, asynccontextmanager, nullcontext
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_tasks_compat._adapters import get_adapter
from mcp_tasks_compat._client_api import session_kwargs, with_tasks
from mcp_tasks_compat._detect import sdk_info
from mcp_tasks_compat.client import TaskClientSession
from mcp_tasks_compat.testing import http_server_process, server_command

from .cancel_tools import LOG_ENV, STARTED

pytestmark = pytest.mark.anyio

RUNS = 20
"""Runs where the fault was seen (mcp 1.x over stdio, 8 of 8 before the fix)."""
RUNS_ELSEWHERE = 5
"""Runs on the other transport and major, where it never failed: the same check, cheaper."""
SPEC = "tests.client.cancel_tools:TOOLS"
REPO = Path(__file__).resolve().parents[2]
BOUND = 60.0
"""A bound on one run (a server started over stdio, a task started, cancelled, the transport
closed), not its length."""


async def call_once(entry: str, streams_cm: Any, label: str, started: asyncio.Event) -> Any:
    """One call as a framework makes it: the transport, a session (``TaskClientSession``, or the
    SDK's own wrapped by ``with_tasks``), ``initialize()``, ``call_tool`` with a progress callback."""
    from mcp.client.session import ClientSession

    def on_progress(progress: float, total: float | None, message: str | None) -> None:
        if message == STARTED:
            started.set()

    async with streams_cm as (read, write):
        if entry == "TaskClientSession":
            opened = TaskClientSession(read, write)
        else:  # the framework's own session: a bare one on 1.x; 2.x needs session_kwargs() for tasks
            opened = ClientSession(read, write, **({} if sdk_info().major == 1 else session_kwargs()))
        async with opened as session:
            await session.initialize()
            caller = session if entry == "TaskClientSession" else with_tasks(session)
            return await caller.call_tool(
                "wait_to_be_cancelled", {"label": label}, progress_callback=on_progress
            )


async def cancelled_after_start(entry: str, streams_cm: Any, label: str) -> None:
    """Start the call in its own asyncio task, cancel that task once the tool ran, await it."""
    started = asyncio.Event()
    caller = asyncio.create_task(call_once(entry, streams_cm, label, started))
    waiting = asyncio.ensure_future(started.wait())
    await asyncio.wait({caller, waiting}, return_when=asyncio.FIRST_COMPLETED)
    waiting.cancel()
    assert not caller.done(), f"the call ended before its task started: {caller.result()!r}"
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller


def how_runs_ended(log: Path) -> dict[str, str]:
    """What the server's tool wrote down: each run's label and its task's status when it was stopped."""
    lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    return dict(line.split(" ", 1) for line in lines)


@asynccontextmanager
async def _stdio(log: Path) -> AsyncIterator[tuple[Any, Any]]:
    command = server_command(SPEC)
    opening = get_adapter().app.stdio_streams(
        command[0], command[1:], errlog=sys.stderr, env={LOG_ENV: str(log)}, cwd=str(REPO)
    )
    async with opening as streams:
        yield streams


@pytest.mark.parametrize("entry", ["TaskClientSession", "with_tasks"])
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_cancelling_the_caller_of_a_session_per_call(
    tmp_path: Path, transport: str, entry: str
) -> None:
    log = tmp_path / "cancelled.log"
    env = {**os.environ, LOG_ENV: str(log)}
    server: AbstractContextManager[str | None] = (
        http_server_process(SPEC, env=env, cwd=REPO) if transport == "http" else nullcontext()
    )
    runs = RUNS if transport == "stdio" and sdk_info().major == 1 else RUNS_ELSEWHERE
    with server as url:
        for run in range(runs):
            with anyio.fail_after(BOUND):
                streams = _stdio(log) if url is None else get_adapter().app.http_streams(url)
                await cancelled_after_start(entry, streams, f"run-{run}")
    # Every server process has exited (stdio: each with its session; HTTP: stopped above), so
    # each run has written how it ended: cancelled by tasks/cancel, not stopped with its session.
    assert how_runs_ended(log) == {f"run-{run}": "cancelled" for run in range(runs)}
