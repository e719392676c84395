"""Cross-language interoperability: the official TypeScript MCP packages against this library.

Pairs (see docs/interop.md, "Cross-language"):

* ``@modelcontextprotocol/ext-tasks`` 0.2.2 over ``@modelcontextprotocol/client`` 2.x (client)
  against our mcp 2.x server, in both dialects;
* ``@modelcontextprotocol/sdk`` 1.x experimental tasks client against our server on both majors;
* ``@modelcontextprotocol/sdk`` 1.x task server against our client on both majors.

The first test checks the peers against each other (TypeScript on both ends), so a failure in a
pair with our code is not a broken peer script.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from mcp_tasks_compat._client_api import session_kwargs
from mcp_tasks_compat._detect import sdk_info
from mcp_tasks_compat._examples import EXAMPLE_TASK_SUPPORT
from mcp_tasks_compat.client import call_tool, negotiate, resume, start_tool
from mcp_tasks_compat.core._model import Task
from mcp_tasks_compat.errors import TaskCancelledError

from .example_server import CLI_STDIO_SERVER, SeenRequest, build_example_server, serve_http
from .peers import PeerRun, TsPeers, ts_peers

__all__ = ["ts_peers"]  # the fixture, imported so pytest finds it here

pytestmark = pytest.mark.anyio


def _args(**arguments: object) -> str:
    return json.dumps(arguments)


# --- the peers against each other ---------------------------------------------------------------


@pytest.mark.mcp2  # TypeScript on both ends does not involve mcp: the 2.x sessions suffice
def test_sdk1_client_runs_a_task_on_the_sdk1_server_over_stdio(ts_peers: TsPeers) -> None:
    run = ts_peers.run(
        "sdk1_client.mjs",
        "--args",
        _args(text="hello", seconds=0.2, steps=2),
        "--",
        *ts_peers.sdk1_server_command(),
    )
    report = run.report
    assert report["crashed"] is None, run.explain()
    assert report["protocol_version"] == "2025-11-25"
    assert report["tools"] == {
        "slow_echo": "optional",
        "fail": "optional",
        "must_task": "required",
        "ask": "required",
    }
    assert report["task_id"], run.explain()
    assert report["result"]["content"] == [{"type": "text", "text": "hello"}]
    messages = [status["message"] for status in report["statuses"] if status["message"]]
    assert messages[-1] == "step 2/2", run.explain()
    assert report["statuses"][-1]["status"] == "completed"


# --- ext-tasks client against our server (2026-07-28: mcp 2.x; 2025-11-25: both majors) -----------

DIALECTS_BY_MAJOR = [
    pytest.param("2026-07-28", marks=pytest.mark.mcp2),  # our mcp 1.x server speaks 2025-11-25 only
    "2025-11-25",
]
BOUND_S = 60.0
"""A bound on each call to a TS peer, not its expected length: the peer is a node process."""
SLOW = {"text": "hello", "seconds": 0.6, "steps": 3}
"""Steps of 0.2 s against a 100 ms poll hint for young tasks: most step messages are observed."""
LONG = {"text": "never", "seconds": 30, "steps": 300}
"""A run that only ends by cancellation: the first step message arrives after 0.1 s."""


def _step_messages(statuses: list[dict[str, Any]]) -> list[str]:
    """The distinct step messages in the order seen (a terminal status repeats the last message)."""
    seen: list[str] = []
    for status in statuses:
        message = status["message"] or ""
        if message.startswith("step ") and (not seen or seen[-1] != message):
            seen.append(message)
    return seen


def _assert_steps_in_order(statuses: list[dict[str, Any]], steps: int, run: PeerRun) -> None:
    """Statuses were seen by polling, so some steps may be missed; those seen must be in order."""
    seen = _step_messages(statuses)
    expected = [f"step {i}/{steps}" for i in range(1, steps + 1)]
    assert seen, f"no step status message observed\n{run.explain()}"
    assert seen == sorted(set(seen), key=expected.index), run.explain()


async def _ext_tasks(
    ts_peers: TsPeers, url: str, dialect: str, tool: str, args: object, *extra: str
) -> PeerRun:
    return await ts_peers.run_async(
        "ext_tasks_client.mjs",
        "--dialect",
        dialect,
        "--tool",
        tool,
        "--args",
        json.dumps(args),
        "--url",
        url,
        *extra,
    )


@pytest.mark.parametrize("dialect", DIALECTS_BY_MAJOR)
async def test_ext_tasks_client_runs_slow_echo_as_a_task(ts_peers: TsPeers, dialect: str) -> None:
    seen: list[SeenRequest] = []
    async with serve_http(build_example_server(), seen=seen) as url:
        run = await _ext_tasks(ts_peers, url, dialect, "slow_echo", SLOW)
    report = run.report
    assert report["crashed"] is None, run.explain()
    expected_version = dialect if dialect == "2026-07-28" else _handshake_version()
    assert (report["protocol_version"], report["dialect"]) == (expected_version, dialect), run.explain()
    assert report["kind"] == "task", run.explain()
    assert report["task_id"]
    _assert_steps_in_order(report["statuses"], 3, run)
    assert report["statuses"][-1]["status"] == "completed"
    outcome = report["outcome"]
    assert outcome["status"] == "completed", run.explain()
    assert outcome["result"]["content"] == [{"type": "text", "text": "hello"}]
    assert not outcome["result"].get("isError")
    assert report["background_errors"] == []
    task_requests = [r for r in seen if r.method.startswith("tasks/")]
    assert task_requests, "the task was followed over HTTP"
    if dialect == "2026-07-28":
        # SEP-2663 over streamable HTTP: tasks/* carry Mcp-Name: <taskId> (set from the raw body).
        assert all(r.headers.get("mcp-name") == r.params.get("taskId") for r in task_requests), seen
        assert all(r.headers.get("mcp-method") == r.method for r in task_requests), seen


@pytest.mark.mcp2
async def test_ext_tasks_client_against_the_cli_example_server_over_stdio(ts_peers: TsPeers) -> None:
    """2026-07-28 over stdio, against ``mcp-tasks-compat example-server`` (the command-line server)."""
    run = await ts_peers.run_async(
        "ext_tasks_client.mjs",
        "--dialect",
        "2026-07-28",
        "--tool",
        "must_task",
        "--args",
        json.dumps({"text": "over stdio"}),
        "--",
        *CLI_STDIO_SERVER,
    )
    report = run.report
    assert report["crashed"] is None, run.explain()
    assert report["server_info"]["name"] == "mcp-tasks-compat-example"
    assert report["dialect"] == "2026-07-28"
    # server/discover travelled on the session's own pipe (one server process, no sibling probe).
    assert report["wire"][0]["method"] == "server/discover", run.explain()
    assert report["kind"] == "task", run.explain()
    assert report["outcome"]["status"] == "completed", run.explain()
    assert report["outcome"]["result"]["content"] == [{"type": "text", "text": "over stdio"}]


@pytest.mark.parametrize("dialect", DIALECTS_BY_MAJOR)
async def test_ext_tasks_client_cancels_a_running_task(ts_peers: TsPeers, dialect: str) -> None:
    async with serve_http(build_example_server()) as url:
        run = await _ext_tasks(ts_peers, url, dialect, "slow_echo", LONG, "--cancel", "on-status")
    report = run.report
    assert report["crashed"] is None, run.explain()
    assert report["kind"] == "task", run.explain()
    assert report["cancel"] == {
        "requested": "on-status",
        "acknowledged": True,
        "error": None,
        "server_status": "cancelled",
    }, run.explain()
    assert report["outcome"] == {"status": "cancelled"}
    sent = [entry["method"] for entry in report["wire"] if entry["dir"] == "out" and "method" in entry]
    assert "tasks/cancel" in sent


@pytest.mark.mcp2
async def test_ext_tasks_client_sees_a_tool_error_as_a_completed_task_in_2026_07_28(
    ts_peers: TsPeers,
) -> None:
    """SEP-2663: a tool result with isError is a *completed* task carrying that result (the
    server's inline grace is off, or this quick tool would be answered plainly)."""
    async with serve_http(build_example_server(inline_grace_s=0)) as url:
        run = await _ext_tasks(ts_peers, url, "2026-07-28", "fail", {"message": "boom"})
    report = run.report
    assert report["crashed"] is None, run.explain()
    assert report["kind"] == "task", run.explain()
    outcome = report["outcome"]
    assert outcome["status"] == "completed", run.explain()
    assert outcome["result"]["isError"] is True
    # mcp 2.x MCPServer reports an unexpected exception as "Error executing tool fail" (no message).
    assert outcome["result"]["content"][0]["type"] == "text", run.explain()


async def test_ext_tasks_client_sees_a_tool_error_as_a_failed_task_in_2025_11_25(ts_peers: TsPeers) -> None:
    """2025-11-25: an isError tool result makes the task *failed*; ext-tasks 0.2.2 then reports the
    task's status message and does not read ``tasks/result`` (so the isError payload is not seen)."""
    async with serve_http(build_example_server()) as url:
        run = await _ext_tasks(ts_peers, url, "2025-11-25", "fail", {"message": "boom"})
    report = run.report
    assert report["crashed"] is None, run.explain()
    assert report["kind"] == "task", run.explain()
    assert report["statuses"][-1]["status"] == "failed", run.explain()
    assert report["outcome"]["status"] == "failed", run.explain()
    assert report["outcome"]["error"]["name"] == "TaskFailedError"


@pytest.mark.parametrize("dialect", DIALECTS_BY_MAJOR)
async def test_ext_tasks_client_runs_a_task_required_tool(ts_peers: TsPeers, dialect: str) -> None:
    # preference "allow": on 2025-11-25 ext-tasks asks for a task because the tool requires one;
    # on 2026-07-28 it asks nothing and our server decides to run the required tool as a task.
    async with serve_http(build_example_server()) as url:
        run = await _ext_tasks(
            ts_peers, url, dialect, "must_task", {"text": "required"}, "--preference", "allow"
        )
    report = run.report
    assert report["crashed"] is None, run.explain()
    assert report["kind"] == "task", run.explain()
    assert report["outcome"]["status"] == "completed", run.explain()
    assert report["outcome"]["result"]["content"] == [{"type": "text", "text": "required"}]
    if dialect == "2025-11-25":
        assert report["tools"]["must_task"] == "required"  # execution.taskSupport is on the wire
    else:
        assert report["tools"]["must_task"] is None  # 2026-07-28 has no per-tool declaration


# --- TypeScript SDK 1.x client against our server (both majors; 2025-11-25) ------------------------


def _handshake_version() -> str:
    """The version a handshake with the installed SDK settles on when the peer offers 2025-11-25.

    mcp 1.23.0 knows versions up to 2025-06-18 only, and still speaks the 2025-11-25 task methods.
    """
    if sdk_info().major == 1:
        from mcp.types import LATEST_PROTOCOL_VERSION

        return min(LATEST_PROTOCOL_VERSION, "2025-11-25")
    return "2025-11-25"


async def _sdk1(ts_peers: TsPeers, url: str, tool: str, args: object, *extra: str) -> PeerRun:
    return await ts_peers.run_async(
        "sdk1_client.mjs", "--tool", tool, "--args", json.dumps(args), "--url", url, *extra
    )


async def test_sdk1_client_runs_slow_echo_as_a_task(ts_peers: TsPeers) -> None:
    async with serve_http(build_example_server()) as url:
        run = await _sdk1(ts_peers, url, "slow_echo", SLOW)
    report = run.report
    assert report["crashed"] is None, run.explain()
    assert report["protocol_version"] == _handshake_version()
    assert report["server_capabilities"]["tasks"]["requests"] == {"tools": {"call": {}}}
    assert report["tools"] == dict(EXAMPLE_TASK_SUPPORT)
    assert report["created"]["status"] == "working", run.explain()
    assert report["error"] is None, run.explain()
    assert report["result"]["content"] == [{"type": "text", "text": "hello"}]
    assert report["result"]["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": report["task_id"]}
    _assert_steps_in_order(report["statuses"], 3, run)
    assert report["final_task"]["status"] == "completed"
    # notifications/tasks/status are optional, but when they come they must be in order too.
    if _step_messages(report["notified"]):
        _assert_steps_in_order(report["notified"], 3, run)


async def test_sdk1_client_against_the_cli_example_server_over_stdio(ts_peers: TsPeers) -> None:
    """2025-11-25 over stdio, against ``mcp-tasks-compat example-server`` (the command-line server)."""
    run = await ts_peers.run_async(
        "sdk1_client.mjs",
        "--tool",
        "must_task",
        "--args",
        json.dumps({"text": "over stdio"}),
        "--",
        *CLI_STDIO_SERVER,
    )
    report = run.report
    assert report["crashed"] is None, run.explain()
    assert report["server_info"]["name"] == "mcp-tasks-compat-example"
    assert report["tools"] == dict(EXAMPLE_TASK_SUPPORT)
    assert report["result"]["content"] == [{"type": "text", "text": "over stdio"}], run.explain()
    assert report["final_task"]["status"] == "completed"


async def test_sdk1_client_cancels_a_running_task(ts_peers: TsPeers) -> None:
    async with serve_http(build_example_server()) as url:
        run = await _sdk1(ts_peers, url, "slow_echo", LONG, "--cancel", "on-status")
    report = run.report
    assert report["crashed"] is None, run.explain()
    assert report["cancel"]["error"] is None, run.explain()
    # 2025-11-25: the server moves the task to cancelled before it answers tasks/cancel.
    assert report["cancel"]["response"]["status"] == "cancelled", run.explain()
    assert report["final_task"]["status"] == "cancelled"
    assert report["result"] is None
    assert "cancelled" in report["error"]["message"]


async def test_sdk1_client_sees_a_tool_error_as_a_failed_task(ts_peers: TsPeers) -> None:
    async with serve_http(build_example_server()) as url:
        run = await _sdk1(ts_peers, url, "fail", {"message": "boom"})
    report = run.report
    assert report["crashed"] is None, run.explain()
    assert report["final_task"]["status"] == "failed", run.explain()
    # The TS SDK 1.x stream reports "Task <id> failed" and never reads tasks/result.
    assert report["error"]["message"].endswith(f"Task {report['task_id']} failed"), run.explain()


async def test_sdk1_client_plain_call_runs_without_a_task(ts_peers: TsPeers) -> None:
    async with serve_http(build_example_server()) as url:
        run = await _sdk1(
            ts_peers, url, "slow_echo", {"text": "plain", "seconds": 0.05, "steps": 1}, "--mode", "plain"
        )
    report = run.report
    assert report["crashed"] is None, run.explain()
    assert report["task_id"] is None
    assert report["result"]["content"] == [{"type": "text", "text": "plain"}], run.explain()
    sent = [entry["method"] for entry in report["wire"] if entry["dir"] == "out" and "method" in entry]
    assert not [method for method in sent if method.startswith("tasks/")]


# --- our client against the TypeScript SDK 1.x task server (both majors; 2025-11-25) ---------------


@asynccontextmanager
async def _our_session(target: str | list[str]) -> AsyncIterator[Any]:
    """Our client's session on the installed major, to a URL (streamable HTTP) or a stdio command."""
    from mcp import ClientSession

    async with contextlib.AsyncExitStack() as stack:
        if isinstance(target, str):
            from mcp.client import streamable_http

            opener = getattr(streamable_http, "streamable_http_client", None)
            if opener is None:  # mcp < 1.24 only has the older name
                opener = streamable_http.streamablehttp_client
            streams = await stack.enter_async_context(opener(target))
        else:
            from mcp.client.stdio import StdioServerParameters, stdio_client

            parameters = StdioServerParameters(command=target[0], args=target[1:])
            streams = await stack.enter_async_context(stdio_client(parameters))
        read, write = streams[0], streams[1]
        session = await stack.enter_async_context(ClientSession(read, write, **session_kwargs()))
        yield session


class _Statuses:
    """Collects ``on_status`` reports; ``first_step`` fires when the first step message arrives."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        self.first_step = anyio.Event()

    def __call__(self, task: Task) -> None:
        self.seen.append({"status": task.status.value, "message": task.status_message})
        if (task.status_message or "").startswith("step "):
            self.first_step.set()


def _is_error(result: Any) -> bool:
    """``CallToolResult.isError`` on mcp 1.x, ``is_error`` on 2.x."""
    return bool(getattr(result, "is_error", None) or getattr(result, "isError", None))


def _text(result: Any) -> str:
    return "".join(block.text for block in result.content if getattr(block, "type", None) == "text")


@pytest.fixture(params=["stdio", "http"])
def sdk1_server(request: pytest.FixtureRequest, ts_peers: TsPeers) -> Iterator[str | list[str]]:
    """The TS SDK 1.x task server: a stdio command, or the URL of a running HTTP server."""
    if request.param == "stdio":
        yield ts_peers.sdk1_server_command()
    else:
        with ts_peers.sdk1_http_server() as url:
            yield url


async def test_our_client_runs_a_task_on_the_ts_sdk1_server(sdk1_server: str | list[str]) -> None:
    statuses = _Statuses()
    async with _our_session(sdk1_server) as session:
        negotiated = await negotiate(session)
        assert negotiated.dialect == "2025-11-25", negotiated
        assert negotiated.protocol_version == _handshake_version()
        assert negotiated.tool_task_support == {
            "slow_echo": "optional",
            "fail": "optional",
            "must_task": "required",
            "ask": "required",
        }
        with anyio.fail_after(BOUND_S):
            result = await call_tool(session, "slow_echo", SLOW, mode="task", on_status=statuses)
    assert _text(result) == "hello"
    assert not _is_error(result)
    assert statuses.seen[0]["status"] == "working"
    assert statuses.seen[-1]["status"] == "completed"
    seen = _step_messages(statuses.seen)
    assert seen, statuses.seen
    assert seen == [m for m in ("step 1/3", "step 2/3", "step 3/3") if m in seen], statuses.seen


async def test_our_client_gets_the_tool_error_of_a_failed_ts_sdk1_task(ts_peers: TsPeers) -> None:
    """2025-11-25: the TS server marks the task failed and keeps the isError result for tasks/result."""
    with ts_peers.sdk1_http_server() as url:
        async with _our_session(url) as session:
            with anyio.fail_after(BOUND_S):
                result = await call_tool(session, "fail", {"message": "boom"}, mode="task")
    assert _is_error(result)
    assert _text(result) == "boom"


async def test_our_client_runs_a_required_tool_as_a_task_in_auto_mode(ts_peers: TsPeers) -> None:
    with ts_peers.sdk1_http_server() as url:
        async with _our_session(url) as session:
            statuses = _Statuses()
            with anyio.fail_after(BOUND_S):
                result = await call_tool(session, "must_task", {"text": "auto"}, on_status=statuses)
    assert _text(result) == "auto"
    assert statuses.seen, "auto mode on a task-required tool must run a task"
    assert statuses.seen[-1]["status"] == "completed"


async def test_our_client_plain_call_to_an_optional_tool_on_the_ts_sdk1_server(ts_peers: TsPeers) -> None:
    """The TS SDK 1.32 server runs even a plain call to a task-capable tool as an internal task and
    sends notifications/tasks/status about it; our client still returns the plain result."""
    with ts_peers.sdk1_http_server() as url:
        async with _our_session(url) as session:
            statuses = _Statuses()
            with anyio.fail_after(BOUND_S):
                result = await call_tool(
                    session,
                    "slow_echo",
                    {"text": "plain", "seconds": 0.2, "steps": 2},
                    mode="plain",
                    on_status=statuses,
                )
    assert _text(result) == "plain"
    assert not _is_error(result)
    assert statuses.seen == [], "a plain call reports no task statuses"


async def test_ts_sdk1_server_answers_a_plain_call_to_a_required_tool_with_a_tool_error(
    ts_peers: TsPeers,
) -> None:
    """A documented deviation of the TS SDK 1.32 server: its ``McpServer`` turns the -32601 it
    raises for "task required" into an ``isError`` result instead of a JSON-RPC error."""
    with ts_peers.sdk1_http_server() as url:
        async with _our_session(url) as session:
            with anyio.fail_after(BOUND_S):
                result = await call_tool(session, "must_task", {"text": "plain"}, mode="plain")
    assert _is_error(result)
    assert "-32601" in _text(result)
    assert "requires task augmentation" in _text(result)


async def test_our_client_gets_a_clean_failure_when_a_ts_sdk1_task_asks_for_input(ts_peers: TsPeers) -> None:
    """``ask`` elicits inside the task (input_required). Our client declares no elicitation support,
    so the TS server refuses to ask and fails the task; the call ends with that error, no hang."""
    statuses = _Statuses()
    with ts_peers.sdk1_http_server() as url:
        async with _our_session(url) as session:
            with anyio.fail_after(BOUND_S):
                result = await call_tool(session, "ask", {"question": "ok?"}, on_status=statuses)
    assert [s["status"] for s in statuses.seen][-2:] == ["input_required", "failed"], statuses.seen
    assert _is_error(result)
    assert _text(result) == "Client does not support form elicitation."


async def test_our_client_cancels_a_ts_sdk1_task_explicitly(ts_peers: TsPeers) -> None:
    statuses = _Statuses()
    with ts_peers.sdk1_http_server() as url:
        async with _our_session(url) as session:
            ended: list[BaseException] = []
            with anyio.fail_after(BOUND_S):
                run = await start_tool(session, "slow_echo", LONG, on_status=statuses)
                assert run.dialect == "2025-11-25"
                assert run.task_id
                async with anyio.create_task_group() as group:

                    async def wait_for_result() -> None:
                        try:
                            await run.result()
                        except TaskCancelledError as error:
                            ended.append(error)

                    group.start_soon(wait_for_result)  # it polls, so statuses arrive
                    await statuses.first_step.wait()
                    final = await run.cancel()
    assert final is not None
    assert final.status.value == "cancelled"
    assert len(ended) == 1, "the waiting result() must end with TaskCancelledError"


async def test_our_client_cancels_the_ts_sdk1_task_when_the_caller_is_cancelled(ts_peers: TsPeers) -> None:
    statuses = _Statuses()
    task_ids: list[str] = []

    def on_status(task: Task) -> None:
        task_ids.append(task.task_id)
        statuses(task)

    with ts_peers.sdk1_http_server() as url:
        async with _our_session(url) as session:
            with anyio.fail_after(BOUND_S):
                async with anyio.create_task_group() as group:

                    async def call() -> None:
                        await call_tool(session, "slow_echo", LONG, mode="task", on_status=on_status)

                    group.start_soon(call)
                    await statuses.first_step.wait()
                    group.cancel_scope.cancel()
                # The shielded tasks/cancel went out before the cancellation was re-raised.
                run = await resume(session, task_ids[0])
                final = await run.status()
    assert final is not None
    assert final.status.value == "cancelled", statuses.seen
