"""The client task journal (``client.TaskJournal``) in one process: what it records and when, how
entries end, the endpoint binding, bad files, several processes on one file.

Sessions are real SDK sessions over the SDK's in-memory JSON-RPC streams to a ``TaskServer``
(``TaskClientSession(..., journal=, endpoint=)``); the journal is a real SQLite file. Killing the
client process is tests/deploy/test_journal.py's.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_tasks_compat._adapters import get_adapter
from mcp_tasks_compat._client.journal import Endpoint, arguments_digest
from mcp_tasks_compat.client import (
    TaskClientSession,
    TaskJournal,
    call_tool,
    negotiate,
    read_result,
    resume,
    start_tool,
)
from mcp_tasks_compat.core._model import Task
from mcp_tasks_compat.errors import (
    TaskCancelledError,
    TaskExpiredError,
    TaskNotFoundError,
    TaskStateError,
    TaskStoreError,
    TaskTimeoutError,
)
from mcp_tasks_compat.server import TaskServer
from mcp_tasks_compat.testing import dialects

pytestmark = pytest.mark.anyio

NEWEST = dialects()[-1]
"""What a ``TaskClientSession`` negotiates with this library's server on the installed mcp."""
URL = "http://tools.example/mcp"
OTHER_URL = "http://other.example/mcp"


def build_app(release: anyio.Event) -> TaskServer:
    app = TaskServer("journal", inline_grace_s=0)

    @app.tool(task="optional")
    async def hold(label: str) -> str:
        await release.wait()
        return f"released {label}"

    @app.tool(task="optional")
    async def echo(text: str) -> str:
        return text

    return app


@asynccontextmanager
async def journaled(app: TaskServer, journal: TaskJournal | None, endpoint: Any = URL) -> AsyncIterator[Any]:
    async with (
        get_adapter().app.in_memory_streams(app.sdk_server) as (read, write),
        TaskClientSession(read, write, journal=journal, endpoint=endpoint) as session,
    ):
        await negotiate(session)
        yield session


@pytest.fixture
def journal(tmp_path: Path) -> TaskJournal:
    return TaskJournal(f"sqlite:///{tmp_path / 'agent-tasks.db'}")


def other_reader(journal: TaskJournal) -> TaskJournal:
    """A second journal on the same file (another connection, as another process would have)."""
    return TaskJournal(journal.path)


async def test_a_task_is_on_disk_before_the_call_goes_on_and_ends_when_its_result_is_read(
    journal: TaskJournal,
) -> None:
    release = anyio.Event()
    seen_pending: list[list[TaskJournal.Entry]] = []

    def on_status(task: Task) -> None:  # the first status comes after the acknowledgement
        if not seen_pending:
            seen_pending.append(other_reader(journal).pending())
            release.set()

    async with journaled(build_app(release), journal) as session:
        result = await call_tool(session, "hold", {"label": "a"}, on_status=on_status)
    assert read_result(result).text == "released a"
    [[entry]] = seen_pending
    assert entry.endpoint == Endpoint.http(URL)
    assert entry.tool == "hold"
    assert entry.arguments_sha256 == arguments_digest({"label": "a"})
    assert entry.dialect == NEWEST
    assert entry.pending
    assert entry.ttl_ms is not None
    assert entry.ttl_ms > 0
    assert journal.pending() == []
    [ended] = journal.entries()
    assert ended.outcome == "result"
    assert ended.ended_at is not None


async def test_start_tool_records_before_it_returns_and_the_handle_ends_the_entry(
    journal: TaskJournal,
) -> None:
    release = anyio.Event()
    async with journaled(build_app(release), journal) as session:
        run = await start_tool(session, "hold", {"label": "b"})
        [entry] = other_reader(journal).pending()
        assert entry.task_id == run.task_id
        release.set()
        assert read_result(await run.result()).text == "released b"
    assert journal.pending() == []


