"""``mcp-tasks-compat tasks show`` tells an operator why a failed task failed (issue 41, item 8).

A task's error used to be visible only to its client: ``tasks show`` printed every field but it.
The tasks are written to a real SQLite file by an engine, as a server would, and read back by the
command as a subprocess.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from mcp_tasks_compat._engine import TaskEngine
from mcp_tasks_compat._engine.stores.urls import store_from_url
from mcp_tasks_compat.core._lifecycle import TaskEvent
from mcp_tasks_compat.core._model import JsonRpcError
from mcp_tasks_compat.dialects import DIALECT_2025_11_25, DIALECT_2026_07_28

from .harness import cli

CRASHED = "ValueError: the build broke\n  at step 3"
TOOL_SAID = "disk full: \x1b[31mno space\x1b[0m left"


async def _tasks(url: str) -> dict[str, str]:
    """A task failed by its tool's exception, one failed by its tool's error result (2025-11-25),
    and one completed, in the store at ``url``: name -> task id."""
    engine = TaskEngine(store=store_from_url(url))
    await engine.open()
    try:
        ids: dict[str, str] = {}
        for name, dialect in (
            ("raised", DIALECT_2026_07_28),
            ("error_result", DIALECT_2025_11_25),
            ("ok", DIALECT_2026_07_28),
        ):
            record = await engine.create(
                dialect=dialect, owner=None, tool_name="build", ttl_ms=None, arguments={"target": name}
            )
            ids[name] = record.task.task_id
            if name == "raised":
                await engine.finish(record, TaskEvent.FAIL, error=JsonRpcError(-32603, CRASHED))
            elif name == "error_result":
                result = {"content": [{"type": "text", "text": TOOL_SAID}], "isError": True}
                await engine.finish(record, TaskEvent.FAIL, result=result)
            else:
                await engine.finish(record, TaskEvent.COMPLETE, result={"content": [], "isError": False})
        return ids
    finally:
        await engine.store.close()


def _show(task_id: str, url: str, *more: str) -> str:
    done = cli("tasks", "show", task_id, "--store", url, *more)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _field(text: str, name: str) -> str:
    [line] = [line for line in text.splitlines() if line.split(" ", 1)[0] == name]
    return line[len(name) :].strip()


@pytest.mark.anyio
async def test_tasks_show_prints_why_a_failed_task_failed(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'tasks.db'}"
    ids = await _tasks(url)
    raised, error_result, ok = [await anyio.to_thread.run_sync(_show, ids[name], url) for name in ids]

    # One line each, the message folded, and a tool's text never acting on the terminal.
    assert _field(raised, "error") == "ValueError: the build broke at step 3 (JSON-RPC -32603)"
    assert _field(error_result, "error") == (
        "disk full: \\x1b[31mno space\\x1b[0m left (the tool's error result)"
    )
    assert "\x1b" not in error_result
    assert _field(raised, "status_message") == "ValueError: the build broke\\n  at step 3"  # one line
    assert _field(ok, "error") == "None"

    shown = json.loads(await anyio.to_thread.run_sync(_show, ids["raised"], url, "--json"))
    assert shown["error"] == {"code": -32603, "message": CRASHED, "data": None}
    listed = json.loads(cli("tasks", "list", "--store", url, "--json").stdout)
    errors = {task["task_id"]: task["error"] for task in listed["tasks"]}
    assert errors == {
        ids["raised"]: {"code": -32603, "message": CRASHED, "data": None},
        ids["error_result"]: {"code": None, "message": TOOL_SAID, "data": None},
        ids["ok"]: None,
    }
