"""The plain hand-off (``plain_handoff_s``, docs/any-host.md) on the installed major.

A bare SDK ``ClientSession`` (no task support: the testing kit's ``bare=True``) is the plain
client, in memory and over streamable HTTP; the same test code runs on mcp 1.x and 2.x.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from mcp_tasks_compat._testkit import sessions as kit_sessions
from mcp_tasks_compat.server import ServerTasks, TaskServer, ToolError, elicit, report_progress

pytestmark = pytest.mark.anyio

DEADLINE_S = 0.5
FORM = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def build_app(marks: list[str], **options: Any) -> TaskServer:
    options.setdefault("plain_handoff_s", DEADLINE_S)
    app = TaskServer("handoff-test", **options)

    @app.tool(task="optional")
    async def quick(word: str) -> str:
        return f"quick {word}"

    @app.tool(task="optional")
    async def slow(seconds: float) -> str:
        marks.append("started")
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            marks.append("stopped")
            raise
        marks.append("finished")
        return f"slept {seconds}"

    @app.tool(task="optional")
    async def fails_late() -> str:
        await anyio.sleep(DEADLINE_S * 2)
        raise ToolError("it broke")

    @app.tool(task="required")
    async def must_task() -> str:
        return "done as a task"

    @app.tool(task="optional")
    async def stepping() -> str:
        for step in range(1, 4):
            await report_progress(step, 3, f"step {step}")
            await anyio.sleep(DEADLINE_S / 2)
        return "stepped"

    @app.tool(task="optional")
    async def asks() -> str:
        await anyio.sleep(DEADLINE_S * 2)
        answer = await elicit("Apply the change?", FORM)
        return "applied" if answer.action == "accept" and answer.content["ok"] else "left alone"

    @app.tool()
    async def plain_only() -> str:
        return "plain"

    return app


def is_error(result: Any) -> bool:
    return bool(getattr(result, "isError", None) or getattr(result, "is_error", None))


def structured(result: Any) -> Any:
    return getattr(result, "structuredContent", None) or getattr(result, "structured_content", None)


def schema_of(tool: Any) -> Any:
    return getattr(tool, "inputSchema", None) or getattr(tool, "input_schema", None)


def text_of(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


def dumped(result: Any) -> dict[str, Any]:
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


@asynccontextmanager
async def plain_session(app: TaskServer) -> AsyncIterator[Any]:
    async with kit_sessions.connect_in_memory(app, bare=True) as session:
        yield session


async def model_follows(session: Any, name: str, arguments: dict[str, Any]) -> str:
    """A scripted "model": it reads only the result text and calls what the text names."""
    result = await session.call_tool(name, arguments)
    for _ in range(20):
        text = text_of(result)
        follow = re.search(r"Call `(\w+)` with (\{.*?\})(?: to|,)", text)
        if follow is None:
            return text
        result = await session.call_tool(follow.group(1), json.loads(follow.group(2)))
    raise AssertionError("the model never got a result")


async def test_off_by_default_lists_no_task_tools_and_refuses_required() -> None:
    app = build_app([], plain_handoff_s=None)
    async with plain_session(app) as session:
        names = {tool.name for tool in (await session.list_tools()).tools}
        assert "task_result" not in names
        try:
            result = await session.call_tool("must_task", {})
        except Exception as refused:  # a JSON-RPC error: -32601 (1.x), -32021 (2.x)
            assert re.search(r"must_task|requires task|Missing required", str(refused))  # noqa: PT017
        else:
            pytest.fail(f"answered {text_of(result)!r}")


async def test_quick_tool_answers_as_without_the_option() -> None:
    async with plain_session(build_app([])) as on, plain_session(build_app([], plain_handoff_s=None)) as off:
        assert dumped(await on.call_tool("quick", {"word": "hi"})) == dumped(
            await off.call_tool("quick", {"word": "hi"})
        )
        assert dumped(await on.call_tool("plain_only", {})) == dumped(await off.call_tool("plain_only", {}))


async def test_lists_the_task_tools() -> None:
    async with plain_session(build_app([])) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert {"task_status", "task_result", "task_cancel", "task_answer"} <= set(tools)
        assert "task_id" in schema_of(tools["task_result"])["properties"]


async def test_slow_tool_hands_off_and_the_model_follows_to_the_result() -> None:
    marks: list[str] = []
    async with plain_session(build_app(marks)) as session:
        with anyio.fail_after(10):
            started = anyio.current_time()
            first = await session.call_tool("slow", {"seconds": DEADLINE_S * 3})
            assert anyio.current_time() - started < DEADLINE_S * 2.5
        assert not is_error(first)
        assert "still running as task" in text_of(first)
        shown = structured(first)
        assert shown["status"] == "working"
        assert shown["taskId"] in text_of(first)
        assert "pollIntervalMs" in shown
        with anyio.fail_after(10):
            assert (
                await model_follows(session, "slow", {"seconds": DEADLINE_S * 3}) == f"slept {DEADLINE_S * 3}"
            )
        assert marks.count("started") == 2
        assert "stopped" not in marks


async def test_required_tool_hands_off_at_once() -> None:
    async with plain_session(build_app([])) as session:
        first = await session.call_tool("must_task", {})
        assert not is_error(first)
        assert "still running as task" in text_of(first)
        result = await session.call_tool("task_result", {"task_id": structured(first)["taskId"]})
        assert text_of(result) == "done as a task"


async def test_a_failure_keeps_its_is_error() -> None:
    async with plain_session(build_app([])) as session:
        first = await session.call_tool("fails_late", {})
        task_id = structured(first)["taskId"]
        with anyio.fail_after(10):
            result = await session.call_tool("task_result", {"task_id": task_id})
            while "still running" in text_of(result):
                result = await session.call_tool("task_result", {"task_id": task_id})
        assert is_error(result)
        assert "it broke" in text_of(result)


async def test_task_cancel_stops_the_work() -> None:
    marks: list[str] = []
    async with plain_session(build_app(marks)) as session:
        first = await session.call_tool("slow", {"seconds": 30})
        task_id = structured(first)["taskId"]
        cancelled = await session.call_tool("task_cancel", {"task_id": task_id})
        assert "cancelled" in text_of(cancelled)
        with anyio.fail_after(5):
            while "stopped" not in marks:  # noqa: ASYNC110 - the tool's own mark, a list
                await anyio.sleep(0.02)
        status = await session.call_tool("task_status", {"task_id": task_id})
        assert "cancelled" in text_of(status)


async def test_another_session_gets_not_found() -> None:
    """The session's rule on both majors: a 2025-11-25 session (mcp 1.x), a 2026-07-28 transport
    connection (a bare mcp 2.x client in memory, as over stdio)."""
    app = build_app([])
    async with plain_session(app) as mine, plain_session(app) as other:
        first = await mine.call_tool("slow", {"seconds": 5})
        task_id = structured(first)["taskId"]
        for verb in ("task_status", "task_result", "task_cancel"):
            seen = await other.call_tool(verb, {"task_id": task_id})
            assert is_error(seen)
            assert "Task not found" in text_of(seen)
        mine_now = await mine.call_tool("task_status", {"task_id": task_id})
        assert "still running" in text_of(mine_now)  # the other's cancel changed nothing
        await mine.call_tool("task_cancel", {"task_id": task_id})


async def test_with_id_as_capability_another_session_reads_it() -> None:
    app = build_app([], unauthenticated_2025_scope="task_id")
    async with plain_session(app) as mine, plain_session(app) as other:
        first = await mine.call_tool("slow", {"seconds": DEADLINE_S * 3})
        with anyio.fail_after(10):
            result = await model_follows(other, "task_result", {"task_id": structured(first)["taskId"]})
        assert result == f"slept {DEADLINE_S * 3}"


async def test_unknown_task() -> None:
    async with plain_session(build_app([])) as session:
        result = await session.call_tool("task_result", {"task_id": "nope"})
        assert is_error(result)
        assert "Task not found: nope" in text_of(result)


async def test_a_question_is_answered_through_task_answer() -> None:
    async with plain_session(build_app([])) as session:
        first = await session.call_tool("asks", {})
        task_id = structured(first)["taskId"]
        with anyio.fail_after(10):
            shown = await session.call_tool("task_result", {"task_id": task_id})
            while "asks:" not in text_of(shown):
                shown = await session.call_tool("task_result", {"task_id": task_id})
        assert "Apply the change?" in text_of(shown)
        assert '"ok"' in text_of(shown)
        wrong = await session.call_tool("task_answer", {"task_id": task_id, "answer": {"ok": "yes"}})
        assert is_error(wrong)
        assert "'ok' must be a boolean" in text_of(wrong)
        given = await session.call_tool("task_answer", {"task_id": task_id, "answer": {"ok": True}})
        assert not is_error(given)
        with anyio.fail_after(10):
            result = await session.call_tool("task_result", {"task_id": task_id})
        assert text_of(result) == "applied"


async def test_progress_and_heartbeat_reach_a_client_that_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_tasks_compat._server import handoff

    monkeypatch.setattr(handoff, "HEARTBEAT_S", 0.1)
    seen: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))

    async with plain_session(build_app([])) as session:
        with anyio.fail_after(10):
            await session.call_tool("stepping", {}, progress_callback=on_progress)
            assert any(message == "step 1" for _, message in seen)
            seen.clear()
            await session.call_tool("slow", {"seconds": DEADLINE_S / 2}, progress_callback=on_progress)
        assert seen
        assert all("still running" in (message or "") for _, message in seen)
        values = [value for value, _ in seen]
        assert values == sorted(values)
        assert len(set(values)) == len(values)


async def test_refusals_at_construction() -> None:
    with pytest.raises(ValueError, match="plain_handoff_s"):
        ServerTasks(plain_handoff_s=0)
    with pytest.raises(ValueError, match="plain_handoff_s"):
        ServerTasks(plain_handoff_s=-1)
    with pytest.raises(ValueError, match="task tools"):
        ServerTasks(plain_handoff_s=1, tools={"task_status": "optional"})
    app = TaskServer("clash", plain_handoff_s=1)
    with pytest.raises(ValueError, match="task tool"):

        @app.tool(name="task_result")
        async def clash() -> str:
            return ""

    renamed = TaskServer("renamed", plain_handoff_s=1, task_tools_prefix="longjob_")
    async with plain_session(renamed) as session:
        names = {tool.name for tool in (await session.list_tools()).tools}
        assert {"longjob_status", "longjob_result", "longjob_cancel", "longjob_answer"} <= names


def _modern(session: Any) -> bool:
    version = getattr(session, "protocol_version", None)
    return version is not None and str(version) >= "2026"


@asynccontextmanager
async def bare_http(url: str, headers: dict[str, str] | None = None) -> AsyncIterator[Any]:
    """A bare SDK session over streamable HTTP, sending ``headers`` on every request."""
    from mcp_tasks_compat._adapters import get_adapter

    streams = get_adapter().app.http_streams(url, headers=headers)
    async with kit_sessions._connected(  # pyright: ignore[reportPrivateUsage]
        streams, server=url, dialect=None, session_options=None, bare=True
    ) as session:
        yield session


async def test_example_server_over_http_hands_off() -> None:
    """``example-server --plain-handoff-s``, a real process over streamable HTTP, bare clients.

    Who else reads the task: on a handshake-era connection (mcp 1.x) no other session; a
    2026-07-28 request (mcp 2.x) has no session over HTTP, so any client that has the id does,
    unless its requests carry an ``Mcp-Session-Id``: then only requests with the same one."""
    import sys

    from mcp_tasks_compat._testkit.processes import HttpServerProcess, child_environment

    command = [
        sys.executable,
        "-m",
        "mcp_tasks_compat",
        "example-server",
        "--transport",
        "http",
        "--port",
        "0",
    ]
    with HttpServerProcess([*command, "--plain-handoff-s", "1"], env=child_environment()) as url:
        async with kit_sessions.connect_http(url, bare=True) as session, bare_http(url) as other:
            with anyio.fail_after(20):
                started = anyio.current_time()
                first = await session.call_tool("slow_echo", {"text": "hello", "seconds": 3})
                assert anyio.current_time() - started < 2.5
                assert "still running as task" in text_of(first)
                assert not is_error(first)
                task_id = structured(first)["taskId"]
                seen = await other.call_tool("task_status", {"task_id": task_id})
                if _modern(session):
                    assert not is_error(seen)  # no session over HTTP: the id is the capability
                else:
                    assert "Task not found" in text_of(seen)
                assert await model_follows(session, "task_result", {"task_id": task_id}) == "hello"
        if not _modern(session):
            return
        async with (
            bare_http(url, {"Mcp-Session-Id": "host-a"}) as mine,
            bare_http(url, {"Mcp-Session-Id": "host-b"}) as theirs,
            bare_http(url) as undeclared,
        ):
            with anyio.fail_after(20):
                first = await mine.call_tool("slow_echo", {"text": "mine", "seconds": 3})
                task_id = structured(first)["taskId"]
                for stranger in (theirs, undeclared):
                    seen = await stranger.call_tool("task_status", {"task_id": task_id})
                    assert "Task not found" in text_of(seen)
                assert await model_follows(mine, "task_result", {"task_id": task_id}) == "mine"


async def test_the_docs_example() -> None:
    from tests.doc_blocks import run_doc_block

    app = run_doc_block("docs/any-host.md", "any-host")["app"]
    app.tasks.plain_handoff_s = 0.05  # the example's 45 s, shortened
    async with plain_session(app) as session:
        with anyio.fail_after(10):
            assert await model_follows(session, "build", {"target": "docs"}) == "built docs"
