"""``call`` and the example ``ask`` tool: answering a tool's question from the command line.

``--answer JSON`` answers it; a terminal is asked (driven here through a pseudo-terminal); with
neither, the task is cancelled and the command exits 2 with one line saying how to answer. Run
against ``example-server`` over stdio and over streamable HTTP, all command lines at once.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from .harness import CLI, PROCESS_TIMEOUT_S, STDIO_SERVER, TASK_DIALECT, Batch, Finished, http_example_server

QUESTION = '{"question": "Your name?"}'
ANSWER = '{"answer": "Ada"}'


@pytest.fixture(scope="module")
def runs() -> Iterator[Batch]:
    server = http_example_server()
    batch = Batch()
    try:
        batch.start(
            "stdio_answer", "call", "ask", QUESTION, "--answer", ANSWER, "--json", "--", *STDIO_SERVER
        )
        batch.start("stdio_no_answer", "call", "ask", QUESTION, "--json", "--", *STDIO_SERVER)
        batch.start("bad_answer", "call", "ask", QUESTION, "--answer", '["Ada"]', "--", *STDIO_SERVER)
        batch.start(
            "stdio_plain",
            "call",
            "ask",
            QUESTION,
            "--mode",
            "plain",
            "--answer",
            ANSWER,
            "--json",
            "--",
            *STDIO_SERVER,
        )
        url = server.start()
        batch.start("http_answer", "call", "ask", QUESTION, "--answer", ANSWER, "--json", "--url", url)
        batch.start("http_no_answer_human", "call", "ask", QUESTION, "--url", url)
        yield batch
    finally:
        batch.close()
        server.stop()
        assert not any("Traceback" in line for line in server.stderr_lines), "\n".join(server.stderr_lines)


def _answered(run: Finished, *, sees_input_required: bool = True) -> None:
    assert run.returncode == 0, run.describe()
    report = run.json()
    assert report["dialect"] == TASK_DIALECT
    assert report["task_id"]
    assert report["result"]["content"] == [{"type": "text", "text": "Ada"}]
    assert report["error"] is None
    statuses = [status["status"] for status in report["statuses"]]
    assert statuses[0] == "working"
    if sees_input_required:
        assert "input_required" in statuses
    assert statuses[-1] == "completed"


def test_call_answers_from_the_answer_option_over_stdio(runs: Batch) -> None:
    _answered(runs.result("stdio_answer"))


def test_call_answers_from_the_answer_option_over_http(runs: Batch) -> None:
    # On 2025-11-25 over HTTP the question arrives on the open tasks/result and is answered at
    # once; the input_required status is only pushed (notifications/tasks/status on the session's
    # standalone stream), so it may be missed, and nothing polls it (it failed ~1 run in 6).
    _answered(runs.result("http_answer"), sees_input_required=TASK_DIALECT == "2026-07-28")


def _refused(run: Finished) -> None:
    assert run.returncode == 2, run.describe()
    report = run.json()
    assert report["result"] is None
    assert report["statuses"][-1]["status"] == "cancelled", report
    error = report["error"]
    assert error["kind"] == "no-answer"
    assert error["message"].startswith(
        f"the tool asked 'Your name?' and there is no answer; task {report['task_id']}"
    )
    assert "ended cancelled: pass --answer JSON" in error["message"]
    assert "or run on a terminal" in error["message"]
    assert run.stderr_lines == [f"mcp-tasks-compat: {error['message']}"]


def test_without_an_answer_the_task_is_cancelled_and_call_exits_2_over_stdio(runs: Batch) -> None:
    _refused(runs.result("stdio_no_answer"))


def test_without_an_answer_the_task_is_cancelled_and_call_exits_2_over_http(runs: Batch) -> None:
    run = runs.result("http_no_answer_human")
    assert run.returncode == 2, run.describe()
    assert run.stdout == ""
    assert "Traceback" not in run.stderr
    assert "[cancelled]" in run.stderr  # the status line saw the task end
    last = run.stderr_lines[-1]
    assert last.startswith("mcp-tasks-compat: the tool asked 'Your name?' and there is no answer; task ")
    assert "ended cancelled: pass --answer JSON" in last


def test_an_answer_that_is_not_a_json_object_is_refused_before_connecting(runs: Batch) -> None:
    run = runs.result("bad_answer")
    assert run.returncode == 2, run.describe()
    assert run.stderr_lines == [
        "mcp-tasks-compat: --answer must be a JSON object (the form's content), not list: '[\"Ada\"]'"
    ]


def test_a_plain_call_asks_through_the_ordinary_request_where_the_dialect_has_one(runs: Batch) -> None:
    run = runs.result("stdio_plain")
    report = run.json()
    assert report["task_id"] is None
    if TASK_DIALECT == "2025-11-25":
        # 2025-11-25 plain call: an ordinary elicitation on the tools/call request.
        assert run.returncode == 0, run.describe()
        assert report["result"]["content"] == [{"type": "text", "text": "Ada"}]
    else:
        # 2026-07-28 has no server-to-client request in a plain call: the server says to use a task.
        assert run.returncode == 2, run.describe()
        assert report["error"]["kind"] == "refused"
        assert report["error"]["code"] == -32021
        assert "only give as a task" in report["error"]["message"]


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_call_asks_the_question_at_the_terminal() -> None:
    import pty

    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        [*CLI, "call", "ask", QUESTION, "--", *STDIO_SERVER],
        stdin=terminal,
        stdout=subprocess.PIPE,
        stderr=terminal,
        close_fds=True,
    )
    os.close(terminal)
    seen = b""
    answered = False
    deadline = time.monotonic() + PROCESS_TIMEOUT_S
    try:
        while process.poll() is None and time.monotonic() < deadline:
            ready, _, _ = select.select([controller], [], [], 0.5)  # a bounded wait for output, not a sleep
            if not ready:
                continue
            try:
                chunk = os.read(controller, 4096)
            except OSError:  # the terminal closed: the command ended
                break
            seen += chunk
            if not answered and b"answer (string): " in seen:
                os.write(controller, b"Grace\n")
                answered = True
        stdout, _ = process.communicate(timeout=PROCESS_TIMEOUT_S)
    finally:
        if process.poll() is None:
            process.kill()
        os.close(controller)
    screen = seen.decode("utf-8", "replace")
    assert answered, screen
    assert process.returncode == 0, screen
    assert "the tool asks: Your name?" in screen
    assert stdout.decode().strip() == "Grace"
    assert f"dialect {TASK_DIALECT}" in screen
    assert json.dumps("Grace") not in screen  # typed text only, not echoed as JSON
