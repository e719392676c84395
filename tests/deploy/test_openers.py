"""A caller's own session survives its server (issue 33, item 5): on a session opened with
``client.connect_http`` or ``client.connect_stdio``, a server killed with SIGKILL mid-task ends the
call following the task, and then the block, with ``ServerConnectionLostError`` naming the task,
not the SDK's exception group or a bare ``CancelledError``. A server that is not there yet is
``ServerUnreachableError`` (nothing was sent), and ``ReconnectingClient`` tries again until it is.

Real server processes: ``example-server`` over streamable HTTP on 127.0.0.1 (started and awaited
on its "listening on" line), and over stdio.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from tests.doc_blocks import run_doc_block_async
from tests.redis_server import free_port

from mcp_tasks_compat import ServerConnectionLostError
from mcp_tasks_compat._client.lost import connection_lost
from mcp_tasks_compat._testkit.processes import child_environment
from mcp_tasks_compat.client import (
    Reconnect,
    ReconnectingClient,
    TaskRun,
    connect_http,
    connect_stdio,
    start_tool,
)
from mcp_tasks_compat.core._model import TaskStatus

from ._procs import NEWEST_DIALECT, START_BOUND_S, Watch, is_, kill, servers

pytestmark = pytest.mark.anyio

BOUND_S = 2 * START_BOUND_S
"""A bound, not a wait: a server start (a fresh interpreter importing ``mcp``) plus the call."""
LONG_TASK = {"text": "x", "seconds": 60, "steps": 60}
"""Runs far longer than any test: the server is killed while it works."""


async def test_a_killed_http_server_ends_the_call_and_the_block_naming_the_task() -> None:
    runs: list[TaskRun[Any]] = []
    seen_by_the_call: list[ServerConnectionLostError] = []

    async def follow_until_the_server_dies(url: str, server: Any) -> None:
        async with connect_http(url, dialect=NEWEST_DIALECT) as session:
            run = await start_tool(session, "slow_echo", LONG_TASK)
            runs.append(run)
            kill(server)
            try:
                await run.result()
            except ServerConnectionLostError as error:
                seen_by_the_call.append(error)
                raise

    with servers() as started:
        server, url = await started.start_one()
        with anyio.fail_after(BOUND_S), pytest.raises(ServerConnectionLostError) as ended:
            await follow_until_the_server_dies(url, server)
    (run,) = runs
    (in_the_call,) = seen_by_the_call
    assert in_the_call.task_id == run.task_id
    error = ended.value  # the block's end: the typed error itself, not an exception group
    assert error.task_id == run.task_id
    assert error.dialect == NEWEST_DIALECT
    assert f"while following task {run.task_id}" in error.message
    assert connection_lost(error.cause) is not None, error.cause  # what the transport raised


async def test_a_killed_stdio_server_ends_the_call_and_the_block_naming_the_task(tmp_path: Path) -> None:
    pid_file = tmp_path / "server.pid"
    script = f'echo $$ > {pid_file}; exec "$0" -m mcp_tasks_compat example-server'
    runs: list[TaskRun[Any]] = []
    watch = Watch()

    async def follow_until_the_server_dies() -> None:
        with (tmp_path / "server.log").open("w") as log:
            opening = connect_stdio("sh", ["-c", script, sys.executable], env=child_environment(), errlog=log)
            async with opening as session:
                await follow_in(session)

    async def follow_in(session: Any) -> None:
        run = await start_tool(session, "slow_echo", LONG_TASK, on_status=watch)
        runs.append(run)
        await watch.until(is_(TaskStatus.WORKING), within=BOUND_S)
        os.kill(int(pid_file.read_text()), signal.SIGKILL)
        await run.result()

    with anyio.fail_after(BOUND_S), pytest.raises(ServerConnectionLostError) as ended:
        await follow_until_the_server_dies()
    (run,) = runs
    assert ended.value.task_id == run.task_id
    assert ended.value.dialect == run.dialect


async def test_reconnecting_tries_the_first_session_again_until_the_server_is_up() -> None:
    port = free_port()
    heard: list[Reconnect] = []
    first_try_failed = anyio.Event()

    def on_reconnect(event: Reconnect) -> None:
        heard.append(event)
        first_try_failed.set()

    client = ReconnectingClient(
        lambda: connect_http(f"http://127.0.0.1:{port}/mcp", dialect=NEWEST_DIALECT),
        attempts=100_000,  # the outer bound ends it; the server's start decides how many it takes
        first_delay_s=0.05,
        max_delay_s=0.2,
        on_reconnect=on_reconnect,
    )
    results: list[Any] = []

    async def call() -> None:
        results.append(await client.call_tool("slow_echo", {"text": "at last", "seconds": 0.2, "steps": 1}))

    with servers() as started, anyio.fail_after(BOUND_S):
        async with anyio.create_task_group() as group:
            group.start_soon(call)
            await first_try_failed.wait()  # nothing listens yet: the first session could not open
            await started.start("--port", str(port))  # returns once the server printed its URL
    (result,) = results
    assert [block.text for block in result.content] == ["at last"]
    assert heard[0].task_id is None
    assert connection_lost(heard[0].cause) is not None, heard[0].cause
    assert "nothing sent yet" in heard[0].describe()


async def test_the_documented_opener_names_the_lost_task(capsys: pytest.CaptureFixture[str]) -> None:
    saved: list[str] = []
    with servers() as started:
        server, url = await started.start_one()

        def save_for_later(task_id: str) -> None:
            saved.append(task_id)
            kill(server)  # and then the server crashes

        with anyio.fail_after(BOUND_S):
            await run_doc_block_async(
                "docs/client.md", "client-connect-http", {"url": url, "save_for_later": save_for_later}
            )
    (task_id,) = saved
    assert f"lost the server while following task {task_id}" in capsys.readouterr().out
