"""The SQLite file of :class:`~.sqlite.SqliteTaskStore`: its table layout, migrations, and opening it.

Opening is where a file that is not ours, of a newer layout, ours but without one of its tables
(:data:`_TABLES`), read-only, locked or on a disk that cannot hold it is refused, each with a
:class:`TaskStoreError` naming the file and the fix; the first three before anything writes to
it. The layout is versioned in a ``meta`` table and migrated on open: a later layout is one more
function in :data:`_MIGRATIONS`; an index an older release can ignore is made on open instead
(:data:`_INDEXES_ADDED`).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from typing import Final

from ...errors import TaskStoreError
from .echo import printable

__all__ = ["APPLICATION", "NOW_S", "STORE_SCHEMA_VERSION", "SqliteFile"]

APPLICATION: Final = "mcp-tasks-compat"
"""``meta.application``: how a file says it is ours (a SQLite file without it belongs to someone else)."""


def _schema_1(connection: sqlite3.Connection) -> None:
    connection.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID")
    connection.execute(
        """CREATE TABLE tasks (
            task_id TEXT PRIMARY KEY,
            owner TEXT,
            created_at TEXT NOT NULL,
            expires_at TEXT,
            lease_until TEXT,
            runner TEXT,
            terminal INTEGER NOT NULL,
            version INTEGER NOT NULL,
            state TEXT NOT NULL
        )"""
    )
    connection.execute("CREATE INDEX tasks_by_creation ON tasks (created_at, task_id)")
    connection.execute("CREATE INDEX tasks_by_owner ON tasks (owner, created_at, task_id)")
    connection.execute(
        "CREATE INDEX tasks_by_expiry ON tasks (expires_at, task_id) WHERE expires_at IS NOT NULL"
    )
    connection.execute(
        "CREATE INDEX tasks_by_lease ON tasks (lease_until, task_id)"
        " WHERE terminal = 0 AND runner IS NOT NULL AND lease_until IS NOT NULL"
    )


_INDEXES_ADDED: Final = (
    # the per-owner limit's count on every create: unfinished tasks only, however many ended ones
    # the owner still has (the owner index would walk them all)
    "CREATE INDEX IF NOT EXISTS tasks_unfinished_by_owner ON tasks (owner) WHERE terminal = 0",
)
"""Indexes added after a layout was released, made on open when missing: an older release reading
the file ignores them (SQLite keeps them up to date on its writes too), so they need no new layout
version and a rolling upgrade can mix releases on one file."""

_COLUMNS_ADDED: Final = (
    # the fencing token of the current run (task_state.TaskState.claim), checked by a run's writes
    ("claim", "ALTER TABLE tasks ADD COLUMN claim INTEGER NOT NULL DEFAULT 0"),
    # 1 while the task waits in the workers' queue (task_state.TaskState.queued)
    ("queued", "ALTER TABLE tasks ADD COLUMN queued INTEGER NOT NULL DEFAULT 0"),
)
"""Columns added after a layout was released, made on open when missing, as the indexes above: an
older release names its columns in every statement, so it reads and writes the file as before
(fencing holds once every replica on the file runs a release that writes the column)."""

NOW_S: Final = "((julianday('now') - 2440587.5) * 86400.0)"
"""SQLite's clock as seconds since the Unix epoch (the host's: one host shares the file)."""

_QUEUE_ADDED: Final = (
    # the workers' queue (.sqlite_queue): one row per wait, added by the write that queues the task
    """CREATE TABLE IF NOT EXISTS task_queue (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        task_id TEXT NOT NULL,
        claim INTEGER NOT NULL,
        queued_at REAL NOT NULL,
        consumer TEXT,
        taken_at REAL
    )""",
    f"""CREATE TRIGGER IF NOT EXISTS tasks_queued_on_insert AFTER INSERT ON tasks WHEN NEW.queued = 1
    BEGIN INSERT INTO task_queue (task_id, claim, queued_at) VALUES (NEW.task_id, NEW.claim, {NOW_S}); END""",
    f"""CREATE TRIGGER IF NOT EXISTS tasks_queued_on_update AFTER UPDATE OF queued ON tasks
    WHEN NEW.queued = 1 AND OLD.queued = 0
    BEGIN INSERT INTO task_queue (task_id, claim, queued_at) VALUES (NEW.task_id, NEW.claim, {NOW_S}); END""",
)
"""The workers' queue table and the triggers that fill it, made on open when missing (after the
columns): the entry is written in the same statement, so the same transaction, as the task's
write that queues it; an older release never sets ``queued``, so its writes queue nothing."""

_MIGRATIONS: Final[dict[int, Callable[[sqlite3.Connection], None]]] = {1: _schema_1}
"""``_MIGRATIONS[n]`` brings a file from layout ``n - 1`` (0: empty) to ``n``, inside the open transaction."""

_TABLES: Final[dict[int, tuple[str, ...]]] = {1: ("meta", "tasks")}
"""``_TABLES[n]``: the tables a file of layout ``n`` has; one that lacks any is refused at open
(before anything writes to it), not failed at its first query."""

STORE_SCHEMA_VERSION: Final = max(_MIGRATIONS)
"""The table layout this release writes; a file of a newer one is refused, an older one migrated."""

_UPSERT_META: Final = (
    "INSERT INTO meta (key, value) VALUES ('application', ?), ('schema', ?)"
    " ON CONFLICT (key) DO UPDATE SET value = excluded.value"
)


class SqliteFile:
    """Where the store's file is and how it is opened: connect, migrate, and say what went wrong.

    ``path`` is a file path or a ``file:`` URI as sqlite reads it; ``busy_timeout`` is how long a
    connection waits for another process's write before the file counts as locked.
    """

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float) -> None:
        self._target = os.fspath(path)
        self._uri = self._target.startswith("file:")
        self.path = self._target[len("file:") :].partition("?")[0] if self._uri else self._target
        self.busy_timeout = busy_timeout
        self._shown = printable(self.path)  # as messages repeat it (:mod:`.echo`)

    @property
    def describe(self) -> str:
        return f"sqlite:///{self._shown}"

    def connect(self) -> sqlite3.Connection:
        """A connection to the file, created or migrated, in WAL mode (blocking: a worker thread's)."""
        connection = sqlite3.connect(
            self._target,
            timeout=self.busy_timeout,
            isolation_level=None,  # autocommit: one statement is one transaction, BEGIN when more
            check_same_thread=False,  # worker threads vary; the lock keeps it one at a time
            uri=self._uri,
        )
        try:
            # Refuse a file that is not ours (or is newer) before anything writes to it: switching
            # the journal to WAL is a write that outlives the refusal.
            self._layout(connection)
            journal = str(connection.execute("PRAGMA journal_mode = WAL").fetchone()[0])
            connection.execute("PRAGMA synchronous = FULL")
            self._migrate(connection)
            if journal.lower() != "wal":
                raise TaskStoreError(
                    f"{self.describe}: SQLite cannot use write-ahead logging on {self._shown} (journal mode"
                    f" {journal!r}); put the file on a local disk (not a network filesystem)"
                )
        except BaseException:
            connection.close()
            raise
        return connection

    def _migrate(self, connection: sqlite3.Connection) -> None:
        connection.execute("BEGIN IMMEDIATE")  # two processes opening a new file: one creates it
        try:
            found = self._layout(connection)
            for version in range(found + 1, STORE_SCHEMA_VERSION + 1):
                _MIGRATIONS[version](connection)
            for index in _INDEXES_ADDED:
                connection.execute(index)
            present = {str(row[1]) for row in connection.execute("PRAGMA table_info(tasks)")}
            for column, added in _COLUMNS_ADDED:
                if column not in present:
                    connection.execute(added)
            for statement in _QUEUE_ADDED:
                connection.execute(statement)
            # Always written: the write that shows a read-only file at open, not at the first task.
            connection.execute(_UPSERT_META, (APPLICATION, str(STORE_SCHEMA_VERSION)))
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:  # SQLite rolls back by itself on some errors (a full disk)
                connection.execute("ROLLBACK")
            raise

    def _layout(self, connection: sqlite3.Connection) -> int:
        """The layout version the file holds (0: an empty file); refuses files that are not ours."""
        tables = sorted(
            str(row[0])
            for row in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        )
        if not tables:
            return 0
        listed = printable(", ".join(tables))
        not_ours = (
            f"{self.describe}: {self._shown} is a SQLite database of another application (tables:"
            f" {listed}); point the task store at a file of its own"
        )
        if "meta" not in tables:
            raise TaskStoreError(not_ours)
        try:
            meta = {str(key): str(value) for key, value in connection.execute("SELECT key, value FROM meta")}
            found = int(meta["schema"])
        except (sqlite3.OperationalError, KeyError, ValueError):
            raise TaskStoreError(not_ours) from None
        if meta.get("application") != APPLICATION:
            raise TaskStoreError(not_ours)
        if found > STORE_SCHEMA_VERSION:
            raise TaskStoreError(
                f"{self.describe}: {self._shown} holds task-store schema {found}, written by a newer"
                f" mcp-tasks-compat; this one reads up to {STORE_SCHEMA_VERSION}: upgrade mcp-tasks-compat"
                " (pip install -U mcp-tasks-compat) or use another file"
            )
        missing = [table for table in _TABLES.get(found, ()) if table not in tables]
        if missing:
            raise TaskStoreError(
                f"{self.describe}: {self._shown} is an mcp-tasks-compat task store (schema {found}) without"
                f" its {', '.join(missing)} table (tables: {listed}): it was damaged or"
                " emptied by hand; restore it from a backup, or point the task store at a new file"
            )
        return found

    def error(self, exc: sqlite3.Error) -> TaskStoreError:
        """What a SQLite failure means for the operator, and what to do about it."""
        name = str(getattr(exc, "sqlite_errorname", ""))  # Python 3.11+; the message text before
        text = str(exc)
        where = f"{self.describe}: {self._shown}"
        if name.startswith("SQLITE_NOTADB") or "not a database" in text:
            fix = "is not a SQLite database; point the task store at a new file or at one it created"
        elif name.startswith("SQLITE_READONLY") or "readonly database" in text:
            fix = (
                "is read-only; the store writes the file and its -wal/-shm files beside it: make the file"
                " and its folder writable for this user, or use another path"
            )
        elif name.startswith("SQLITE_BUSY") or "database is locked" in text:
            fix = (
                f"is locked by another process (waited {self.busy_timeout:g} s); stop the process that"
                " holds it (or a long transaction in a sqlite3 shell), or raise busy_timeout"
            )
        elif name.startswith("SQLITE_FULL") or "disk is full" in text:
            fix = "cannot grow: the disk is full; free space on the volume that holds it"
        elif name.startswith("SQLITE_CANTOPEN") or "unable to open" in text:
            folder = os.path.dirname(os.path.abspath(self.path))
            fix = (
                f"cannot be opened; check that the folder {printable(folder)} exists and is writable"
                " for this user"
            )
        else:
            fix = "failed; check the file and the disk"
        return TaskStoreError(f"{where} {fix} (sqlite: {text})")
