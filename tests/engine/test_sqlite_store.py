"""What only the SQLite store promises: a task on disk survives a kill -9, two connections to one
file still compare and set, and every bad file is refused at open with its name and the fix.

Each test runs on asyncio and on trio (the store drives ``sqlite3`` through anyio worker threads).
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from datetime import datetime, timezone
from pathlib import Path

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from mcp_tasks_compat._engine.stores import SqliteTaskStore, StoreConflict, TaskState, sqlite_file
from mcp_tasks_compat._engine.stores.task_state import dumps
from mcp_tasks_compat.core._model import JsonRpcError, Task, TaskStatus
from mcp_tasks_compat.dialects import DIALECT_2025_11_25
from mcp_tasks_compat.errors import TaskStoreError

pytestmark = pytest.mark.anyio

CREATED = datetime(2026, 4, 1, 8, 30, 0, 250001, tzinfo=timezone.utc)


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "tasks.db"


@pytest.fixture
async def store(db: Path) -> AsyncIterator[SqliteTaskStore]:
    opened = SqliteTaskStore(db)
    await opened.open()
    try:
        yield opened
    finally:
        await opened.close()


def a_state(task_id: str = "t-1", *, status: TaskStatus = TaskStatus.WORKING) -> TaskState:
    task = Task(
        task_id=task_id,
        status=status,
        created_at=CREATED,
        last_updated_at=CREATED,
        ttl_ms=600_000,
        status_message="building",
        input_requests={"in-1": {"method": "elicitation/create", "params": {"message": "tag?"}}},
    )
    return TaskState(
        task=task,
        dialect=DIALECT_2025_11_25,
        owner="alice",
        tool_name="build",
        expires_at=datetime(2026, 4, 1, 8, 40, 0, 250001, tzinfo=timezone.utc),
        runner="replica-a",
        lease_until=datetime(2026, 4, 1, 8, 30, 30, tzinfo=timezone.utc),
    )


async def open_fails(store: SqliteTaskStore, *fragments: str) -> TaskStoreError:
    """``open`` refuses with a message naming the file and each fragment; the store stays closed."""
    with pytest.raises(TaskStoreError) as caught:
        await store.open()
    message = str(caught.value)
    assert store.path in message
    for fragment in fragments:
        assert fragment in message
    with pytest.raises(TaskStoreError, match="not open"):
        await store.get("t-1")
    return caught.value


# -- durability ------------------------------------------------------------------------------------

WRITER = textwrap.dedent(
    """
    import sys

    import anyio

    from mcp_tasks_compat._engine.stores import SqliteTaskStore
    from mcp_tasks_compat._engine.stores.task_state import loads


    async def main() -> None:
        store = SqliteTaskStore(sys.argv[1])
        await store.open()
        await store.create(loads(sys.argv[2]))
        await store.save(loads(sys.argv[3]))
        print("created", flush=True)
        await anyio.sleep_forever()


    anyio.run(main, backend=sys.argv[4])
    """
)


async def test_a_written_task_survives_a_kill_9_of_its_process(db: Path, anyio_backend: str) -> None:
    created = a_state()
    finished = created.evolve(
        task=created.task.evolve(
            status=TaskStatus.FAILED,
            result={"content": [{"type": "text", "text": "boom"}], "isError": True},
            error=JsonRpcError(-32000, "tool failed", {"exit": 2}),
        )
    )
    async with await anyio.open_process(
        [sys.executable, "-c", WRITER, str(db), dumps(created), dumps(finished), anyio_backend],
        stdout=subprocess.PIPE,
    ) as writer:
        assert writer.stdout is not None
        with anyio.fail_after(60):
            line = await BufferedByteReceiveStream(writer.stdout).receive_until(b"\n", 1000)
        assert line.strip() == b"created"
        os.kill(writer.pid, signal.SIGKILL)
        assert await writer.wait() == -signal.SIGKILL
    assert await anyio.Path(f"{db}-wal").exists()  # never checkpointed: the read below recovers from the log
    reopened = SqliteTaskStore(db)
    await reopened.open()
    try:
        assert await reopened.get("t-1") == finished.evolve(version=1)
    finally:
        await reopened.close()


async def test_a_closed_and_reopened_store_keeps_everything(db: Path, store: SqliteTaskStore) -> None:
    await store.create(a_state("t-1"))
    await store.create(a_state("t-2", status=TaskStatus.COMPLETED))
    await store.close()
    await store.open()
    assert await store.get("t-2") == a_state("t-2", status=TaskStatus.COMPLETED)
    page, _ = await store.list_tasks()
    assert [state.task_id for state in page] == ["t-1", "t-2"]


async def test_two_connections_to_one_file_compare_and_set(db: Path, store: SqliteTaskStore) -> None:
    """Two processes on one file (two stores here): the second writer of one version loses."""
    other = SqliteTaskStore(db)
    await other.open()
    try:
        await store.create(a_state())
        mine = await store.get("t-1")
        theirs = await other.get("t-1")
        assert mine is not None
        assert theirs is not None
        cancelled = await other.save(theirs.evolve(task=theirs.task.evolve(status=TaskStatus.CANCELLED)))
        with pytest.raises(StoreConflict) as caught:
            await store.save(mine.evolve(task=mine.task.evolve(status=TaskStatus.COMPLETED)))
        assert caught.value.current == cancelled
        assert await store.get("t-1") == cancelled
    finally:
        await other.close()


async def test_concurrent_calls_share_the_one_connection_safely(store: SqliteTaskStore) -> None:
    async with anyio.create_task_group() as group:
        for index in range(40):
            group.start_soon(store.create, a_state(f"t-{index:02}"))
    page, cursor = await store.list_tasks(limit=100)
    assert len(page) == 40
    assert cursor is None


async def test_concurrent_writes_commit_together_and_are_on_disk_when_they_return(
    db: Path, store: SqliteTaskStore
) -> None:
    before = store.commits
    async with anyio.create_task_group() as group:
        for index in range(50):
            group.start_soon(store.create, a_state(f"g-{index:02}"))
    # group commit: 50 writes, far fewer transactions (the first write alone, then the rest)
    assert 1 <= store.commits - before <= 5
    with sqlite3.connect(db) as other:  # another connection sees every one: committed
        (count,) = other.execute("SELECT COUNT(*) FROM tasks WHERE task_id LIKE 'g-%'").fetchone()
    other.close()
    assert count == 50


async def test_a_lost_compare_and_set_in_a_batch_fails_only_that_write(store: SqliteTaskStore) -> None:
    await store.create(a_state("t-1"))
    held = await store.get("t-1")
    assert held is not None
    outcomes: dict[str, object] = {}

    async def save(name: str, status: TaskStatus) -> None:
        try:
            outcomes[name] = await store.save(held.evolve(task=held.task.evolve(status=status)))
        except StoreConflict as conflict:
            outcomes[name] = conflict

    async def create(name: str) -> None:
        await store.create(a_state(name))
        outcomes[name] = "created"

    async with anyio.create_task_group() as group:  # one batch: both saves expect version 0
        group.start_soon(create, "t-2")
        group.start_soon(save, "completed", TaskStatus.COMPLETED)
        group.start_soon(save, "cancelled", TaskStatus.CANCELLED)
        group.start_soon(create, "t-3")
    won = [o for o in outcomes.values() if isinstance(o, TaskState)]
    lost = [o for o in outcomes.values() if isinstance(o, StoreConflict)]
    assert len(won) == 1
    assert len(lost) == 1
    assert lost[0].current == won[0]  # the loser is told what the winner wrote
    assert await store.get("t-1") == won[0]
    assert outcomes["t-2"] == outcomes["t-3"] == "created"
    assert await store.get("t-2") is not None


async def test_a_batch_that_cannot_commit_fails_every_write_in_it(db: Path) -> None:
    store = SqliteTaskStore(db, busy_timeout=0.1)
    await store.open()
    blocker = sqlite3.connect(db, isolation_level=None, timeout=0)
    try:
        await store.create(a_state("t-0"))
        blocker.execute("BEGIN IMMEDIATE")  # another process holds the write lock
        failures: list[BaseException] = []

        async def create(task_id: str) -> None:
            try:
                await store.create(a_state(task_id))
            except TaskStoreError as exc:
                failures.append(exc)

        async with anyio.create_task_group() as group:
            for index in range(1, 6):
                group.start_soon(create, f"t-{index}")
        assert len(failures) == 5
        assert all("locked" in str(failure) for failure in failures)
        blocker.execute("ROLLBACK")
        page, _ = await store.list_tasks()
        assert [state.task_id for state in page] == ["t-0"]  # none of the failed writes is stored
        await store.create(a_state("t-1"))  # the store works again once the lock is gone
        assert await store.get("t-1") is not None
    finally:
        blocker.close()
        await store.close()


async def test_the_file_says_what_it_is(db: Path, store: SqliteTaskStore) -> None:
    assert store.describe == f"sqlite:///{db}"
    with sqlite3.connect(db) as connection:
        meta = dict(connection.execute("SELECT key, value FROM meta").fetchall())
        journal = connection.execute("PRAGMA journal_mode").fetchone()[0]
    connection.close()
    assert meta == {"application": "mcp-tasks-compat", "schema": str(sqlite_file.STORE_SCHEMA_VERSION)}
    assert journal == "wal"


def test_a_store_made_outside_an_event_loop_serves_one_loop_after_another(db: Path) -> None:
    """``store_from_url`` runs before the server's loop; a CLI may run one loop per command."""
    store = SqliteTaskStore(db)

    async def create_then_list(task_id: str) -> list[str]:
        await store.open()
        try:
            await store.create(a_state(task_id))
            page, _ = await store.list_tasks()
            return [state.task_id for state in page]
        finally:
            await store.close()

    assert anyio.run(create_then_list, "t-1", backend="trio") == ["t-1"]
    assert anyio.run(create_then_list, "t-2", backend="asyncio") == ["t-1", "t-2"]


