"""The command line, run as subprocesses against each other: ``call`` and ``probe`` against
``example-server`` over stdio and over streamable HTTP, ``demo``, and every documented exit code.

All command lines start at once in the module fixture (each pays for an interpreter and an
``mcp`` import); each test then waits for its own and checks what it printed.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from mcp_tasks_compat._adapters import get_adapter
from mcp_tasks_compat._client_api import session_kwargs
from mcp_tasks_compat._examples import EXAMPLE_TASK_SUPPORT, EXAMPLE_TOOLS
from mcp_tasks_compat._version import __version__
from mcp_tasks_compat.client import negotiate, resume

from .harness import (
    CLI,
    OTHER_DIALECT,
    PROCESS_TIMEOUT_S,
    SERVER_DIALECTS,
    SPEAKS_2026,
    STDIO_SERVER,
    TASK_DIALECT,
    Batch,
    Finished,
    Lines,
    http_example_server,
)

DYING_SERVER = [sys.executable, str(Path(__file__).with_name("_dying_server.py"))]
ENV_SERVER = [sys.executable, "-m", "mcp_tasks_compat.testing", "serve", "tests.cli.env_tools:TOOLS"]
"""A kit server (run from the repository root, as the suite is) whose tool reports its environment."""
ENV_ARGS = '{"names": ["EDGES_INHERITED", "EDGES_SET", "EDGES_BOTH"]}'
UNREACHABLE_URL = "http://127.0.0.1:9/mcp"  # the discard port: nothing listens there
STEPS = ["step 1/3", "step 2/3", "step 3/3"]
ECHO = '{"text": "hello cli", "seconds": 1.5, "steps": 3}'
LONG_ECHO = '{"text": "never", "seconds": 30, "steps": 120}'


@pytest.fixture(scope="module")
def runs() -> Iterator[Batch]:
    server = http_example_server()
    batch = Batch()
    try:
        # What needs no HTTP server starts while the server imports mcp.
        batch.start("stdio_call", "call", "slow_echo", ECHO, "--json", "--", *STDIO_SERVER)
        batch.start("stdio_probe", "probe", "--json", "--", *STDIO_SERVER)
        batch.start("demo", "demo", "--seconds", "1", "--steps", "2")
        batch.start(
            "demo_other_dialect", "demo", "--dialect", OTHER_DIALECT, "--seconds", "1", "--steps", "2"
        )
        batch.start("bad_json", "call", "slow_echo", '{"text": ', "--json", "--url", UNREACHABLE_URL)
        batch.start("not_an_object", "call", "slow_echo", "[1, 2]", "--", *STDIO_SERVER)
        batch.start("two_targets", "call", "slow_echo", "--url", UNREACHABLE_URL, "--", *STDIO_SERVER)
        batch.start("unreachable", "call", "slow_echo", "{}", "--json", "--url", UNREACHABLE_URL)
        batch.start("no_such_command", "probe", "--", "mcp-tasks-compat-no-such-command")
        batch.start("dies", "call", "slow_echo", LONG_ECHO, "--json", "--", *DYING_SERVER)
        batch.start(
            "env",
            "call",
            "env_of",
            ENV_ARGS,
            "--json",
            "--env",
            "EDGES_SET=from --env",
            "--env",
            "EDGES_BOTH=flag wins",
            "--",
            *ENV_SERVER,
            env={"EDGES_INHERITED": "from the caller", "EDGES_BOTH": "caller"},
        )
        batch.start("env_bad", "call", "env_of", ENV_ARGS, "--env", "NOEQUALS", "--", *ENV_SERVER)
        batch.start("env_url", "call", "env_of", ENV_ARGS, "--env", "A=B", "--url", UNREACHABLE_URL)
        url = batch.url = server.start()
        batch.start("http_call", "call", "slow_echo", ECHO, "--json", "--url", url)
        batch.start("http_plain", "call", "slow_echo", ECHO, "--mode", "plain", "--json", "--url", url)
        batch.start("http_fail", "call", "fail", '{"message": "boom"}', "--json", "--url", url)
        batch.start(
            "http_must_plain", "call", "must_task", '{"text": "x"}', "--mode", "plain", "--json", "--url", url
        )
        batch.start("http_must_auto_human", "call", "must_task", '{"text": "x"}', "--url", url)
        batch.start(
            "http_cancel", "call", "slow_echo", LONG_ECHO, "--cancel-after", "1.5", "--json", "--url", url
        )
        batch.start(
            "http_timeout", "call", "slow_echo", LONG_ECHO, "--timeout", "1.5", "--json", "--url", url
        )
        batch.start("http_unknown_tool", "call", "no_such_tool", "{}", "--json", "--url", url)
        batch.start("http_probe", "probe", "--json", "--url", url)
        yield batch
    finally:
        batch.close()
        server.stop()
        assert not any("Traceback" in line for line in server.stderr_lines), "\n".join(server.stderr_lines)


def no_traceback(run: Finished) -> None:
    assert "Traceback" not in run.stderr, run.describe()
    assert "Traceback" not in run.stdout, run.describe()


def one_line_error(run: Finished, code: int) -> str:
    """The failure contract: the documented exit code and exactly one line on stderr."""
    assert run.returncode == code, run.describe()
    no_traceback(run)
    assert len(run.stderr_lines) == 1, run.describe()
    line = run.stderr_lines[0]
    assert line.startswith("mcp-tasks-compat: "), run.describe()
    return line


def messages(report: dict[str, object]) -> list[object]:
    statuses = report["statuses"]
    assert isinstance(statuses, list)
    return [entry["message"] for entry in statuses]  # pyright: ignore[reportUnknownVariableType]


def assert_echo_task(run: Finished) -> None:
    assert run.returncode == 0, run.describe()
    no_traceback(run)
    report = run.json()
    assert set(report) >= {"protocol_version", "dialect", "task_id", "statuses", "result", "elapsed_s"}
    assert report["dialect"] == TASK_DIALECT
    assert isinstance(report["task_id"], str)
    assert len(report["task_id"]) >= 16
    assert isinstance(report["protocol_version"], str)
    statuses = report["statuses"]
    assert statuses[0]["status"] == "working"
    assert statuses[-1]["status"] == "completed"
    assert {entry["status"] for entry in statuses} <= {"working", "completed"}
    seen = [message for message in messages(report) if message in STEPS]
    assert seen == sorted(seen), statuses  # in order
    assert seen[-1] == STEPS[-1], statuses  # the final status carries the last step
    if TASK_DIALECT == "2025-11-25":
        # Pushed as notifications/tasks/status: every step arrives. On 2026-07-28 statuses are
        # polled, so a poll may fall between two steps on a loaded machine.
        assert sorted(set(seen)) == STEPS, statuses
    assert report["result"]["content"] == [{"type": "text", "text": "hello cli"}]
    assert report["result"].get("isError") is not True
    assert report["error"] is None
    assert 1.4 <= report["elapsed_s"] < 60


# --- call ---------------------------------------------------------------------------------------


def test_call_over_stdio_runs_the_tool_as_a_task(runs: Batch) -> None:
    assert_echo_task(runs.result("stdio_call"))


def test_call_over_http_runs_the_tool_as_a_task(runs: Batch) -> None:
    assert_echo_task(runs.result("http_call"))


def test_call_mode_plain_is_never_a_task(runs: Batch) -> None:
    run = runs.result("http_plain")
    assert run.returncode == 0, run.describe()
    report = run.json()
    assert report["dialect"] is None
    assert report["task_id"] is None
    assert report["statuses"] == []
    assert report["result"]["content"] == [{"type": "text", "text": "hello cli"}]


def test_call_tool_error_exits_1_with_the_error_result(runs: Batch) -> None:
    run = runs.result("http_fail")
    line = one_line_error(run, 1)
    report = run.json()
    assert report["result"]["isError"] is True
    assert report["error"]["kind"] == "tool-error"
    if TASK_DIALECT == "2026-07-28":  # a quick tool: answered plainly within the server's inline grace
        assert (report["dialect"], report["statuses"]) == (None, [])
    else:
        assert report["dialect"] == TASK_DIALECT
        assert report["statuses"][-1]["status"] == "failed"
    assert report["error"]["message"] in line


def test_call_required_task_tool_as_plain_is_refused_by_the_server(runs: Batch) -> None:
    run = runs.result("http_must_plain")
    line = one_line_error(run, 2)
    report = run.json()
    assert report["dialect"] is None
    assert report["task_id"] is None
    assert report["result"] is None
    assert report["error"]["kind"] == "refused"
    # 2025-11-25: -32601 (task-augmented invocation required); 2026-07-28: -32021 (missing client capability).
    assert report["error"]["code"] == {"2025-11-25": -32601, "2026-07-28": -32021}[TASK_DIALECT]
    assert "must_task" in line


def test_call_required_task_tool_in_auto_mode_runs_as_a_task_human_output(runs: Batch) -> None:
    run = runs.result("http_must_auto_human")
    assert run.returncode == 0, run.describe()
    no_traceback(run)
    assert run.stdout == "x\n"  # the result on stdout ...
    lines = run.stderr_lines  # ... the task, its live status (plain lines: not a terminal) and a summary
    assert re.fullmatch(rf"task \S+ \(dialect {TASK_DIALECT}\)", lines[0]), run.describe()
    assert lines[1].startswith("[working]"), run.describe()
    assert any("running as a task" in line for line in lines), run.describe()  # working or completed
    assert any(line.startswith("[completed]") for line in lines), run.describe()
    assert lines[-1].startswith("done in "), run.describe()
    assert f"dialect {TASK_DIALECT}" in lines[-1], run.describe()


def test_call_cancel_after_cancels_the_task_and_exits_3(runs: Batch) -> None:
    run = runs.result("http_cancel")
    line = one_line_error(run, 3)
    report = run.json()
    assert report["error"]["kind"] == "cancelled"
    assert report["result"] is None
    assert "--cancel-after" in line
    if report["task_id"] is not None:  # created before the deadline (always, unless the machine crawls)
        assert report["dialect"] == TASK_DIALECT
        assert report["statuses"][-1]["status"] == "cancelled"
    assert 1.4 <= report["elapsed_s"] < 30


def test_call_timeout_cancels_the_task_and_exits_3(runs: Batch) -> None:
    run = runs.result("http_timeout")
    line = one_line_error(run, 3)
    report = run.json()
    assert report["error"]["kind"] == "timeout"
    assert "did not finish within 1.5 s" in line
    if report["task_id"] is not None:
        assert report["statuses"][-1]["status"] == "cancelled"
    assert 1.4 <= report["elapsed_s"] < 30


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process is a POSIX thing")
def test_call_ctrl_c_cancels_the_task_and_exits_3(runs: Batch) -> None:
    process = subprocess.Popen(
        [*CLI, "call", "slow_echo", LONG_ECHO, "--url", runs.url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines = Lines(process)
    first = lines.next()  # the task exists and runs
    assert first is not None
    heading = re.fullmatch(rf"task (\S+) \(dialect {TASK_DIALECT}\)\n", first)
    assert heading is not None, first
    process.send_signal(signal.SIGINT)
    rest = [line for line in iter(lines.next, None) if line.strip()]  # stderr up to its end
    process.wait(timeout=PROCESS_TIMEOUT_S)
    assert process.stdout is not None
    assert process.stdout.read() == ""
    assert process.returncode == 3, lines.seen
    assert rest[-1] == f"mcp-tasks-compat: task {heading.group(1)} cancelled by Ctrl-C\n", lines.seen
    assert rest[-2].startswith("[cancelled]"), lines.seen  # the task's own final status
    assert not any("Traceback" in line for line in lines.seen), lines.seen
    if TASK_DIALECT == "2026-07-28":
        # 2026-07-28 task ids are handles: another connection sees that Ctrl-C cancelled the task.
        # (2025-11-25 tasks belong to the session that made them, and it is gone.)
        assert anyio.run(status_of, runs.url, heading.group(1)) == "cancelled"


async def status_of(url: str, task_id: str) -> str:
    async with (
        get_adapter().app.http_streams(url) as streams,
        get_adapter().app.open_session(streams, session_kwargs()) as session,
    ):
        await negotiate(session)
        run = await resume(session, task_id)
        return run.last_status.status.value if run.last_status is not None else "?"


def test_call_passes_the_callers_environment_and_env_pairs_to_the_server_command(runs: Batch) -> None:
    run = runs.result("env")
    assert run.returncode == 0, run.describe()
    text = "".join(block["text"] for block in run.json()["result"]["content"])
    assert text == "EDGES_INHERITED=from the caller;EDGES_SET=from --env;EDGES_BOTH=flag wins"


def test_call_env_takes_k_v_for_a_server_command_only(runs: Batch) -> None:
    bad = runs.result("env_bad")
    assert bad.returncode == 2, bad.describe()
    assert "--env takes K=V, not 'NOEQUALS'" in bad.stderr
    url = runs.result("env_url")
    assert url.returncode == 2, url.describe()
    assert "--env sets a server command's environment" in url.stderr


def test_call_unknown_tool_exits_2_naming_what_exists(runs: Batch) -> None:
    run = runs.result("http_unknown_tool")
    line = one_line_error(run, 2)
    assert run.stdout == "" or run.json()["error"]["message"] == line.removeprefix("mcp-tasks-compat: ")
    assert "unknown tool 'no_such_tool'" in line
    assert f"the server offers: {', '.join(EXAMPLE_TOOLS)}" in line


def test_call_invalid_args_json_exits_2(runs: Batch) -> None:
    line = one_line_error(runs.result("bad_json"), 2)
    assert "ARGS_JSON is not valid JSON" in line
    line = one_line_error(runs.result("not_an_object"), 2)
    assert "ARGS_JSON must be a JSON object, not list" in line


def test_call_takes_exactly_one_target(runs: Batch) -> None:
    line = one_line_error(runs.result("two_targets"), 2)
    assert "not both" in line


def test_call_unreachable_url_exits_2_in_one_line(runs: Batch) -> None:
    run = runs.result("unreachable")
    line = one_line_error(run, 2)
    assert "cannot reach the server" in line
    report = run.json()  # --json prints its one document whatever happened
    assert report["error"]["kind"] == "failed"
    assert "cannot reach the server" in report["error"]["message"]
    assert report["task_id"] is None


def test_probe_command_that_does_not_exist_exits_2_in_one_line(runs: Batch) -> None:
    line = one_line_error(runs.result("no_such_command"), 2)
    assert "cannot start the server command" in line
    assert "mcp-tasks-compat-no-such-command" in line


def test_call_server_dying_mid_call_exits_2_in_one_line(runs: Batch) -> None:
    run = runs.result("dies")
    line = one_line_error(run, 2)
    assert "connection" in line, line
    report = run.json()  # --json prints its one document, with the task it followed
    assert report["error"]["kind"] == "connection-lost"
    if report["task_id"] is not None:
        assert report["task_id"] in report["error"]["message"]
        assert f"call --resume {report['task_id']}" in line


# --- probe --------------------------------------------------------------------------------------


def assert_probe(run: Finished) -> None:
    assert run.returncode == 0, run.describe()
    no_traceback(run)
    found = run.json()
    assert set(found) >= {
        "protocol_version",
        "server",
        "dialects",
        "tools",
        "connections",
        "checked_dialects",
    }
    assert found["server"] == {"name": "mcp-tasks-compat-example", "version": __version__}
    assert found["dialects"] == SERVER_DIALECTS
    assert isinstance(found["protocol_version"], str)
    assert found["tools"] == [
        {"name": name, "task_support": EXAMPLE_TASK_SUPPORT[name]} for name in EXAMPLE_TOOLS
    ]
    assert {"slow_echo": "optional", "fail": "optional", "must_task": "required"}.items() <= {
        tool["name"]: tool["task_support"] for tool in found["tools"]
    }.items()
    handshakes = [connection["handshake"] for connection in found["connections"]]
    assert handshakes == (["server/discover", "initialize"] if SPEAKS_2026 else ["initialize"])


def test_probe_over_stdio(runs: Batch) -> None:
    assert_probe(runs.result("stdio_probe"))


def test_probe_over_http(runs: Batch) -> None:
    assert_probe(runs.result("http_probe"))


# --- demo ---------------------------------------------------------------------------------------


def test_demo_runs_a_task_and_cancels_another(runs: Batch) -> None:
    run = runs.result("demo")
    assert run.returncode == 0, run.describe()
    no_traceback(run)
    out = run.stdout
    assert f"task dialect {TASK_DIALECT}" in out
    assert "result: 'hello from a task'" in out
    assert "[working] step 1/2" in out  # plain lines: stdout is not a terminal here
    assert "\r" not in out
    assert f"is cancelled (dialect {TASK_DIALECT})" in out
    # The third run asks a question; stdout is not a terminal, so the demo answers it itself.
    assert "3) ask as a task" in out
    assert "[input_required] waiting for an answer" in out
    assert 'the tool asks \'What is your name?\'; answering {"answer": "Ada"}' in out
    assert "result: 'Ada' (task " in out
    assert f"done: all three runs used the {TASK_DIALECT} dialect" in out
    # The README shows the same runs (its block was taken on mcp 2.3.0, with the default timings).
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    block = readme.split("$ mcp-tasks-compat demo\n", 1)[1].split("```", 1)[0]

    def headings(text: str) -> list[str]:
        return [line.split(" (")[0] for line in text.splitlines() if line[:1].isdigit() and line[1:2] == ")"]

    assert headings(block) == headings(out)
    assert len(headings(out)) == 3
    assert "done: all three runs used" in block


def test_demo_other_dialect_refused_on_1x_run_on_2x(runs: Batch) -> None:
    run = runs.result("demo_other_dialect")
    if not SPEAKS_2026:  # mcp 1.x
        line = one_line_error(run, 2)
        assert "dialect='2026-07-28'" in line
        assert "pip install 'mcp>=2,<3'" in line
        assert run.stdout == ""
    else:
        assert run.returncode == 0, run.describe()
        assert "protocol 2025-11-25 (initialize); task dialect 2025-11-25" in run.stdout
        assert "done: all three runs used the 2025-11-25 dialect" in run.stdout
