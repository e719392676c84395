"""One source for server authors (issue 26 §3): a server and its callers written once, run on either major.

``Context`` and ``ToolError`` from ``mcp_tasks_compat.server``, a result read with
``client.read_result``, and ``current_call()``, a call's handle from its first line, before the
inline grace has decided whether it is a task. The same test code runs on mcp 1.x and 2.x, over the
testing kit's in-memory sessions, in every dialect the installed major speaks.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import pytest
from pydantic import BaseModel

from mcp_tasks_compat import testing
from mcp_tasks_compat._detect import sdk_info
from mcp_tasks_compat._testkit import sessions as kit_sessions
from mcp_tasks_compat.client import ResultView, call_tool, read_result, start_tool
from mcp_tasks_compat.core._model import Task
from mcp_tasks_compat.dialects import DIALECT_2025_11_25, DIALECT_2026_07_28
from mcp_tasks_compat.server import Context, TaskServer, ToolError, current_call

pytestmark = pytest.mark.anyio


@pytest.fixture(params=testing.dialects())
def dialect(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class Report(BaseModel):
    frames: int
    ok: bool


def errors_app(**options: Any) -> TaskServer:
    app = TaskServer("one-source", **options)

    @app.tool(task="optional")
    async def anticipated(path: str) -> str:
        raise ToolError(f"{path}: disk full")

    @app.tool(task="optional")
    async def crash() -> str:
        raise RuntimeError("secret internals")

    @app.tool(task="optional")
    async def with_context(frames: int, ctx: Context) -> Report:
        return Report(frames=frames, ok=isinstance(ctx, Context))

    return app


# --- Context and ToolError -----------------------------------------------------------------------


def test_context_and_tool_error_are_the_installed_sdks_own_resolved_on_first_use() -> None:
    code = textwrap.dedent(
        """
        import sys
        import mcp_tasks_compat.server as server
        assert "mcp" not in sys.modules, "importing server must not import mcp"
        from mcp_tasks_compat.server import Context, ToolError
        print(Context.__module__, ToolError.__module__, issubclass(ToolError, Exception))
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    expected = "fastmcp" if sdk_info().major == 1 else "mcpserver"
    context_module, error_module, is_exception = done.stdout.split()
    assert context_module.startswith(f"mcp.server.{expected}")
    assert error_module == f"mcp.server.{expected}.exceptions"
    assert is_exception == "True"


async def test_a_tool_error_reaches_the_model_with_its_text_plain_and_as_a_task(dialect: str) -> None:
    """The same text on every version and both kinds of call (mcp 2.3 withholds a crash's text only)."""
    async with kit_sessions.connect_in_memory(errors_app(inline_grace_s=0), dialect=dialect) as session:
        for mode in ("plain", "task"):
            seen: list[Task] = []
            result = read_result(
                await call_tool(session, "anticipated", {"path": "/srv"}, mode=mode, on_status=seen.append)
            )
            assert result.is_error
            assert result.text == "Error executing tool anticipated: /srv: disk full"
            assert bool(seen) is (mode == "task")  # it really ran as a task


async def test_a_crash_reads_the_same_in_a_task_as_in_a_plain_call(dialect: str) -> None:
    async with kit_sessions.connect_in_memory(errors_app(inline_grace_s=0), dialect=dialect) as session:
        plain = read_result(await call_tool(session, "crash", mode="plain"))
        task = read_result(await call_tool(session, "crash", mode="task"))
    assert plain.is_error
    assert task.is_error
    assert plain.text == task.text
    assert plain.text.startswith("Error executing tool crash")


async def test_context_is_given_to_a_tool_that_asks_for_it_plain_and_as_a_task(dialect: str) -> None:
    async with kit_sessions.connect_in_memory(errors_app(inline_grace_s=0), dialect=dialect) as session:
        listing = (await session.list_tools()).model_dump(by_alias=True, mode="json")
        schema = next(tool["inputSchema"] for tool in listing["tools"] if tool["name"] == "with_context")
        assert set(schema["properties"]) == {"frames"}  # the SDK saw the Context parameter as its own
        for mode in ("plain", "task"):
            result = read_result(await call_tool(session, "with_context", {"frames": 3}, mode=mode))
            assert result.structured == {"frames": 3, "ok": True}
            assert not result.is_error


# --- reading a result ----------------------------------------------------------------------------


async def test_read_result_reads_either_majors_result_and_its_wire_json(dialect: str) -> None:
    async with kit_sessions.connect_in_memory(errors_app(), dialect=dialect) as session:
        sdk_result = await call_tool(session, "with_context", {"frames": 2})
    view = read_result(sdk_result)
    assert view == ResultView(
        is_error=False,
        text='{\n  "frames": 2,\n  "ok": true\n}',
        structured={"frames": 2, "ok": True},
        content=({"type": "text", "text": '{\n  "frames": 2,\n  "ok": true\n}'},),
    )
    wire = {
        "content": [
            {"type": "text", "text": "a"},
            {"type": "image", "data": "", "mimeType": "image/png"},
            {"type": "text", "text": "b"},
        ],
        "isError": True,
    }
    assert read_result(wire) == ResultView(True, "a\nb", None, tuple(wire["content"]))
    with pytest.raises(TypeError, match="CallToolResult or its wire JSON, not int"):
        read_result(3)


