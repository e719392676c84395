"""The command line tests' harness: ``python -m mcp_tasks_compat`` as subprocesses, many at once.

Every command pays for a fresh interpreter and an ``mcp`` import, so the suite starts all its
command lines together (:class:`Batch`) and each test waits only for its own. The HTTP example
server is one subprocess for the whole module (:func:`http_example_server`, the testing kit's
``HttpServerProcess``, which reads the URL the server prints to stderr).

What the installed mcp speaks is read once here, from the kit, as dialects: the tests branch on
the dialect a run used, never on the SDK major.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from typing import Any

from mcp_tasks_compat.dialects import ALL_DIALECTS, DIALECT_2026_07_28
from mcp_tasks_compat.testing import HttpServerProcess, dialects

__all__ = [
    "CLI",
    "OTHER_DIALECT",
    "PROCESS_TIMEOUT_S",
    "SERVER_DIALECTS",
    "SPEAKS_2026",
    "STDIO_SERVER",
    "TASK_DIALECT",
    "Batch",
    "Finished",
    "Lines",
    "http_example_server",
]

CLI = [sys.executable, "-m", "mcp_tasks_compat"]
STDIO_SERVER = [*CLI, "example-server"]
"""The stdio server a ``call`` / ``probe`` spawns after ``--``."""
PROCESS_TIMEOUT_S = 120.0
"""A bound, not a wait: generous because every subprocess imports ``mcp`` on a possibly busy machine."""

TASK_DIALECT = dialects()[-1]
"""The dialect the command line picks: the newest the installed mcp speaks."""
OTHER_DIALECT = next(dialect for dialect in ALL_DIALECTS if dialect != TASK_DIALECT)
SERVER_DIALECTS = list(reversed(dialects()))
"""What ``probe`` reports the example server speaks, newest first."""
SPEAKS_2026 = DIALECT_2026_07_28 in dialects()


@dataclass
class Finished:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> dict[str, Any]:
        assert self.stdout.strip(), f"no JSON on stdout; stderr: {self.stderr!r}"
        data: dict[str, Any] = json.loads(self.stdout)
        return data

    @property
    def stderr_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.strip()]

    def describe(self) -> str:
        command = " ".join(self.args)
        return f"$ {command}\nexit {self.returncode}\nstdout: {self.stdout!r}\nstderr: {self.stderr!r}"


@dataclass
class Batch:
    """Command lines started at once; :meth:`result` waits for one of them."""

    running: dict[str, tuple[list[str], subprocess.Popen[str]]] = field(
        default_factory=lambda: dict[str, tuple[list[str], subprocess.Popen[str]]]()
    )
    done: dict[str, Finished] = field(default_factory=lambda: dict[str, Finished]())
    url: str = ""
    """The HTTP example server's URL, once known."""

    def start(self, name: str, *args: str, env: dict[str, str] | None = None) -> None:
        """Start ``mcp-tasks-compat ARGS...``; ``env`` is added to this process's environment."""
        command = [*CLI, *args]
        # stdin is never a terminal here (even under ``pytest -s``): questions are answered by
        # --answer or refused, never waited for.
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=None if env is None else {**os.environ, **env},
        )
        self.running[name] = (command, process)

    def result(self, name: str) -> Finished:
        if name not in self.done:
            command, process = self.running.pop(name)
            try:
                stdout, stderr = process.communicate(timeout=PROCESS_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                stdout, stderr = process.communicate()
                raise AssertionError(f"{name} did not finish in {PROCESS_TIMEOUT_S} s: {stderr!r}") from None
            self.done[name] = Finished(command, process.returncode, stdout, stderr)
        return self.done[name]

    def close(self) -> None:
        for _command, process in self.running.values():
            process.kill()
            process.communicate()
        self.running.clear()


class Lines:
    """A subprocess's stderr, line by line, with a bounded wait for the next one."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.queue: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.seen.append(line)
            self.queue.put(line)
        self.queue.put(None)

    def next(self) -> str | None:
        """The next line, ``None`` at the end; fails the test after :data:`PROCESS_TIMEOUT_S`."""
        try:
            return self.queue.get(timeout=PROCESS_TIMEOUT_S)
        except queue.Empty:
            self.process.kill()
            raise AssertionError(f"no output within {PROCESS_TIMEOUT_S} s: {''.join(self.seen)!r}") from None


def http_example_server(*options: str) -> HttpServerProcess:
    """``example-server --transport http --port 0 [OPTION...]`` as a subprocess (not started yet)."""
    return HttpServerProcess(
        [*CLI, "example-server", "--transport", "http", "--port", "0", *options],
        start_timeout=PROCESS_TIMEOUT_S,
    )


def cli(
    *args: str, cwd: str | os.PathLike[str] | None = None, bound_s: float = 60
) -> subprocess.CompletedProcess[str]:
    """One command run to its end (no stdin), its output as text: for refusals and one-shot commands."""
    return subprocess.run(
        [*CLI, *args],
        capture_output=True,
        text=True,
        timeout=bound_s,
        check=False,
        stdin=subprocess.DEVNULL,
        cwd=cwd,
    )
