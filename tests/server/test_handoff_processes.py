"""The plain hand-off with real processes: ``example-server --plain-handoff-s`` over streamable HTTP
and a bare SDK ``ClientSession`` (no task support) of the installed major.

* a hand-off task lives in the SQLite store: the server killed (SIGKILL) and started again on the
  same file, the ``reruns=`` tool (``--reruns``) is run again and its result reaches ``task_result``;
* with ``--run-on workers`` the handed-off task runs on a ``worker --example`` process.

After a restart the client's session is a new one: on a handshake-era connection (mcp 1.x) the
task is then readable only with the server's ``--unauthenticated-2025-scope task_id`` (the id is
the capability); a 2026-07-28 HTTP request has no session, so its id always is (docs/any-host.md).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from mcp_tasks_compat._testkit import sessions as kit_sessions
from mcp_tasks_compat._testkit.processes import HttpServerProcess, child_environment

pytestmark = pytest.mark.anyio

BOUND_S = 60.0
"""A bound, not a wait: each process imports ``mcp`` on a possibly busy machine."""
CLI = [sys.executable, "-m", "mcp_tasks_compat"]
ROOT = Path(__file__).resolve().parents[2]


def text_of(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


def task_id_of(result: Any) -> str:
    structured = getattr(result, "structuredContent", None) or getattr(result, "structured_content", None)
    assert structured is not None, text_of(result)
    return str(structured["taskId"])


async def followed(session: Any, task_id: str) -> str:
    """``task_result`` called as the hand-off text says, until it answers something else."""
    result = await session.call_tool("task_result", {"task_id": task_id})
    while "still running" in text_of(result):
        result = await session.call_tool("task_result", {"task_id": task_id})
    return text_of(result)


def example_server(*options: str) -> HttpServerProcess:
    command = [*CLI, "example-server", "--transport", "http", "--port", "0", *options]
    return HttpServerProcess(command, env=child_environment())


@contextmanager
def serving(*options: str) -> Iterator[tuple[HttpServerProcess, str]]:
    server = example_server(*options)
    try:
        yield server, server.start()
    finally:
        server.kill()
        server.stop()


async def test_a_handed_off_task_survives_a_kill_and_its_rerun_completes(tmp_path: Path) -> None:
    options = (
        "--plain-handoff-s",
        "1",
        "--store",
        f"sqlite:///{tmp_path / 'tasks.db'}",
        "--reruns",
        "1",
        "--lease-s",
        "600",  # far longer than the test: the run is found lost by its dead pid alone
        "--unauthenticated-2025-scope",
        "task_id",  # a new session after the restart (handshake era) may read it by its id
    )
    with serving(*options) as (first, url):
        with anyio.fail_after(BOUND_S):
            async with kit_sessions.connect_http(url, bare=True) as session:
                handed = await session.call_tool("slow_echo", {"text": "kept", "seconds": 4, "steps": 4})
                assert "still running as task" in text_of(handed)
                task_id = task_id_of(handed)
                first.kill()  # SIGKILL while the run goes on
        with serving(*options) as (_second, url):
            with anyio.fail_after(BOUND_S):
                async with kit_sessions.connect_http(url, bare=True) as session:
                    assert await followed(session, task_id) == "kept"  # run again, to the end


READY = re.compile(r"^worker (\S+) taking tasks from ")


@contextmanager
def worker(store: str) -> Iterator[list[str]]:
    """``worker --example --store STORE``, started and waited for until it takes tasks; its
    stderr lines; terminated on exit."""
    process = subprocess.Popen(
        [*CLI, "worker", "--example", "--store", store],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=child_environment(),
        cwd=ROOT,
    )
    lines: list[str] = []
    ready = threading.Event()

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line.rstrip("\n"))
            if READY.match(line):
                ready.set()
        ready.set()  # ended: the wait below sees it in the lines

    threading.Thread(target=read, daemon=True).start()
    try:
        assert ready.wait(BOUND_S), f"the worker did not start within {BOUND_S} s: {lines}"
        assert any(READY.match(line) for line in lines), f"the worker ended: {lines}"
        yield lines
    finally:
        process.terminate()
        process.wait(timeout=BOUND_S)


async def test_a_handed_off_task_runs_on_a_worker(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'tasks.db'}"
    options = ("--plain-handoff-s", "1", "--store", store, "--run-on", "workers")
    with serving(*options) as (_server, url), worker(store):
        with anyio.fail_after(BOUND_S):
            async with kit_sessions.connect_http(url, bare=True) as session:
                handed = await session.call_tool("slow_echo", {"text": "on a worker", "seconds": 3})
                assert "still running as task" in text_of(handed)
                task_id = task_id_of(handed)
                # The server queues only (run_on="workers"): a result is the worker's.
                assert await followed(session, task_id) == "on a worker"
        shown = await anyio.to_thread.run_sync(
            lambda: (
                subprocess.run(
                    [*CLI, "tasks", "show", task_id, "--store", store, "--json"],
                    capture_output=True,
                    text=True,
                    timeout=BOUND_S,
                    env=child_environment(),
                    check=True,
                ).stdout
            )
        )
    assert json.loads(shown)["status"] == "completed"
