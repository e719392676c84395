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


LOGGING_APP = """
import logging
logging.basicConfig(level=logging.INFO)  # an app that shows INFO lines, as many do

from mcp_tasks_compat.server import TaskServer

app = TaskServer("logged", store={store!r}, run_on="workers")


@app.tool(task="required")
async def hello(name: str) -> str:
    return name
"""


def _stderr_until_stopped(command: list[str]) -> list[str]:
    """``command``'s stderr from its start until SIGTERM, sent once it said it takes tasks."""
    with subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT
    ) as worker:
        assert worker.stderr is not None
        lines: list[str] = []
        try:
            while not any("taking tasks from" in line for line in lines):  # each readline waits
                line = worker.stderr.readline()
                assert line, f"the worker ended before taking tasks: {lines}"
                lines.append(line.rstrip("\n"))
        finally:
            worker.terminate()
        _, rest = worker.communicate(timeout=60)
    return lines + rest.splitlines()


def test_a_worker_says_once_that_it_takes_tasks(tmp_path: Path) -> None:
    """The command line's line only: the engine's log line of the same moment was a second copy
    whenever INFO logs showed (``-v``, or an app that turns them on)."""
    store = f"sqlite:///{tmp_path / 'tasks.db'}"
    module = tmp_path / "logged_app.py"
    module.write_text(LOGGING_APP.format(store=store), encoding="utf-8")
    verbose = [sys.executable, "-m", "mcp_tasks_compat", "worker", "--example", "--store", store, "-v"]
    logging_app = [sys.executable, "-m", "mcp_tasks_compat", "worker", f"{module}:app"]
    for command in (verbose, logging_app):
        lines = _stderr_until_stopped(command)
        said = [line for line in lines if "taking tasks from" in line]
        assert len(said) == 1, lines
        assert said[0].startswith("worker "), said


RUNS_AT_IMPORT = """
from mcp_tasks_compat.server import TaskServer

app = TaskServer("runs-at-import", store={store!r}, run_on="workers")


@app.tool(task="required")
async def hello(name: str) -> str:
    return name


app.run()  # not guarded by `if __name__ == "__main__":`
"""


def test_a_module_that_serves_its_app_when_imported_is_refused_with_the_fix(tmp_path: Path) -> None:
    """It used to serve stdio inside the worker, then die with "Event loop is closed" (or wait on
    stdin for good)."""
    module = tmp_path / "serving_app.py"
    module.write_text(RUNS_AT_IMPORT.format(store=f"sqlite:///{tmp_path / 'tasks.db'}"), encoding="utf-8")
    done = cli("worker", f"{module}:app")
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line == (
        f"mcp-tasks-compat: worker: {module} calls TaskServer.run() when imported, so the worker cannot"
        ' import its app without serving it: guard that call with `if __name__ == "__main__":`'
    )
