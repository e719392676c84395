"""The client task journal across the client's own death (issue 43, item 2): a client process that
follows a task with a journal is killed with SIGKILL once the journal holds the task; a new process
on the same journal reads the result (``resume --journal``, or ``TaskJournal.resume()`` in this
test's own process), a task that expired meanwhile ends with ``TaskExpiredError``, and a journal
pointed at another endpoint refuses.

Real processes: the client (:mod:`tests.deploy.journal_client`, or ``mcp-tasks-compat call
--journal``), the servers (``example-server`` over streamable HTTP on 127.0.0.1; over stdio,
spawned by the client, on a SQLite store with a ``worker`` process running the task, since a
stdio server ends with its client), the resuming ``mcp-tasks-compat resume``. Every wait is on an
event with a bound: the journal file holding the entry, a server's "listening" line, the server
no longer knowing a task.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from tests.cli.harness import CLI, STDIO_SERVER
from tests.doc_blocks import run_doc_block_async

from mcp_tasks_compat.client import (
    ReconnectingClient,
    TaskJournal,
    connect_http,
    read_result,
    resume,
    start_tool,
)
from mcp_tasks_compat.errors import TaskNotFoundError, TaskStateError
from mcp_tasks_compat.testing import HttpServerProcess, dialects

from ._procs import START_BOUND_S, servers

pytestmark = pytest.mark.anyio

BOUND_S = 90.0
"""A bound, not a wait: several interpreters start on a possibly busy machine."""
DIALECTS = list(dialects())
"""2025-11-25 on mcp 1.x; both on mcp 2.x (2025-11-25 through ``connect_*(dialect=...)``)."""
SCOPE = ("--unauthenticated-2025-scope", "task_id")
"""So a new 2025-11-25 session may read the task by its id (docs/client.md, the journal's section)."""
EXPIRY_TTL_MS = 5000
"""The expiry test's TTL: longer than the client's kill and the tool's release take on a loaded
machine (a task whose TTL ran out while it ran is failed, not forgotten), short enough to wait for."""
SLOW = {"text": "survived", "seconds": 5, "steps": 5}
"""Long enough that the client is killed while the task runs (the test checks it was: the entry
is still pending once the client is dead)."""


def client(
    journal: Path, dialect: str, endpoint: dict[str, Any], tool: str, arguments: Any, *extra: str
) -> Any:
    command = [
        sys.executable,
        "-m",
        "tests.deploy.journal_client",
        str(journal),
        dialect,
        json.dumps(endpoint),
    ]
    return subprocess.Popen(
        [*command, tool, json.dumps(arguments), *extra],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def kill_once_journaled(process: subprocess.Popen[str], journal: Path) -> TaskJournal.Entry:
    """SIGKILL ``process`` as soon as the journal file holds its task; the entry, still pending."""
    with anyio.fail_after(BOUND_S):
        while True:
            if await anyio.Path(journal).exists():
                pending = TaskJournal(journal).pending()
                if pending:
                    break
            if process.poll() is not None:
                raise AssertionError(f"the client ended first: {process.communicate()}")
            await anyio.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=BOUND_S)
    assert process.returncode == -signal.SIGKILL
    [entry] = TaskJournal(journal).pending()  # the client died before it read the outcome
    return entry


def call_cli(*args: str) -> subprocess.Popen[str]:
    """``mcp-tasks-compat call ARGS...`` started (the client the test kills)."""
    return subprocess.Popen(
        [*CLI, "call", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def resume_cli(journal: Path, *options: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``mcp-tasks-compat resume --journal PATH --json OPTIONS...`` in a new process."""
    return subprocess.run(
        [*CLI, "resume", "--journal", str(journal), "--json", *options],
        capture_output=True,
        text=True,
        timeout=BOUND_S,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
    )


def reports(done: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


@contextmanager
def worker(store: str) -> Iterator[None]:
    """``mcp-tasks-compat worker --example --store STORE``: runs the tasks the stdio servers queue."""
    process = subprocess.Popen([*CLI, "worker", "--example", "--store", store], stderr=subprocess.DEVNULL)
    try:
        yield
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=BOUND_S)


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_killed_client_over_http_a_new_process_reads_the_result(tmp_path: Path, dialect: str) -> None:
    journal = tmp_path / "agent-tasks.db"
    with servers() as started:
        _server, url = await started.start_one(*SCOPE)
        process = client(journal, dialect, {"url": url}, "slow_echo", SLOW)
        entry = await kill_once_journaled(process, journal)
        assert (entry.endpoint.url, entry.dialect, entry.tool) == (url, dialect, "slow_echo")
        # This test's process is the new one: TaskJournal.resume() opens a session to the entry's URL.
        with anyio.fail_after(BOUND_S):
            [(resumed, result)] = await TaskJournal(journal).resume()
    assert resumed.task_id == entry.task_id
    assert read_result(result).text == "survived"
    [ended] = TaskJournal(journal).entries()
    assert ended.outcome == "result"


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_killed_client_over_stdio_resume_reads_the_result(tmp_path: Path, dialect: str) -> None:
    journal, store = tmp_path / "agent-tasks.db", f"sqlite:///{tmp_path / 'store.db'}"
    command = [*STDIO_SERVER, "--store", store, "--run-on", "workers", *SCOPE]
    with worker(store):
        process = client(journal, dialect, {"command": command}, "slow_echo", SLOW)
        entry = await kill_once_journaled(process, journal)
        assert entry.endpoint.command == tuple(command)
        assert entry.endpoint.cwd == os.getcwd()
        # From another folder: the command runs in the folder the entry names.
        done = await anyio.to_thread.run_sync(lambda: resume_cli(journal, cwd=tmp_path))
    assert done.returncode == 0, done
    [report] = reports(done)
    assert (report["task_id"], report["dialect"], report["error"]) == (entry.task_id, dialect, None)
    assert report["result"]["content"][0]["text"] == "survived"
    assert TaskJournal(journal).pending() == []


async def test_killed_call_journal_resumes_on_the_command_line_and_refuses_another_endpoint(
    tmp_path: Path,
) -> None:
    journal = tmp_path / "agent-tasks.db"
    with servers() as started:
        (_a, url), (_b, other_url) = await started.start(*SCOPE, count=2)
        process = call_cli("slow_echo", json.dumps(SLOW), "--journal", str(journal), "--url", url)
        entry = await kill_once_journaled(process, journal)
        refused = await anyio.to_thread.run_sync(lambda: resume_cli(journal, "--url", other_url))
        assert refused.returncode == 2, refused
        assert f"belongs to {url}" in refused.stderr, refused
        assert "nothing was sent" in refused.stderr, refused
        assert [entry] == TaskJournal(journal).pending()  # refused: still pending
        done = await anyio.to_thread.run_sync(lambda: resume_cli(journal))
    assert done.returncode == 0, done
    [report] = reports(done)
    assert report["task_id"] == entry.task_id
    assert report["tool"] == "slow_echo"
    assert report["result"]["content"][0]["text"] == "survived"
    assert TaskJournal(journal).pending() == []


async def until_forgotten(url: str, dialect: str, task_id: str) -> None:
    """Wait until the server answers ``task_id`` "not found" (its TTL ran out after it ended): the
    event is the server's own, decided on its clock, so it is asked every 0.2 s within a bound."""
    with anyio.fail_after(BOUND_S):
        while True:
            async with connect_http(url, dialect=dialect) as session:
                try:
                    await resume(session, task_id)
                except TaskNotFoundError:
                    return
            await anyio.sleep(0.2)


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_an_entry_whose_task_expired_meanwhile_ends_task_expired(tmp_path: Path, dialect: str) -> None:
    journal, release = tmp_path / "agent-tasks.db", tmp_path / "release"
    server = HttpServerProcess(
        [sys.executable, "-m", "tests.deploy.journal_server", str(EXPIRY_TTL_MS)], start_timeout=START_BOUND_S
    )
    url = server.start()
    try:
        arguments = {"text": "late", "release": str(release)}
        process = client(
            journal, dialect, {"url": url}, "held", arguments, "2"
        )  # asks a 2 s TTL (2025-11-25)
        entry = await kill_once_journaled(process, journal)
        assert entry.ttl_ms == EXPIRY_TTL_MS
        release.touch()  # the task ends now; the server forgets it a TTL later
        await until_forgotten(url, dialect, entry.task_id)
        done = await anyio.to_thread.run_sync(lambda: resume_cli(journal))
    finally:
        server.stop()
    assert done.returncode == 1, done
    [report] = reports(done)
    assert report["error"]["kind"] == "task-expired", report
    assert (
        f"task {entry.task_id} (held at {url}) expired: its TTL of 5 s ran out" in report["error"]["message"]
    )
    [ended] = TaskJournal(journal).entries()
    assert ended.outcome == "task-expired"


async def test_the_library_refuses_an_entry_on_another_endpoints_session(tmp_path: Path) -> None:
    journal = TaskJournal(tmp_path / "agent-tasks.db")
    with servers() as started:
        (_a, url), (_b, other_url) = await started.start(*SCOPE, count=2)
        async with connect_http(url, journal=journal) as session:
            run = await start_tool(session, "slow_echo", {"text": "bound", "seconds": 0.5})
        [entry] = journal.pending()
        async with connect_http(other_url) as elsewhere:
            with pytest.raises(TaskStateError, match=f"belongs to {url}"):
                await journal.follow(entry, elsewhere)
        async with connect_http(url) as home:
            assert read_result(await journal.follow(entry, home)).text == "bound"
    assert run.task_id == entry.task_id
    assert journal.pending() == []


async def test_the_documented_journal_and_a_reconnecting_client_record_and_end_their_tasks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # the page's journal is ./agent-tasks.db
    with servers() as started:
        _server, url = await started.start_one()
        with anyio.fail_after(BOUND_S):
            names = await run_doc_block_async("docs/client.md", "client-journal", {"url": url})
            assert read_result(names["result"]).text == "hi"
            journal = TaskJournal(tmp_path / "agent-tasks.db")
            client = ReconnectingClient(lambda: connect_http(url, journal=journal), attempts=0)
            assert (
                read_result(await client.call_tool("slow_echo", {"text": "again", "seconds": 0.2})).text
                == "again"
            )
    assert capsys.readouterr().out == ""  # nothing was pending at the start
    entries = journal.entries()
    assert [(entry.tool, entry.outcome, entry.endpoint.url) for entry in entries] == [
        ("slow_echo", "result", url),
        ("slow_echo", "result", url),
    ]