# -- migration -------------------------------------------------------------------------------------


async def test_an_older_layout_is_migrated_on_open_by_one_function(
    db: Path, store: SqliteTaskStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await store.create(a_state())
    await store.close()
    ran: list[int] = []

    later = sqlite_file.STORE_SCHEMA_VERSION + 1

    def next_layout(connection: sqlite3.Connection) -> None:
        ran.append(later)
        connection.execute("ALTER TABLE tasks ADD COLUMN tool_name TEXT")

    monkeypatch.setitem(sqlite_file._MIGRATIONS, later, next_layout)
    monkeypatch.setattr(sqlite_file, "STORE_SCHEMA_VERSION", later)
    await store.open()
    await store.close()
    await store.open()  # already at the later layout: nothing runs again
    assert ran == [later]
    assert await store.get("t-1") == a_state()
    await store.close()
    monkeypatch.undo()  # this release again, which reads up to its own layout only
    await open_fails(SqliteTaskStore(db), f"schema {later}", "upgrade mcp-tasks-compat")


async def test_the_limits_count_reads_only_unfinished_tasks_even_in_a_file_an_older_release_made(
    db: Path, store: SqliteTaskStore
) -> None:
    """The per-owner count on every create must not walk the owner's ended tasks (kept until
    their TTL, thousands of them): it reads an index of unfinished tasks, which open adds to a
    file made before it existed, without a new layout version (an older release ignores it)."""
    await store.create(a_state())
    await store.close()
    with sqlite3.connect(db) as connection:  # as a file of 0.1.0 was: no such index
        connection.execute("DROP INDEX tasks_unfinished_by_owner")
    connection.close()
    await store.open()
    await store.close()
    with sqlite3.connect(db) as connection:
        plan = " ".join(
            str(row[-1])
            for row in connection.execute(f"EXPLAIN QUERY PLAN {sqlite_file_count_query()}", ("alice", 1_000))
        )
        layout = connection.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()[0]
    connection.close()
    assert "USING INDEX tasks_unfinished_by_owner" in plan
    assert layout == str(sqlite_file.STORE_SCHEMA_VERSION)  # an index, not a new layout


def sqlite_file_count_query() -> str:
    from mcp_tasks_compat._engine.stores import sqlite as sqlite_store

    return sqlite_store._COUNT_ACTIVE  # pyright: ignore[reportPrivateUsage]


# -- bad input -------------------------------------------------------------------------------------


async def test_a_text_file_is_not_a_database(tmp_path: Path) -> None:
    notes = tmp_path / "notes.db"
    notes.write_text("shopping list\n" * 100, encoding="utf-8")
    await open_fails(SqliteTaskStore(notes), "is not a SQLite database", "point the task store at")
    assert notes.read_text(encoding="utf-8") == "shopping list\n" * 100


async def test_a_database_of_another_application_is_refused(tmp_path: Path) -> None:
    theirs = tmp_path / "app.db"
    with sqlite3.connect(theirs) as connection:
        connection.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    connection.close()
    await open_fails(SqliteTaskStore(theirs), "another application", "users", "a file of its own")
    with sqlite3.connect(theirs) as connection:  # left as it was
        tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    connection.close()
    assert tables == ["users"]


@pytest.mark.parametrize(
    "meta",
    [
        "CREATE TABLE meta (name TEXT, value TEXT)",  # a meta table, but not ours
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT); INSERT INTO meta VALUES ('schema', '1')",
    ],
    ids=["foreign columns", "no application"],
)
async def test_a_foreign_meta_table_is_not_ours(tmp_path: Path, meta: str) -> None:
    theirs = tmp_path / "meta.db"
    with sqlite3.connect(theirs) as connection:
        connection.executescript(meta)
    connection.close()
    await open_fails(SqliteTaskStore(theirs), "another application")


