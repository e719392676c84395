"""``resume --journal``'s own answers (no server needed): a missing journal, an empty one, a file
that is not a journal, and how the worst of several outcomes is the exit code. The crash tests
(a killed ``call --journal``, ``resume`` reading the result) are tests/deploy/test_journal.py's."""

from __future__ import annotations

import subprocess
from pathlib import Path

from mcp_tasks_compat._cli.common import EXIT_CANCELLED, EXIT_OK, EXIT_TOOL_ERROR, EXIT_USAGE
from mcp_tasks_compat._cli.resume import worst
from mcp_tasks_compat.client import TaskJournal

from .harness import CLI, PROCESS_TIMEOUT_S


def resume(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "resume", *args], capture_output=True, text=True, timeout=PROCESS_TIMEOUT_S, check=False
    )


def test_a_missing_journal_is_refused_and_not_created(tmp_path: Path) -> None:
    done = resume("--journal", str(tmp_path / "typo.db"))
    assert done.returncode == EXIT_USAGE, done
    missing = str(tmp_path / "typo.db")
    expected = f"mcp-tasks-compat: no task journal at {missing!r} (call --journal PATH makes one)"
    assert done.stderr.strip() == expected
    assert not (tmp_path / "typo.db").exists()


def test_a_journal_without_pending_tasks_says_so_and_a_foreign_file_is_refused(tmp_path: Path) -> None:
    TaskJournal(tmp_path / "tasks.db").close()
    done = resume("--journal", f"sqlite:///{tmp_path / 'tasks.db'}")
    assert (done.returncode, done.stdout) == (EXIT_OK, ""), done
    assert "no pending tasks in" in done.stderr
    (tmp_path / "notes.txt").write_text("not a journal\n" * 50)
    refused = resume("--journal", str(tmp_path / "notes.txt"))
    assert refused.returncode == EXIT_USAGE, refused
    assert "cannot use the task journal" in refused.stderr


def test_the_exit_code_is_the_worst_outcome() -> None:
    assert worst([]) == EXIT_OK
    assert worst([EXIT_OK, EXIT_TOOL_ERROR]) == EXIT_TOOL_ERROR
    assert worst([EXIT_TOOL_ERROR, EXIT_CANCELLED, EXIT_OK]) == EXIT_CANCELLED
    assert worst([EXIT_CANCELLED, EXIT_USAGE, EXIT_TOOL_ERROR]) == EXIT_USAGE
