"""``tasks list|show|cancel|purge --store URL``: an operator's view of a server's task store.

Reads and writes the store directly, without a client session, so one command shows (and stops)
what a whole fleet runs. A cancel goes through the engine: the lifecycle table judges it, and on
a shared store the replica running the work hears of it and stops the work.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Final, cast

import anyio

from .._engine import EVERY_OWNER, TaskEngine, TaskState, TaskStore
from .._engine.stores.echo import printable, shown_url
from .._engine.stores.urls import sqlite_path, store_from_url
from ..core._lifecycle import TaskEvent
from ..core._model import Task, TaskStatus, format_timestamp
from ..errors import CompatError
from .common import EXIT_OK, EXIT_TOOL_ERROR, EXIT_USAGE, one_line, result_text

__all__ = ["OPERATOR_CANCEL_REASON", "TasksOptions", "run_tasks", "where"]

OPERATOR_CANCEL_REASON: Final = "cancelled by an operator (mcp-tasks-compat tasks cancel)"
PAGE: Final = 500


@dataclass(frozen=True)
class TasksOptions:
    action: str  # list | show | cancel | purge
    store: str
    task_id: str | None = None
    as_json: bool = False


def _age(since: datetime, now: datetime) -> str:
    seconds = max(0, int((now - since).total_seconds()))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h"


def _ttl_left(state: TaskState, now: datetime) -> str:
    if state.expires_at is None:
        return "unlimited"
    return _age(now, state.expires_at) if state.expires_at > now else "due"


def _row(state: TaskState, now: datetime) -> dict[str, Any]:
    """One task as the operator sees it (also the ``--json`` shape)."""
    task = state.task
    return {
        "task_id": task.task_id,
        "status": task.status.value,
        "tool": state.tool_name,
        "owner": state.owner,
        "dialect": state.dialect,
        "created_at": format_timestamp(task.created_at),
        "age_s": round((now - task.created_at).total_seconds(), 3),
        "expires_at": None if state.expires_at is None else format_timestamp(state.expires_at),
        "ttl_left_s": None
        if state.expires_at is None
        else round(max(0.0, (state.expires_at - now).total_seconds()), 3),
        "status_message": task.status_message,
        "error": _error_of(task),
        "runner": state.runner,
        "run_on": state.run_on,
        "queued": state.queued,
    }


def _error_of(task: Task) -> dict[str, Any] | None:
    """How a failed task failed, as its client hears it (``None`` for any other): its JSON-RPC
    error, or the text of the tool's error result (``code`` ``None``: a 2025-11-25 tool error)."""
    if task.error is not None:
        return {"code": task.error.code, "message": task.error.message, "data": task.error.data}
    if task.status is TaskStatus.FAILED and task.result is not None:
        return {"code": None, "message": result_text(task.result), "data": None}
    return None


def _shown(value: object) -> str:
    """A field of ``tasks show`` as its one line of text (an error: its message, and its code).
    A tool's text (its status, its error) is printed with its control characters escaped, so
    none acts on the operator's terminal or splits the line."""
    if not isinstance(value, dict):
        return printable(str(value))
    error = cast("dict[str, Any]", value)
    code = "the tool's error result" if error["code"] is None else f"JSON-RPC {error['code']}"
    return printable(f"{one_line(str(error['message']))} ({code})")


def where(state: TaskState) -> str:
    """Where the task runs: ``queued`` (waiting for a worker), the runner's id (a server replica
    or a worker, ``host/pid/id``), or ``-`` (ended, or never claimed on a store of one process)."""
    if state.queued:
        return "queued"
    if state.runner is None or state.is_terminal:
        return "-"
    return f"{state.runner} (worker)" if state.run_on == "workers" else state.runner


def _table(states: Sequence[TaskState], now: datetime) -> str:
    header = ("TASK", "STATUS", "TOOL", "OWNER", "AGE", "TTL LEFT", "WHERE")
    rows = [
        (
            s.task_id,
            s.task.status.value,
            s.tool_name,
            s.owner or "-",
            _age(s.task.created_at, now),
            _ttl_left(s, now),
            where(s),
        )
        for s in states
    ]
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(f"{cell:<{widths[i]}}" for i, cell in enumerate(row)).rstrip() for row in [header, *rows]
    ]
    lines.append(f"{len(rows)} task(s)")
    return "\n".join(lines)


async def _every_state(engine: TaskEngine) -> list[TaskState]:
    found: list[TaskState] = []
    cursor: str | None = None
    while True:
        page, cursor = await engine.store.list_tasks(owner=EVERY_OWNER, cursor=cursor, limit=PAGE)
        found.extend(page)
        if cursor is None:
            return found


def _durable_store(url: str) -> TaskStore:
    """The store ``url`` names, refused when there is nothing to read: ``memory:`` lives inside one
    server process, and a SQLite file that does not exist would be created empty."""
    if url == "memory:":
        raise ValueError(
            "memory: is the store inside one server process; the tasks command reads a durable "
            "store: --store sqlite:///path/to/tasks.db, redis://host:port/db or postgresql://user@host/db"
        )
    path = sqlite_path(url)
    if path is not None and not Path(path).is_file():
        raise ValueError(
            f"{shown_url(url)}: no such file {path!r} (is the path right? sqlite:////abs/path.db)"
        )
    return store_from_url(url)


async def _run(options: TasksOptions) -> tuple[int, str]:
    engine = TaskEngine(store=_durable_store(options.store))
    await engine.open()
    try:
        now = engine.reader.now()  # the store's clock, which leases and deadlines are on
        if options.action == "list":
            states = await _every_state(engine)
            if options.as_json:
                return EXIT_OK, json.dumps(
                    {"store": engine.store.describe, "tasks": [_row(s, now) for s in states]}
                )
            return EXIT_OK, _table(states, now)
        if options.action == "purge":
            ended = [s for s in await _every_state(engine) if s.is_terminal]
            for state in ended:
                await engine.writer.forget(state.task_id)
            if options.as_json:
                return EXIT_OK, json.dumps(
                    {"store": engine.store.describe, "purged": [s.task_id for s in ended]}
                )
            return EXIT_OK, f"purged {len(ended)} ended task(s) from {engine.store.describe}"
        assert options.task_id is not None
        state = await engine.store.get(options.task_id)
        if state is None:
            return (
                EXIT_TOOL_ERROR,
                f"mcp-tasks-compat: no task {options.task_id[:64]!r} in {engine.store.describe}",
            )
        if options.action == "cancel":
            record = engine.record_of(state)
            await engine.finish(record, TaskEvent.CANCEL, message=OPERATOR_CANCEL_REASON, stop_work=True)
            state = record.state
        row = _row(state, now)
        if options.as_json:
            return EXIT_OK, json.dumps(row)
        width = max(len(key) for key in row)
        return EXIT_OK, "\n".join(f"{key:<{width}}  {_shown(value)}" for key, value in row.items())
    finally:
        await engine.store.close()


def run_tasks(options: TasksOptions) -> int:
    """Run one operator action; the output goes to stdout, a failure is one line on stderr."""
    try:
        code, text = anyio.run(_run, options)
    except (CompatError, ValueError) as error:
        message = error.message if isinstance(error, CompatError) else str(error)
        print(f"mcp-tasks-compat: {message.splitlines()[0]}", file=sys.stderr)
        return EXIT_USAGE
    print(text, file=sys.stdout if code == EXIT_OK else sys.stderr)
    return code