async def test_a_cancelled_or_timed_out_task_ends_its_entry_with_that_error(journal: TaskJournal) -> None:
    release = anyio.Event()
    async with journaled(build_app(release), journal) as session:
        with pytest.raises(TaskTimeoutError):
            await call_tool(session, "hold", {"label": "late"}, timeout=0.5)
        run = await start_tool(session, "hold", {"label": "cancelled"})
        await run.cancel()
        with pytest.raises(TaskCancelledError):
            await run.result()
    assert sorted(entry.outcome or "" for entry in journal.entries()) == ["task-cancelled", "task-timeout"]


async def test_a_call_cancelled_by_its_caller_leaves_the_entry_pending(journal: TaskJournal) -> None:
    release = anyio.Event()
    async with journaled(build_app(release), journal) as session:
        with anyio.move_on_after(0.5):
            await call_tool(session, "hold", {"label": "left"})
        # The outcome was not read (the caller's cancel sent a best-effort tasks/cancel, which
        # might not have arrived): the entry stays, and following it reads how the task ended.
        [entry] = journal.pending()
        [(followed, outcome)] = await journal_follow_all(journal, session)
    assert followed.task_id == entry.task_id
    assert isinstance(outcome, TaskCancelledError)
    assert journal.pending() == []
    assert [entry.outcome for entry in journal.entries()] == ["task-cancelled"]


async def journal_follow_all(journal: TaskJournal, session: Any) -> list[tuple[TaskJournal.Entry, Any]]:
    return await journal.resume(connect=lambda entry: _Same(session))


class _Same:
    """An opener that hands back an open session (``resume(connect=...)``)."""

    def __init__(self, session: Any) -> None:
        self.session = session

    async def __aenter__(self) -> Any:
        return self.session

    async def __aexit__(self, *exc: object) -> None:
        return None


async def test_an_entry_is_followed_only_at_its_own_endpoint(journal: TaskJournal) -> None:
    release = anyio.Event()
    app = build_app(release)
    async with journaled(app, journal) as session:
        run = await start_tool(session, "hold", {"label": "bound"})
        [entry] = journal.pending()
        async with journaled(app, None, endpoint=OTHER_URL) as elsewhere:
            with pytest.raises(TaskStateError, match=r"belongs to http://tools\.example/mcp"):
                await journal.follow(entry, elsewhere)
            [(_, refused)] = await journal.resume(connect=lambda entry: _Same(elsewhere))
            assert isinstance(refused, TaskStateError)
        async with journaled(app, None, endpoint=None) as unknown:
            with pytest.raises(TaskStateError, match="a server the library does not know"):
                await journal.follow(entry, unknown)
        assert journal.pending() == [entry]  # nothing was sent: still pending
        release.set()
        assert read_result(await journal.follow(entry, session)).text == "released bound"
        assert run.task_id == entry.task_id
    assert journal.pending() == []


async def test_an_unknown_task_past_its_ttl_ends_expired_and_before_it_not_found(
    journal: TaskJournal, tmp_path: Path
) -> None:
    release = anyio.Event()
    async with journaled(build_app(release), journal) as session:
        run = await start_tool(session, "echo", {"text": "x"})
        await run.result()
    # Entries a previous process left, of tasks this new server does not know (it lost them): one
    # acknowledged 5 s ago with a TTL of 0.1 s, one without a TTL.
    digest = arguments_digest({})
    stale = TaskJournal.Entry(
        Endpoint.http(URL), "gone-long-ago", run.dialect, "echo", digest, _now() - timedelta(seconds=5), 100
    )
    fresh = TaskJournal.Entry(Endpoint.http(URL), "unknown-id", run.dialect, "echo", digest, _now(), None)
    journal.record_now(stale)
    journal.record_now(fresh)
    async with journaled(build_app(release), journal) as session:
        outcomes = {entry.task_id: outcome for entry, outcome in await journal_follow_all(journal, session)}
    assert isinstance(outcomes["gone-long-ago"], TaskExpiredError)
    assert "its TTL of 0.1 s ran out" in outcomes["gone-long-ago"].message
    assert type(outcomes["unknown-id"]) is TaskNotFoundError
    by_id = {entry.task_id: entry.outcome for entry in journal.entries()}
    assert by_id["gone-long-ago"] == "task-expired"
    assert by_id["unknown-id"] == "task-not-found"


