"""``TaskServer`` on the installed major: tools of each kind, progress in both kinds of call, ``run()``.

The same test code runs on mcp 1.x (``FastMCP``) and 2.x (``MCPServer``), over the testing kit's
real sessions (in-memory JSON-RPC streams, a stdio subprocess, streamable HTTP on 127.0.0.1).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from tests.doc_blocks import run_doc_block

from mcp_tasks_compat import testing
from mcp_tasks_compat._client_api import session_kwargs
from mcp_tasks_compat._testkit import processes as kit_processes
from mcp_tasks_compat._testkit import sessions as kit_sessions
from mcp_tasks_compat.client import call_tool, start_tool
from mcp_tasks_compat.core._model import Task
from mcp_tasks_compat.errors import UnsupportedOptInError
from mcp_tasks_compat.server import (
    Context,
    ServerTasks,
    TaskServer,
    current_call,
    log,
    report_progress,
    report_status,
)

pytestmark = pytest.mark.anyio

APP_SCRIPT = Path(__file__).with_name("task_server_app.py")


class Frame(BaseModel):
    index: int
    label: str


def build_app(**options: Any) -> TaskServer:
    options.setdefault("inline_grace_s", 0)  # a quick call is still a task on 2026-07-28
    app = TaskServer("builder-test", **options)

    @app.tool(task="optional")
    async def render(frames: int) -> str:
        """Render frames."""
        for frame in range(1, frames + 1):
            await report_status(f"frame {frame}/{frames}")
        return f"rendered {frames} as {'task' if current_call().task is not None else 'plain'}"

    @app.tool(task="required", name="encode", description="encode a clip")
    async def encode_clip(seconds: float) -> str:
        task = current_call().task
        assert task is not None
        await report_progress(seconds, seconds)
        return f"encoded {seconds:g}s in {task.task_id}"

    @app.tool
    def frame(index: int, label: str = "f") -> Frame:
        return Frame(index=index, label=f"{label}{index}")

    @app.tool()
    async def measured(steps: int) -> str:
        for step in range(1, steps + 1):
            await report_progress(step * 10, steps * 10, f"step {step}")
        await report_status("finishing")
        await log("info", "measured done")
        return "measured"

    return app


def tools_by_name(listing: Any) -> dict[str, dict[str, Any]]:
    dumped = listing.model_dump(by_alias=True, mode="json", exclude_none=True)
    return {tool["name"]: tool for tool in dumped["tools"]}


@pytest.fixture(params=testing.dialects())
def dialect(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_sdk_server_is_the_majors_documented_server() -> None:
    app = build_app()
    assert type(app.sdk_server).__name__ in {"FastMCP", "MCPServer"}
    assert app.tasks.tools == {
        "render": "optional",
        "encode": "required",
        "frame": "forbidden",
        "measured": "forbidden",
    }
    assert "builder-test" in repr(app)


async def test_tools_keep_the_sdks_schema_and_structured_output(dialect: str) -> None:
    async with kit_sessions.connect_in_memory(build_app(), dialect=dialect) as session:
        tools = tools_by_name(await session.list_tools())
        assert tools["frame"]["inputSchema"]["properties"]["index"]["type"] == "integer"
        assert tools["frame"]["inputSchema"]["required"] == ["index"]
        assert tools["encode"]["description"] == "encode a clip"
        assert "outputSchema" in tools["frame"]
        result = await call_tool(session, "frame", {"index": 3})
        dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        assert dumped["structuredContent"] == {"index": 3, "label": "f3"}
        bad = await call_tool(session, "frame", {"index": "three"})
        assert bad.model_dump(by_alias=True)["isError"] is True


async def test_task_support_per_tool(dialect: str) -> None:
    statuses: list[Task] = []
    async with kit_sessions.connect_in_memory(build_app(), dialect=dialect) as session:
        if dialect == "2025-11-25":
            tools = tools_by_name(await session.list_tools())
            assert tools["render"]["execution"]["taskSupport"] == "optional"
            assert tools["encode"]["execution"]["taskSupport"] == "required"
            assert tools["frame"].get("execution", {}).get("taskSupport", "forbidden") == "forbidden"
        result = await call_tool(session, "render", {"frames": 2}, mode="task", on_status=statuses.append)
        assert result.content[0].text == "rendered 2 as task"
        assert statuses[-1].status_message == "frame 2/2"
        encoded = await call_tool(session, "encode", {"seconds": 1.5}, on_status=statuses.append)
        assert encoded.content[0].text.startswith("encoded 1.5s in ")
        assert statuses[-1].status_message == "1.5/1.5"  # report_progress in a task: the status message


async def test_plain_call_progress_reaches_on_progress(dialect: str) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with kit_sessions.connect_in_memory(build_app(), dialect=dialect) as session:
        result = await call_tool(session, "measured", {"steps": 2}, on_progress=on_progress)
        assert result.content[0].text == "measured"
    assert seen == [(10.0, 20.0, "step 1"), (20.0, 20.0, "step 2"), (21.0, None, "finishing")]


async def test_async_on_progress_and_no_token_means_no_progress(dialect: str) -> None:
    seen: list[str | None] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message)

    async with kit_sessions.connect_in_memory(build_app(), dialect=dialect) as session:
        assert (await call_tool(session, "measured", {"steps": 1})).content[0].text == "measured"
        await call_tool(session, "measured", {"steps": 1}, on_progress=on_progress)
    assert seen == ["step 1", "finishing"]


async def test_plain_call_status_is_progress_on_a_handshake_connection() -> None:
    """A task-optional tool in a plain 2025-11-25 call: its statuses arrive as progress."""
    seen: list[tuple[float, str | None]] = []
    async with kit_sessions.connect_in_memory(build_app(), dialect="2025-11-25") as session:
        result = await call_tool(
            session, "render", {"frames": 2}, mode="plain", on_progress=lambda p, t, m: seen.append((p, m))
        )
    assert result.content[0].text == "rendered 2 as plain"
    assert seen == [(1.0, "frame 1/2"), (2.0, "frame 2/2")]


async def test_log_reaches_the_client_in_a_plain_call() -> None:
    logged: list[Any] = []

    async def logging_callback(params: Any) -> None:
        logged.append(params.data)

    options = {**session_kwargs(dialect="2025-11-25"), "logging_callback": logging_callback}
    async with kit_sessions.connect_in_memory(
        build_app(), dialect="2025-11-25", session_options=options
    ) as session:
        await call_tool(session, "measured", {"steps": 1})
    assert logged == ["measured done"]


async def test_server_tasks_keywords_and_sdk_keywords_are_split() -> None:
    app = TaskServer(
        "split", store="memory:", ttl_floor_ms=5_000, instructions="be brief", default_support="optional"
    )
    assert isinstance(app.tasks, ServerTasks)
    assert app.tasks.default_support == "optional"
    assert app.tasks.engine.ttl_floor_ms == 5_000
    assert app.sdk_server.instructions == "be brief"
    with pytest.raises(TypeError):
        TaskServer("unknown", no_such_option=1)


async def test_bad_task_support_is_refused() -> None:
    app = TaskServer("bad")
    with pytest.raises(ValueError, match="task must be one of"):
        app.tool(task="sometimes")  # type: ignore[arg-type]


async def test_a_dialect_the_major_cannot_serve_is_refused() -> None:
    if "2026-07-28" in testing.dialects():
        pytest.skip("this major serves both dialects")
    with pytest.raises(UnsupportedOptInError):
        TaskServer("refused", dialects=["2026-07-28"])


async def test_run_serves_stdio() -> None:
    seen: list[str | None] = []
    async with kit_sessions.connect_stdio([sys.executable, str(APP_SCRIPT), "stdio"]) as session:
        result = await call_tool(
            session, "render", {"frames": 2}, mode="plain", on_progress=lambda p, t, m: seen.append(m)
        )
        assert result.content[0].text == "rendered 2"
        run = await start_tool(session, "render", {"frames": 1})
        assert (await run.result()).content[0].text == "rendered 1"
    if "2026-07-28" not in testing.dialects():
        assert seen == ["frame 1/2", "frame 2/2", "rendered"]


@contextmanager
def uvicorn_process(command: list[str]) -> Iterator[str]:
    """The server subprocess; its URL once uvicorn says it is running (killed after a bound)."""
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=kit_processes.child_environment(),
    )
    assert process.stderr is not None
    stderr = process.stderr
    bound = threading.Timer(60.0, process.kill)
    bound.start()
    try:
        printed: list[str] = []
        for line in stderr:
            printed.append(line)
            if "Uvicorn running on " in line:
                break
        else:
            raise AssertionError("the server exited before listening:\n" + "".join(printed))
        bound.cancel()
        threading.Thread(target=stderr.read, daemon=True).start()  # keep the pipe drained
        yield line.split("Uvicorn running on ", 1)[1].split(" ", 1)[0] + "/mcp"
    finally:
        bound.cancel()
        process.terminate()
        process.wait(timeout=10)


async def test_run_serves_streamable_http() -> None:
    with uvicorn_process([sys.executable, str(APP_SCRIPT), "http"]) as url:
        assert url.startswith("http://127.0.0.1:")
        seen: list[str | None] = []
        async with kit_sessions.connect_http(url) as session:
            result = await call_tool(session, "render", {"frames": 3}, on_status=lambda task: None)
            assert result.content[0].text == "rendered 3"
            plain = await call_tool(
                session, "render", {"frames": 1}, mode="plain", on_progress=lambda p, t, m: seen.append(m)
            )
            assert plain.content[0].text == "rendered 1"


async def test_the_documented_task_server(dialect: str) -> None:
    """docs/server.md's ``TaskServer`` example, run as printed."""
    app = run_doc_block("docs/server.md", "task-server")["app"]
    assert app.tasks.tools == {"render": "optional", "thumbnail": "forbidden"}
    # A 2-frame render ends within the inline grace, which would answer it plainly on 2026-07-28;
    # this test is about the task path, so the grace is turned off after the block ran.
    app.tasks.inline_grace_s = 0
    seen: list[str | None] = []
    statuses: list[str | None] = []
    async with kit_sessions.connect_in_memory(app, dialect=dialect) as session:
        as_task = await call_tool(
            session,
            "render",
            {"frames": 2},
            mode="task",
            on_status=lambda t: statuses.append(t.status_message),
        )
        assert as_task.content[0].text == "rendered 2 frames as a task"
        assert statuses[-1] == "frame 2/2"
        thumbnail = await call_tool(
            session, "thumbnail", {"width": 160}, on_progress=lambda p, t, m: seen.append(m)
        )
        dumped = thumbnail.model_dump(by_alias=True, mode="json", exclude_none=True)
        assert dumped["structuredContent"] == {"width": 160, "height": 90}
        if dialect == "2025-11-25":
            plain = await call_tool(
                session, "render", {"frames": 2}, mode="plain", on_progress=lambda p, t, m: seen.append(m)
            )
            assert plain.content[0].text == "rendered 2 frames as a plain call"
            assert seen == ["frame 1/2", "frame 2/2"]


