"""``mcp-tasks-compat worker`` and ``example-server --run-on`` refusals, and ``tasks list``'s WHERE.

Each refusal is one line on stderr and exit 2, before anything is taken or served; the
behaviour of running workers is tests/deploy/test_workers.py's (real processes).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from mcp_tasks_compat._engine import TaskEngine
from mcp_tasks_compat._engine.stores import SqliteTaskStore
from mcp_tasks_compat.dialects import DIALECT_2026_07_28

from .harness import cli as run_cli

ROOT = Path(__file__).resolve().parents[2]
NOT_A_SERVER = "a string"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, cwd=ROOT)  # the project folder: MODULE:ATTR targets import from it


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ((), "worker takes MODULE:ATTR or --example (one of them)"),
        (("--example",), "worker --example needs --store URL"),
        (
            ("--example", "--store", "memory:"),
            "a worker needs a task store with a queue that the servers share",
        ),
        (("no_such_module_here:app",), "cannot import no_such_module_here"),
        (("tests.cli.test_worker_cli:NOT_A_SERVER",), "is a str, not a mcp_tasks_compat.server.TaskServer"),
        (("tests.cli.test_worker_cli:missing",), "is nothing, not a mcp_tasks_compat.server.TaskServer"),
    ],
)
def test_a_worker_that_cannot_work_says_why_in_one_line(args: tuple[str, ...], said: str) -> None:
    done = cli("worker", *args)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert said in lines[0]


def test_a_server_that_queues_needs_a_shared_store() -> None:
    done = cli("example-server", "--run-on", "workers")
    assert done.returncode == 2
    assert "run_on='workers' needs a task store the workers share" in done.stderr
    assert "sqlite:///PATH" in done.stderr


def test_tasks_list_says_where_each_task_runs(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"

    async def make() -> None:
        engine = TaskEngine(store=SqliteTaskStore(path))
        await engine.open()
        for run_on in ("workers", "here"):
            await engine.create(
                dialect=DIALECT_2026_07_28, owner=None, tool_name=f"on_{run_on}", ttl_ms=None, run_on=run_on
            )
        await engine.store.close()

    anyio.run(make)
    done = cli("tasks", "list", "--store", f"sqlite:///{path}")
    assert done.returncode == 0, done.stderr
    header, *rows, count = done.stdout.strip().splitlines()
    assert header.split()[-1] == "WHERE"
    where = {row.split()[2]: row.split()[-1] for row in rows}
    assert where["on_workers"] == "queued"
    assert where["on_here"] != "queued"  # claimed by the process that made it (gone now)
    assert count == "2 task(s)"


def test_a_worker_serves_its_metrics(tmp_path: Path) -> None:
    """``worker --metrics-port``: the worker's own series, with the queue's depth it read."""
    import httpx
    from tests.redis_server import free_port

    port = free_port()
    command = [sys.executable, "-m", "mcp_tasks_compat", "worker", "--example"]
    command += ["--store", f"sqlite:///{tmp_path / 'tasks.db'}", "--metrics-port", str(port)]
    with subprocess.Popen(command, stderr=subprocess.PIPE, text=True, cwd=ROOT) as worker:
        assert worker.stderr is not None
        try:
            lines: list[str] = []
            while not any("taking tasks from" in line for line in lines):  # each readline waits
                line = worker.stderr.readline()
                assert line, f"the worker ended before taking tasks: {lines}"
                lines.append(line)
            assert f"metrics on http://127.0.0.1:{port}/metrics\n" in lines
            text = ""
            while "mcp_tasks_queue_depth" not in text:  # the gauge is read after each take (1 s)
                text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
        finally:
            worker.terminate()
        assert worker.wait(timeout=60) == 0
    (depth,) = [line for line in text.splitlines() if line.startswith("mcp_tasks_queue_depth{")]
    assert depth.endswith("} 0.0")
