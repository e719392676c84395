"""A 2025-11-25 session that ends mid-task, spoken raw to ``example-server``, and what it must leave.

The rule (docs/server.md, "When a session ends"), the same on both majors: a session's end stops
none of its runs; the server's stop stops them. Over streamable HTTP the server outlives each
session, so a task whose session was ended (``DELETE``) or whose connection dropped mid-request
(a ``tasks/result`` cut off by the client) runs to its end, and its result is read from another
session. The server runs with ``--unauthenticated-2025-scope task_id`` (no auth: whoever holds the
id reads the task) so the other session may read it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import httpx

from mcp_tasks_compat.testing import HttpServerProcess

from .differential_2025 import RawSession, Step, example_server_command

__all__ = ["SESSION_END_STEPS", "run_session_end", "session_end_wrong_answers"]

TOOL_S: Final = 1.5
"""The tasks' run: long enough that each session ends while its task runs."""
DROP_AFTER_S: Final = 0.2
"""How long the dropped ``tasks/result`` waits before the client cuts its connection."""

SESSION_END_STEPS: Final = (
    "tasks/result of the task whose session was deleted",
    "tasks/get the task whose session was deleted",
    "tasks/result of the task whose connection dropped",
    "tasks/get the task whose connection dropped",
)


def _started(session: RawSession, name: str, text: str) -> str:
    params = {"name": "slow_echo", "arguments": {"text": text, "seconds": TOOL_S, "steps": 1}, "task": {}}
    answer = session.request(f"tools/call slow_echo as a task ({name})", "tools/call", params)
    try:
        return str(answer["result"]["task"]["taskId"])
    except (KeyError, TypeError):
        raise AssertionError(f"{name}: no task was created: {answer}") from None


def converse_session_end(url: str) -> list[Step]:
    """Two sessions end mid-task (one deleted, one dropped); a third reads both tasks."""
    steps: list[Step] = []
    with httpx.Client() as client:
        deleted = RawSession(client, url, steps)
        deleted.initialize("initialize the session to delete")
        deleted_id = _started(deleted, "its session deleted", "deleted")
        response = client.delete(url, headers={"mcp-session-id": str(deleted.session_id)}, timeout=10)
        assert response.status_code in (200, 202, 204), (
            f"DELETE: HTTP {response.status_code} {response.text!r}"
        )

    with httpx.Client() as client:
        dropped = RawSession(client, url, steps)
        dropped.initialize("initialize the session to drop")
        dropped_id = _started(dropped, "its connection dropped", "dropped")
        frame = {"jsonrpc": "2.0", "id": 99, "method": "tasks/result", "params": {"taskId": dropped_id}}
        try:  # the client gives up on the answer and its connection goes with it
            client.post(url, json=frame, headers=dropped._headers(), timeout=DROP_AFTER_S)  # pyright: ignore[reportPrivateUsage]
        except httpx.TimeoutException:
            pass
        else:
            raise AssertionError("tasks/result answered before the task could have ended")

    with httpx.Client() as client:
        reader = RawSession(client, url, steps)
        reader.initialize("initialize the reading session")
        for label, task_id in (("session was deleted", deleted_id), ("connection dropped", dropped_id)):
            reader.request(f"tasks/result of the task whose {label}", "tasks/result", {"taskId": task_id})
            reader.request(f"tasks/get the task whose {label}", "tasks/get", {"taskId": task_id})
    return steps


def run_session_end(python: str) -> list[Step]:
    """Start the example server under ``python`` (ids as capabilities) and hold the conversation."""
    command = [*example_server_command(python), "--unauthenticated-2025-scope", "task_id"]
    with HttpServerProcess(command) as url:
        return converse_session_end(url)


def _answer(steps: Sequence[tuple[str, Any]], name: str) -> Mapping[str, Any]:
    for step_name, answer in steps:
        if step_name == name:
            return answer
    raise AssertionError(f"no step {name!r}")


def session_end_wrong_answers(steps: Sequence[tuple[str, Any]]) -> list[str]:
    """What the normalised conversation answers against the rule: each task ran to its end."""
    wrong: list[str] = []
    for label, text in (("session was deleted", "deleted"), ("connection dropped", "dropped")):
        result = _answer(steps, f"tasks/result of the task whose {label}").get("result") or {}
        content = result.get("content") if isinstance(result, Mapping) else None
        if content != [{"type": "text", "text": text}]:
            wrong.append(f"the task whose {label} did not end with its result: {result}")
        task = _answer(steps, f"tasks/get the task whose {label}").get("result") or {}
        if not isinstance(task, Mapping) or task.get("status") != "completed":
            wrong.append(f"the task whose {label} reads {task} afterwards, not completed")
    return wrong