def test_probe_calls_a_forbidden_tool_forbidden_where_the_server_speaks_2025() -> None:
    """A 2025-11-25 tool list names every tool's task support; one without it is forbidden (on a
    2026-07-28-only connection the server decides per call)."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcp_tasks_compat",
            "probe",
            "--json",
            "--",
            sys.executable,
            str(APP_SCRIPT),
            "stdio",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    support = {tool["name"]: tool["task_support"] for tool in found["tools"]}
    assert "2025-11-25" in found["dialects"]
    assert support == {"render": "optional", "version": "forbidden"}


async def test_reruns_are_declared_with_the_tool_and_only_for_task_tools() -> None:
    app = TaskServer("reruns")

    @app.tool(task="optional", reruns=2)
    async def build(target: str) -> str:
        return target

    assert app.tasks.reruns == {"build": 2}
    with pytest.raises(ValueError, match="a tool with task='forbidden' never runs as a task"):
        app.tool(reruns=1)
    with pytest.raises(ValueError, match="must be an int from 0 to 100"):
        app.tool(task="optional", reruns=-1)(build)


def test_a_rerun_tool_may_take_the_sdks_context() -> None:
    """A re-run has no request, but it gets a ``Context`` with the server's lifespan value
    (tests/server/test_workers_app.py runs one): ``reruns=`` on a ``Context`` tool is accepted."""
    app = TaskServer("reruns-with-context")

    async def build(target: str, ctx: Context) -> str:
        return f"{target} {ctx.request_context.lifespan_context}"

    app.tool(task="optional", reruns=2)(build)
    assert app.tasks.reruns == {"build": 2}