def _now() -> datetime:
    return datetime.now(timezone.utc)


async def test_a_journal_on_a_session_whose_server_is_unknown_is_refused_before_sending(
    journal: TaskJournal,
) -> None:
    release = anyio.Event()
    async with journaled(build_app(release), None, endpoint=None) as session:
        with pytest.raises(ValueError, match="a journal needs to know the session's server"):
            await call_tool(session, "echo", {"text": "x"}, journal=journal)
    assert journal.entries() == []
    with pytest.raises(ValueError, match="never stores credentials"):
        Endpoint.of("https://user:secret@tools.example/mcp")


def test_files_a_journal_cannot_use_are_refused_and_left_as_they_were(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("not a database\n" * 100)
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as connection:
        connection.execute("CREATE TABLE tasks (id TEXT)")
    for path, words in ((text, "cannot use the task journal"), (other, "another application's SQLite file")):
        before = path.read_bytes()
        with pytest.raises(TaskStoreError, match=words):
            TaskJournal(path)
        assert path.read_bytes() == before
    with pytest.raises(TaskStoreError, match="it is a folder"):
        TaskJournal(tmp_path)
    with pytest.raises(ValueError, match="sqlite:///path"):
        TaskJournal("sqlite://relative.db")
    reopened = TaskJournal(f"sqlite:///{tmp_path / 'j.db'}")
    assert TaskJournal(tmp_path / "j.db").path == reopened.path  # a URL or a path: the same file


WRITER = """
import sys
from datetime import datetime, timezone
from mcp_tasks_compat._client.journal import Endpoint, JournalEntry, JournalStore
store = JournalStore(sys.argv[1])
for number in range(int(sys.argv[3])):
    store.record_now(JournalEntry(Endpoint.http("http://tools.example/mcp"), f"{sys.argv[2]}-{number}",
        "2026-07-28", "echo", "sha256:0", datetime.now(timezone.utc), 1000))
    if number % 2:
        store.end_now(Endpoint.http("http://tools.example/mcp"), f"{sys.argv[2]}-{number}", "result")
"""


def test_several_processes_share_one_journal_file(journal: TaskJournal) -> None:
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(journal.path), f"p{number}", "40"])
        for number in range(4)
    ]
    assert [writer.wait(timeout=120) for writer in writers] == [0, 0, 0, 0]
    entries = journal.entries()
    assert len(entries) == 160
    assert len(journal.pending()) == 80
    assert all(entry.outcome == "result" for entry in entries if int(entry.task_id.split("-")[1]) % 2)


@pytest.mark.skipif(len(dialects()) < 2, reason="mcp 1.x speaks one task dialect")
async def test_an_entry_is_followed_only_in_its_own_dialect(journal: TaskJournal) -> None:
    release = anyio.Event()
    app = build_app(release)
    async with journaled(app, journal) as session:
        await start_tool(session, "hold", {"label": "newest"})
        [entry] = journal.pending()
        async with (
            get_adapter().app.in_memory_streams(app.sdk_server) as (read, write),
            TaskClientSession(read, write, endpoint=URL, dialect="2025-11-25") as older,
        ):
            await negotiate(older)
            with pytest.raises(TaskStateError, match=f"was made in dialect {entry.dialect}"):
                await journal.follow(entry, older)
        assert journal.pending() == [entry]
        release.set()


async def test_a_task_the_journal_cannot_record_is_cancelled_and_the_call_fails_loudly(
    journal: TaskJournal,
) -> None:
    with sqlite3.connect(journal.path) as connection:  # the file broken under the journal
        connection.execute("DROP TABLE journal_entries")
    app = build_app(anyio.Event())  # never released: only the cancel ends the tool
    async with journaled(app, journal) as session:
        with pytest.raises(TaskStoreError, match=r"could not record task \S+ in the task journal") as failed:
            await call_tool(session, "hold", {"label": "unrecorded"})
        task_id = failed.value.message.split()[4]
        with anyio.fail_after(30):
            run = await resume(session, task_id)
            with pytest.raises(TaskCancelledError):
                await run.result()  # the call's early end cancelled it: nothing runs unjournaled