# --- current_call(): the call's handle before it is a task ---------------------------------------


def handle_app(grace_s: float) -> tuple[TaskServer, list[str]]:
    app = TaskServer("handles", inline_grace_s=grace_s)
    hooked: list[str] = []

    @app.tool(task="optional")
    async def watch() -> str:
        call = current_call()
        is_task = current_call().task is not None
        first = f"first: task_id={call.task_id} undecided={call.may_become_task} task={is_task}"
        call.on_task(lambda task: hooked.append(task.task_id))
        task = await call.wait_for_task()
        later = f"later: {task.task_id if task is not None else None} {call.task_id} {hooked}"
        return f"{first}; {later}"

    @app.tool(task="optional")
    async def quick() -> str:
        call = current_call()
        call.on_task(lambda task: hooked.append(task.task_id))
        return f"undecided={call.may_become_task} task_id={call.task_id}"

    return app, hooked


async def test_a_2026_call_knows_its_task_id_once_the_grace_makes_it_a_task() -> None:
    if DIALECT_2026_07_28 not in testing.dialects():
        pytest.skip("the inline grace is 2026-07-28's (mcp 2.x); 2025-11-25 is covered below")
    app, _ = handle_app(grace_s=0.05)
    seen: list[Task] = []
    async with kit_sessions.connect_in_memory(app, dialect=DIALECT_2026_07_28) as session:
        result = read_result(await call_tool(session, "watch", on_status=seen.append))
    task_id = seen[-1].task_id
    later = f"later: {task_id} {task_id} ['{task_id}']"
    assert result.text == f"first: task_id=None undecided=True task=False; {later}"


async def test_a_call_answered_within_the_grace_never_calls_its_hook() -> None:
    if DIALECT_2026_07_28 not in testing.dialects():
        pytest.skip("the inline grace is 2026-07-28's (mcp 2.x)")
    app, hooked = handle_app(grace_s=30.0)
    seen: list[Task] = []
    async with kit_sessions.connect_in_memory(app, dialect=DIALECT_2026_07_28) as session:
        result = read_result(await call_tool(session, "quick", on_status=seen.append))
    assert result.text == "undecided=True task_id=None"
    assert seen == []
    assert hooked == []


async def test_a_task_from_the_start_has_its_id_at_the_first_line(dialect: str) -> None:
    """2025-11-25 (both majors), and 2026-07-28 with ``inline_grace_s=0``: a task from the start."""
    app, hooked = handle_app(grace_s=0)
    seen: list[Task] = []
    async with kit_sessions.connect_in_memory(app, dialect=dialect) as session:
        result = read_result(await call_tool(session, "watch", mode="task", on_status=seen.append))
    task_id = seen[-1].task_id
    expected = f"first: task_id={task_id} undecided=False task=True; later: {task_id} {task_id} ['{task_id}']"
    assert result.text == expected
    assert hooked == [task_id]


async def test_a_plain_call_has_a_handle_that_never_becomes_a_task(dialect: str) -> None:
    app, hooked = handle_app(grace_s=30.0)
    async with kit_sessions.connect_in_memory(app, dialect=dialect) as session:
        result = read_result(await call_tool(session, "watch", mode="plain"))
    assert result.text == "first: task_id=None undecided=False task=False; later: None None []"
    assert hooked == []
    outside = current_call()  # outside any tool call
    assert outside.task_id is None
    assert not outside.may_become_task


async def test_a_raising_hook_is_logged_and_the_task_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    app = TaskServer("hooks", inline_grace_s=0.01)

    @app.tool(task="optional")
    async def hooked() -> str:
        call = current_call()
        call.on_task(lambda task: 1 / 0)
        task = await call.wait_for_task()
        return "task" if task is not None else "plain"

    dialect = DIALECT_2026_07_28 if DIALECT_2026_07_28 in testing.dialects() else DIALECT_2025_11_25
    async with kit_sessions.connect_in_memory(app, dialect=dialect) as session:
        result = read_result(await call_tool(session, "hooked", mode="task"))
    assert result.text == "task"
    assert any("an on_task hook raised" in record.getMessage() for record in caplog.records)


# --- start_tool on 2026-07-28: this library's server answers with a task, even for a quick tool ---


async def test_an_explicit_task_request_gets_a_task_within_the_inline_grace() -> None:
    if DIALECT_2026_07_28 not in testing.dialects():
        pytest.skip("the inline grace is 2026-07-28's (mcp 2.x)")
    app = TaskServer("at-once", inline_grace_s=30.0)  # a quick tool is always done within it

    @app.tool(task="optional")
    async def quick() -> str:
        return "done"

    async with kit_sessions.connect_in_memory(app, dialect=DIALECT_2026_07_28) as session:
        asked: list[Task] = []
        result = await call_tool(session, "quick", mode="task", on_status=asked.append)
        assert read_result(result).text == "done"
        # call_tool follows to the result, so it sends no task-at-once hint: answered in the grace
        assert asked == []
        auto: list[Task] = []
        assert read_result(await call_tool(session, "quick", on_status=auto.append)).text == "done"
        assert auto == []  # mode="auto": the grace decides, and a quick tool is answered plainly
        run = await start_tool(session, "quick")  # the hint: a task, even for a quick tool
        assert run.task_id is not None
        assert read_result(await run.result()).text == "done"
