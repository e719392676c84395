"""``TaskClientSession``, ``with_tasks`` and ``tasks_extension``: tasks for code that calls
``session.call_tool(...)`` itself, the way agent frameworks do, on both majors.

Every session here is a real SDK session over the SDK's in-memory JSON-RPC streams to a
``TaskServer``; nothing of the SDK is mocked.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from tests.doc_blocks import run_doc_block

from mcp_tasks_compat._adapters import get_adapter
from mcp_tasks_compat._client_api import TaskSessionWrapper, session_kwargs, tasks_extension, with_tasks
from mcp_tasks_compat._detect import sdk_info
from mcp_tasks_compat._testkit import sessions as kit_sessions
from mcp_tasks_compat.client import TaskClientSession, negotiate
from mcp_tasks_compat.core._model import Task, TaskStatus
from mcp_tasks_compat.errors import UnsupportedOptInError
from mcp_tasks_compat.server import TaskServer, current_call, report_progress, report_status

pytestmark = pytest.mark.anyio


def build_app(release: anyio.Event | None = None) -> TaskServer:
    app = TaskServer("sessions", inline_grace_s=0)  # a quick call is still a task on 2026-07-28

    @app.tool(task="required")
    async def render(frames: int) -> str:
        for frame in range(1, frames + 1):
            await report_status(f"frame {frame}/{frames}")
        return f"rendered {frames} as {'task' if current_call().task else 'plain'}"

    @app.tool(task="optional")
    async def preview(frames: int) -> str:
        return f"preview {frames} as {'task' if current_call().task else 'plain'}"

    @app.tool()
    async def measure(steps: int) -> str:
        for step in range(1, steps + 1):
            await report_progress(step, steps, f"step {step}")
        return "measured"

    @app.tool()
    async def hold() -> str:
        assert release is not None
        await release.wait()
        return "released"

    return app


@asynccontextmanager
async def task_session(app: TaskServer, **options: Any) -> AsyncIterator[Any]:
    async with (
        get_adapter().app.in_memory_streams(app.sdk_server) as (read, write),
        TaskClientSession(read, write, **options) as session,
    ):
        await negotiate(session)
        yield session


async def test_task_client_session_is_a_client_session_whose_call_tool_runs_tasks() -> None:
    seen: list[Task] = []
    async with task_session(build_app(), on_status=seen.append) as session:
        assert "ClientSession" in [base.__name__ for base in type(session).__mro__[1:]]
        result = await session.call_tool("render", {"frames": 2})
        assert type(result).__name__ == "CallToolResult"
        assert result.content[0].text == "rendered 2 as task"
        assert seen[-1].status is TaskStatus.COMPLETED
        assert "frame 2/2" in [task.status_message for task in seen]
        plain = await session.call_tool("preview", {"frames": 1}, mode="plain")
        assert plain.content[0].text.startswith("preview 1 as ")


async def test_the_sdks_positional_signature_with_progress() -> None:
    """``call_tool(name, arguments, read_timeout_seconds, progress_callback)`` as frameworks call it."""
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with task_session(build_app()) as session:
        result = await session.call_tool("measure", {"steps": 2}, None, progress)
    assert result.content[0].text == "measured"
    assert seen == [(1.0, 2.0, "step 1"), (2.0, 2.0, "step 2")]


async def test_read_timeout_seconds_reaches_the_sdk() -> None:
    release = anyio.Event()
    async with task_session(build_app(release)) as session:
        with pytest.raises(Exception) as raised:  # noqa: PT011 - the SDK's own error type, per major
            await session.call_tool("hold", {}, read_timeout_seconds=0.2)
        release.set()
        assert get_adapter().app.jsonrpc_error_of(raised.value) is not None
        assert (await session.call_tool("measure", {"steps": 1})).content[0].text == "measured"


async def test_the_sessions_own_keywords_are_composed_with_the_librarys() -> None:
    handled: list[str] = []

    async def message_handler(message: Any) -> None:
        handled.append(type(message).__name__)

    async with task_session(build_app(), message_handler=message_handler) as session:
        assert (await session.call_tool("render", {"frames": 1})).content[0].text == "rendered 1 as task"
    if sdk_info().major == 1:
        assert handled  # the status notifications reached the caller's handler after ours


async def test_with_tasks_wraps_a_session_built_elsewhere() -> None:
    seen: list[Task] = []
    async with kit_sessions.connect_in_memory(build_app().sdk_server) as session:
        wrapped = with_tasks(session, on_status=seen.append)
        assert isinstance(wrapped, TaskSessionWrapper)
        assert with_tasks(wrapped) is wrapped
        assert wrapped.wrapped_session is session
        listing = await wrapped.list_tools()  # everything but call_tool is the session's
        assert "render" in {tool.name for tool in listing.tools}
        result = await wrapped.call_tool("render", {"frames": 1})
        assert result.content[0].text == "rendered 1 as task"
        assert seen[-1].status is TaskStatus.COMPLETED
        assert "TaskSessionWrapper" in repr(wrapped)


async def test_with_tasks_on_a_bare_1x_session_runs_tasks() -> None:
    if sdk_info().major != 1:
        pytest.skip("on mcp 2.x a session built without session_kwargs() cannot receive a task answer")
    async with kit_sessions.connect_in_memory(build_app().sdk_server, bare=True) as session:
        result = await with_tasks(session).call_tool("render", {"frames": 1})
        assert result.content[0].text == "rendered 1 as task"


async def test_tasks_extension_is_refused_on_1x() -> None:
    if sdk_info().major != 1:
        pytest.skip("mcp 2.x has mcp.Client")
    with pytest.raises(UnsupportedOptInError, match=r"TaskClientSession\.extension\(\)"):
        tasks_extension()


async def test_the_1_0_form_is_refused_on_1x_naming_the_fix() -> None:
    if sdk_info().major != 1:
        pytest.skip("mcp 2.x has mcp.Client")
    from mcp_tasks_compat.client import TaskClientSession

    with pytest.raises(UnsupportedOptInError, match=r"pip install 'mcp>=2,<3'"):
        TaskClientSession.extension()


async def test_the_extension_gives_mcp_client_tasks() -> None:
    """The 1.0 form, ``TaskClientSession.extension()`` (``tasks_extension()`` before 1.0)."""
    if sdk_info().major != 2:
        pytest.skip("mcp.Client exists on mcp 2.x only")
    import mcp

    from mcp_tasks_compat.client import TaskClientSession, call_tool

    app = build_app()
    seen: list[str | None] = []
    async with mcp.Client(app.sdk_server, extensions=[TaskClientSession.extension()]) as client:
        direct = await client.call_tool("render", {"frames": 1})  # the SDK's own call, the task followed
        assert direct.content[0].text == "rendered 1 as task"
        result = await call_tool(
            client.session, "render", {"frames": 2}, on_status=lambda task: seen.append(task.status_message)
        )
        assert result.content[0].text == "rendered 2 as task"
    assert "frame 2/2" in seen


async def test_the_subclass_keeps_session_kwargs_refusals() -> None:
    if sdk_info().major != 1:
        pytest.skip("mcp 2.x honours extensions=")
    with pytest.raises(UnsupportedOptInError):
        session_kwargs(extensions={"x.y/z": {}})
    async with get_adapter().app.in_memory_streams(build_app().sdk_server) as (read, write):
        with pytest.raises(UnsupportedOptInError):
            TaskClientSession(read, write, extensions={"x.y/z": {}})


async def test_progress_callback_hears_a_tasks_status_messages() -> None:
    """A framework that only passes ``progress_callback`` still hears how a task goes."""
    first: list[tuple[float, str | None]] = []
    second: list[tuple[float, str | None]] = []

    def collect(into: list[tuple[float, str | None]]) -> Any:
        async def progress(progress: float, total: float | None, message: str | None) -> None:
            into.append((progress, message))

        return progress

    async with task_session(build_app()) as session:
        result = await session.call_tool("render", {"frames": 2}, progress_callback=collect(first))
        assert result.content[0].text == "rendered 2 as task"
        wrapped = await with_tasks(session).call_tool("render", {"frames": 1}, None, collect(second))
        assert wrapped.content[0].text == "rendered 1 as task"
    for seen, last in ((first, "frame 2/2"), (second, "frame 1/1")):
        assert [count for count, _ in seen] == [float(n) for n in range(1, len(seen) + 1)]  # counted per call
        assert seen[-1][1] == last


async def test_the_documented_framework_call() -> None:
    """docs/client.md's ``TaskClientSession`` example, run as printed."""
    render_through_a_framework = run_doc_block("docs/client.md", "task-client-session")[
        "render_through_a_framework"
    ]
    async with get_adapter().app.in_memory_streams(build_app().sdk_server) as (read, write):
        text, messages = await render_through_a_framework(read, write)
    assert text == "rendered 2 as task"
    assert messages[-1] == "frame 2/2"
