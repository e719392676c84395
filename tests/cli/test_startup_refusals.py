"""Unusable start-up input is refused in one line, exit 2, before anything listens or is written.

Real processes (``python -m mcp_tasks_compat``), real files: a store that cannot be used is found
when the server opens it at start, not at the first client (issue 25, point 6).
"""

from __future__ import annotations

import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

BOUND_S = 60


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcp_tasks_compat", *args],
        capture_output=True,
        text=True,
        timeout=BOUND_S,
        check=False,
        stdin=subprocess.DEVNULL,
    )


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


def unusable_stores(tmp_path: Path) -> dict[str, tuple[str, Path | None]]:
    """id -> (the --store URL, a file that must be left byte-identical, if any)."""
    text = tmp_path / "notes.txt"
    text.write_text("not a database\n", encoding="utf-8")
    foreign = foreign_sqlite(tmp_path / "other-app.db")
    return {
        "text-file": (f"sqlite:///{text}", text),
        "foreign-sqlite": (f"sqlite:///{foreign}", foreign),
        "folder": (f"sqlite:///{tmp_path}", None),
        "no-folder": (f"sqlite:///{tmp_path / 'missing' / 'tasks.db'}", None),
        "proc": ("sqlite:////proc/mcp-tasks-compat.db", None),
        "redis-unreachable": (f"redis://127.0.0.1:{closed_port()}/0", None),
        "not-a-url": ("postgres://localhost/tasks", None),
        "sqlite-query": (f"sqlite:///{tmp_path / 'x.db'}?mode=ro", None),
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
        assert "listening on" not in done.stdout + done.stderr
        if keep is not None:
            assert keep.read_bytes() == before, f"{name}: the refused file was written to"
            assert not Path(f"{keep}-wal").exists(), f"{name}: the refused file was switched to WAL"


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