async def test_a_newer_schema_is_refused(db: Path, store: SqliteTaskStore) -> None:
    await store.close()
    with sqlite3.connect(db) as connection:
        connection.execute("UPDATE meta SET value = '99' WHERE key = 'schema'")
    connection.close()
    await open_fails(SqliteTaskStore(db), "schema 99", "newer", "upgrade mcp-tasks-compat")


async def test_a_read_only_file_is_refused_at_open(db: Path, store: SqliteTaskStore) -> None:
    await store.create(a_state())
    await store.close()
    await anyio.Path(db).chmod(0o444)
    try:
        # Root writes to a 0o444 file anyway: then ask SQLite itself for a read-only connection.
        target = str(db) if not os.access(db, os.W_OK) else f"file:{db}?mode=ro"
        await open_fails(SqliteTaskStore(target), "is read-only", "writable")
    finally:
        await anyio.Path(db).chmod(0o644)
    await store.open()  # writable again: the file was not harmed
    assert await store.get("t-1") == a_state()


async def test_a_locked_file_is_refused_after_the_busy_timeout(db: Path, store: SqliteTaskStore) -> None:
    await store.close()
    holder = sqlite3.connect(db, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        await open_fails(SqliteTaskStore(db, busy_timeout=0.2), "locked by another process", "0.2 s")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    await store.open()


async def test_a_locked_file_on_a_write_is_a_store_error(db: Path, store: SqliteTaskStore) -> None:
    holder = sqlite3.connect(db, isolation_level=None)
    quick = SqliteTaskStore(db, busy_timeout=0.2)
    await quick.open()
    try:
        holder.execute("BEGIN EXCLUSIVE")
        with pytest.raises(TaskStoreError, match="locked by another process") as caught:
            await quick.create(a_state())
        assert str(db) in str(caught.value)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        await quick.close()
    assert await store.get("t-1") is None


async def test_a_full_disk_is_a_store_error_on_the_write(db: Path, store: SqliteTaskStore) -> None:
    await store.create(a_state("small"))

    def fill(connection: sqlite3.Connection) -> None:
        # SQLite's own cap on the file's pages: the write that needs one more page fails as a full disk would.
        pages = connection.execute("PRAGMA page_count").fetchone()[0]
        connection.execute(f"PRAGMA max_page_count = {pages}")

    await store._call(fill)
    big = a_state("big")
    big = big.evolve(task=big.task.evolve(result={"content": [{"type": "text", "text": "x" * 200_000}]}))
    with pytest.raises(TaskStoreError, match="disk is full") as caught:
        await store.create(big)
    assert str(db) in str(caught.value)
    assert await store.get("big") is None
    assert await store.get("small") == a_state("small")  # what was written stays readable


async def test_a_missing_folder_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such" / "folder" / "tasks.db"
    await open_fails(SqliteTaskStore(missing), "cannot be opened", str(missing.parent))


async def test_a_file_of_ours_without_its_tasks_table_is_refused_before_any_write(tmp_path: Path) -> None:
    """Refused before the switch to WAL (a write that would outlive the refusal): byte-identical."""
    damaged = tmp_path / "tasks.db"
    with sqlite3.connect(damaged) as connection:  # rollback journal: WAL would change the header
        connection.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID")
        connection.execute("INSERT INTO meta VALUES ('application', 'mcp-tasks-compat'), ('schema', '1')")
    connection.close()
    before = await anyio.Path(damaged).read_bytes()
    await open_fails(SqliteTaskStore(damaged), "without its tasks table", "(tables: meta)", "from a backup")
    assert await anyio.Path(damaged).read_bytes() == before
    assert [path.name async for path in anyio.Path(tmp_path).iterdir()] == ["tasks.db"]


async def test_a_path_with_control_or_bidi_characters_is_named_escaped(tmp_path: Path) -> None:
    missing = tmp_path / "no\u202efolder" / "tasks\x1b[31m\n.db"
    with pytest.raises(TaskStoreError) as refused:
        await SqliteTaskStore(missing).open()
    message = refused.value.message
    for raw in ("\u202e", "\x1b", "\n"):
        assert raw not in message
    assert "no\\u202efolder/tasks\\x1b[31m\\n.db cannot be opened" in message
    assert SqliteTaskStore(missing).describe == f"sqlite:///{tmp_path}/no\\u202efolder/tasks\\x1b[31m\\n.db"
