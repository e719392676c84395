"""Re-run by choice, in the engine (issue 25): a lost run of a tool declared safe to run again is
started again with its kept arguments, its attempt counted and said, within its bound; past it, or
where the adapter cannot call the tool without a request, it is failed as every lost run is. On a
real SQLite file, as a server restarted on it finds its predecessor's runs."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_tasks_compat._engine import TaskEngine, TaskPolicy, Work
from mcp_tasks_compat._engine.stores import SqliteTaskStore
from mcp_tasks_compat._engine.stores.task_state import loads, state_from_json, state_to_json
from mcp_tasks_compat.core._model import TaskStatus
from mcp_tasks_compat.dialects import DIALECT_2026_07_28

pytestmark = pytest.mark.anyio

BOUND_S = 10


def _dead_runner() -> str:
    """A runner id of a process of this host that has exited (as a killed server's is)."""
    process = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, check=True
    )
    return f"{socket.gethostname()}/{int(process.stdout)}/deadbeef"


async def _lost_task(path: Path, *, reruns: int, attempt: int, arguments: Mapping[str, Any] | None) -> str:
    """A task left ``working`` by a dead process, as it would have saved it."""
    engine = TaskEngine(store=SqliteTaskStore(path))
    engine.reruns["build"] = reruns
    await engine.open()
    record = await engine.create(
        dialect=DIALECT_2026_07_28, owner=None, tool_name="build", ttl_ms=None, arguments=arguments
    )
    lost = record.state.evolve(runner=_dead_runner(), attempt=attempt)
    await engine.store.save(lost)
    await engine.store.close()
    return record.task.task_id


async def _restarted(
    path: Path, task_id: str, *, reruns: int, can_call: bool
) -> tuple[Any, list[Mapping[str, Any]]]:
    """A new engine on the file (a restarted server), serving until the task ends; its final state
    and the arguments each re-run was given."""
    calls: list[Mapping[str, Any]] = []

    def rerun_work(tool_name: str, arguments: Mapping[str, Any], lifespan: Any) -> Work | None:
        assert tool_name == "build"

        async def work() -> Mapping[str, Any]:
            calls.append(dict(arguments))
            return {"content": [{"type": "text", "text": f"built {arguments['target']}"}], "isError": False}

        return work if can_call else None

    engine = TaskEngine(store=SqliteTaskStore(path), lease_s=5)
    engine.reruns["build"] = reruns
    with anyio.fail_after(BOUND_S):
        async with engine.hosted(tools=rerun_work):
            task = await engine.reader.wait_terminal(task_id, None)
    await engine.store.close()
    return task, calls


async def test_a_lost_run_within_its_bound_runs_again_with_its_arguments(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    task_id = await _lost_task(path, reruns=2, attempt=1, arguments={"target": "docs"})
    task, calls = await _restarted(path, task_id, reruns=2, can_call=True)
    assert calls == [{"target": "docs"}]
    assert task.status is TaskStatus.COMPLETED
    assert task.result["content"][0]["text"] == "built docs"
    state = await _stored(path, task_id)
    assert state.attempt == 2
    assert state.runner is None  # ended: nobody's run any more


@pytest.mark.parametrize(
    ("attempt", "can_call", "arguments"),
    [(3, True, {"target": "docs"}), (1, False, {"target": "docs"}), (1, True, None)],
    ids=["bound-used-up", "adapter-cannot-call", "no-arguments-kept"],
)
async def test_a_lost_run_past_its_bound_or_not_runnable_again_fails_as_before(
    tmp_path: Path, attempt: int, can_call: bool, arguments: Mapping[str, Any] | None
) -> None:
    path = tmp_path / "tasks.db"
    task_id = await _lost_task(path, reruns=2, attempt=attempt, arguments=arguments)
    task, calls = await _restarted(path, task_id, reruns=2, can_call=can_call)
    assert calls == []
    assert task.status is TaskStatus.FAILED
    attempts = f"failed after {attempt} attempts: " if attempt > 1 else ""  # past its bound: says so
    assert task.status_message == f"{attempts}the server stopped while this task ran"


async def test_arguments_are_kept_only_for_a_tool_that_may_run_again(tmp_path: Path) -> None:
    engine = TaskEngine(store=SqliteTaskStore(tmp_path / "tasks.db"))
    engine.reruns["build"] = 1
    await engine.open()
    kept = await engine.create(
        dialect=DIALECT_2026_07_28, owner=None, tool_name="build", ttl_ms=None, arguments={"target": "x"}
    )
    other = await engine.create(
        dialect=DIALECT_2026_07_28, owner=None, tool_name="deploy", ttl_ms=None, arguments={"secret": "y"}
    )
    assert (kept.state.rerun, kept.state.arguments) == (True, {"target": "x"})
    assert (other.state.rerun, other.state.arguments) == (False, None)
    text = (tmp_path / "tasks.db").read_bytes()
    assert b'"secret"' not in text
    await engine.store.close()


def test_a_state_saved_before_reruns_existed_loads_as_a_first_attempt() -> None:
    engine = TaskEngine()
    state = anyio.run(
        lambda: engine.create(dialect=DIALECT_2026_07_28, owner=None, tool_name="t", ttl_ms=None)
    ).state
    data = state_to_json(state)
    del data["arguments"], data["attempt"]
    old = state_from_json(data)
    assert (old.arguments, old.attempt) == (None, 1)
    again = loads(json.dumps(state_to_json(state.evolve(arguments={"a": [1]}, attempt=3))))
    assert (again.arguments, again.attempt) == ({"a": [1]}, 3)


@pytest.mark.parametrize("count", [-1, 101, True, 1.5])
def test_a_rerun_count_out_of_bounds_is_refused(count: Any) -> None:
    with pytest.raises(ValueError, match="reruns of 'build' must be an int from 0 to 100"):
        TaskPolicy(reruns={"build": count})


async def _stored(path: Path, task_id: str) -> Any:
    store = SqliteTaskStore(path)
    await store.open()
    try:
        return await store.get(task_id)
    finally:
        await store.close()
