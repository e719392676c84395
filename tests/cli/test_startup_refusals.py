"""Unusable start-up input is refused in one line, exit 2, before anything listens or is written.

Real processes (``python -m mcp_tasks_compat``), real files: a store that cannot be used is found
when the server opens it at start, not at the first client (issue 25, point 6).
"""

from __future__ import annotations

import socket
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from tests.redis_server import redis_server

from .harness import cli

BOUND_S = 60


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def foreign_sqlite(path: Path) -> Path:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
        db.execute("INSERT INTO invoices (total) VALUES (12.5)")
    return path


def ours_without_tasks(path: Path) -> Path:
    """A file this library made (its ``meta`` says so) whose ``tasks`` table is gone, in the
    rollback journal, so a switch to WAL would change its bytes."""
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID")
        db.execute("INSERT INTO meta VALUES ('application', 'mcp-tasks-compat'), ('schema', '1')")
    db.close()
    return path


def unusable_stores(tmp_path: Path) -> dict[str, tuple[str, Path | None]]:
    """id -> (the --store URL, a file that must be left byte-identical, if any)."""
    text = tmp_path / "notes.txt"
    text.write_text("not a database\n", encoding="utf-8")
    foreign = foreign_sqlite(tmp_path / "other-app.db")
    damaged = ours_without_tasks(tmp_path / "ours-damaged.db")
    return {
        "text-file": (f"sqlite:///{text}", text),
        "foreign-sqlite": (f"sqlite:///{foreign}", foreign),
        "ours-without-tasks": (f"sqlite:///{damaged}", damaged),
        "folder": (f"sqlite:///{tmp_path}", None),
        "no-folder": (f"sqlite:///{tmp_path / 'missing' / 'tasks.db'}", None),
        "proc": ("sqlite:////proc/mcp-tasks-compat.db", None),
        "redis-unreachable": (f"redis://127.0.0.1:{closed_port()}/0", None),
        "not-a-url": ("mysql://localhost/tasks", None),
        "sqlite-query": (f"sqlite:///{tmp_path / 'x.db'}?mode=ro", None),
        "sqlite-fragment": (f"sqlite:///{tmp_path / 'y.db'}#frag", None),
    }


def test_an_unusable_store_is_refused_in_one_line_before_listening(tmp_path: Path) -> None:
    """Over HTTP, where a store refused after listening would leave a port that accepts and fails
    (the store is opened before either transport starts, so stdio is the same path)."""
    for name, (url, keep) in unusable_stores(tmp_path).items():
        before = keep.read_bytes() if keep is not None else None
        done = cli("example-server", "--transport", "http", "--port", "0", "--store", url)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2, (name, done.stderr)
        assert len(lines) == 1, (name, done.stderr)
        assert lines[0].startswith(f"mcp-tasks-compat: cannot use the task store {url}: "), (name, lines)
        assert lines[0].count(url) == 1, f"{name}: the URL said more than once: {lines[0]}"
        assert "listening on" not in done.stdout + done.stderr
        if keep is not None:
            assert keep.read_bytes() == before, f"{name}: the refused file was written to"
            assert not Path(f"{keep}-wal").exists(), f"{name}: the refused file was switched to WAL"


def serve_refusal(url: str) -> str:
    """``example-server --store url`` refused: its one line on stderr (exit 2, never listening).

    A server that listens instead is stopped at once (the test fails then, not at a timeout)."""
    args = [sys.executable, "-m", "mcp_tasks_compat", "example-server", "--transport", "http"]
    with subprocess.Popen(
        [*args, "--port", "0", "--store", url],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    ) as server:
        watchdog = threading.Timer(BOUND_S, server.kill)  # a bound on a hung server, not a wait
        watchdog.start()
        try:
            assert server.stderr is not None
            lines: list[str] = []
            for line in server.stderr:
                lines.append(line.rstrip("\n"))
                if line.startswith("listening on"):
                    server.kill()
            returncode = server.wait()
        finally:
            watchdog.cancel()
    assert not any(line.startswith("listening on") for line in lines), lines
    assert returncode == 2, lines
    assert len(lines) == 1, lines
    return lines[0]


def test_a_damaged_file_of_ours_is_refused_before_anything_writes_to_it(tmp_path: Path) -> None:
    damaged = ours_without_tasks(tmp_path / "tasks.db")
    before = damaged.read_bytes()
    line = serve_refusal(f"sqlite:///{damaged}")
    assert "without its tasks table" in line, line
    assert "restore it from a backup" in line, line
    assert damaged.read_bytes() == before, "the refused file was written to (switched to WAL)"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["tasks.db"]


def test_a_sqlite_url_with_a_fragment_opens_no_file(tmp_path: Path) -> None:
    line = serve_refusal(f"sqlite:///{tmp_path / 'tasks.db'}#frag")
    assert "fragment '#frag'" in line, line
    assert list(tmp_path.iterdir()) == [], "a file was made for the URL"


def test_a_read_only_replica_is_refused_at_start(redis_url: str) -> None:
    """A replica answers PING and reads like its primary; every write would fail (in Lua's words)."""
    primary = urlsplit(redis_url).port
    assert primary is not None
    with redis_server(replica_of=primary) as replica:
        line = serve_refusal(replica.url)
    assert line.startswith(f"mcp-tasks-compat: cannot use the task store {replica.url}: "), line
    assert f"it is a replica of 127.0.0.1:{primary}" in line, line
    assert line.count(replica.url) == 1, line
    assert "point the store at that primary" in line, line
    assert "script" not in line, line


def test_control_and_bidi_characters_of_a_refused_store_are_escaped(tmp_path: Path) -> None:
    """Raw, an escape sequence would act on the operator's terminal and U+202E would show the path
    reordered; each is shown as its escape, in the one line, wherever the refusal repeats it."""
    folder = tmp_path / "no\u202efolder"
    asked = f"sqlite:///{folder}/tasks\x1b[31m.db"
    for line in (
        serve_refusal(asked),
        serve_refusal(f"{asked}?mode=ro\u2066"),
        serve_refusal("postgres://db\x07/tasks\u202e"),
        cli("tasks", "list", "--store", asked).stderr.strip(),
    ):
        for raw in ("\u202e", "\u2066", "\x1b", "\x07", "\n"):
            assert raw not in line, line
        assert "\\u202e" in line, line
    assert "no\\u202efolder/tasks\\x1b[31m.db" in serve_refusal(asked)
    line = serve_refusal(f"sqlite:///{tmp_path}/missing/two\nlines.db")
    assert "two\\nlines.db" in line, line
    assert not folder.exists()


def test_the_tasks_command_refuses_a_missing_file_and_the_memory_store(tmp_path: Path) -> None:
    typo = tmp_path / "typo.db"
    done = cli("tasks", "list", "--store", f"sqlite:///{typo}")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"mcp-tasks-compat: sqlite:///{typo}: no such file {str(typo)!r} (is the path right? sqlite:////abs/path.db)"
    ]
    assert not typo.exists()
    memory = cli("tasks", "list", "--store", "memory:")
    assert memory.returncode == 2
    assert "durable store" in memory.stderr
    assert memory.stdout == ""


@pytest.mark.parametrize("lease", ["inf", "nan", "1e-9", "0", "-1", "100000"])
def test_the_lease_is_bounded(lease: str) -> None:
    done = cli("example-server", "--transport", "http", "--port", "0", "--lease-s", lease)
    assert done.returncode == 2
    assert "--lease-s" in done.stderr
    assert "listening on" not in done.stderr
