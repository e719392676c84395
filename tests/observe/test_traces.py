"""Traces of a task's life with the SDK's in-memory exporter, over real sessions on the installed
major, in each dialect it speaks: the client's call, the server's request and the run, one trace."""

from __future__ import annotations

import time

import anyio
import pytest
from opentelemetry import trace
from opentelemetry.trace import StatusCode

from mcp_tasks_compat._testkit.sessions import connect_in_memory
from mcp_tasks_compat.client import call_tool, start_tool
from mcp_tasks_compat.errors import TaskFailedError
from mcp_tasks_compat.testing import build_task_server, dialects

from .conftest import Telemetry
from .tools import TOOLS

pytestmark = pytest.mark.anyio
BOUND = 30.0


@pytest.mark.parametrize("dialect", dialects())
async def test_a_task_call_is_one_trace_from_client_to_run(telemetry: Telemetry, dialect: str) -> None:
    server = build_task_server(TOOLS)
    async with connect_in_memory(server, dialect=dialect) as session:
        with anyio.fail_after(BOUND):
            await call_tool(session, "work", {"text": "hi"})
    (client,) = telemetry.named("execute_tool work")
    (run,) = await telemetry.ended("mcp_tasks.run work")
    attributes = dict(client.attributes or {})
    assert attributes["mcp_tasks.dialect"] == dialect
    task_id = attributes["mcp_tasks.task.id"]
    assert dict(run.attributes or {})["mcp_tasks.task.id"] == task_id
    assert run.context.trace_id == client.context.trace_id  # one trace, across the wire
    statuses = [dict(e.attributes or {}).get("mcp_tasks.task.status") for e in run.events]
    assert statuses[-1] == "completed"
    assert dict(run.attributes or {})["mcp_tasks.task.status"] == "completed"
    # The run hangs under the server's tools/call span (the SDK's on 2.x, ours on 1.x).
    server_calls = [s for s in telemetry.named("tools/call work") if s.kind is trace.SpanKind.SERVER]
    assert run.parent is not None
    assert run.parent.span_id in {s.context.span_id for s in server_calls}


@pytest.mark.parametrize("dialect", dialects())
async def test_a_failed_run_sets_the_error_status_with_the_reason(telemetry: Telemetry, dialect: str) -> None:
    server = build_task_server(TOOLS)
    raised = False
    async with connect_in_memory(server, dialect=dialect) as session:
        with anyio.fail_after(BOUND):
            try:  # mcp 1.x FastMCP answers a tool's exception as an isError result: a failed task
                await call_tool(session, "boom", {"text": "x"})
            except TaskFailedError:
                raised = True
    (run,) = await telemetry.ended("mcp_tasks.run boom")
    assert run.status.status_code is StatusCode.ERROR
    assert "broken: x" in (run.status.description or "")
    assert dict(run.attributes or {})["mcp_tasks.task.status"] == "failed"
    (client,) = telemetry.named("execute_tool boom")
    assert (client.status.status_code is StatusCode.ERROR) is raised


@pytest.mark.parametrize("dialect", dialects())
async def test_a_cancel_joins_the_trace_of_the_create(telemetry: Telemetry, dialect: str) -> None:
    server = build_task_server(TOOLS)
    async with connect_in_memory(server, dialect=dialect) as session:
        with anyio.fail_after(BOUND):
            run_handle = await start_tool(session, "hang", {"text": "x"})
            await run_handle.cancel()
    (created,) = telemetry.named("execute_tool hang")
    (cancel,) = await telemetry.ended("tasks/cancel hang")
    (run,) = await telemetry.ended("mcp_tasks.run hang")
    assert cancel.context.trace_id == created.context.trace_id == run.context.trace_id
    assert [dict(e.attributes or {})["mcp_tasks.task.status"] for e in cancel.events] == ["cancelled"]
    assert dict(run.attributes or {})["mcp_tasks.task.status"] == "cancelled"
    assert run.status.status_code is not StatusCode.ERROR  # a cancel is not a failure


async def test_without_a_provider_nothing_is_made(telemetry: Telemetry) -> None:
    """The hooks' off path: no provider, no span object (the shared no-op)."""
    from mcp_tasks_compat._observe import otel, traces

    saved = otel._tracing  # pyright: ignore[reportPrivateUsage]
    otel._tracing = False  # pyright: ignore[reportPrivateUsage]
    try:
        # A "no" is kept for a moment (the API reads the environment on each ask while no
        # provider is set): not asked again before the next check is due...
        otel._next_tracing_check = time.monotonic() + 60  # pyright: ignore[reportPrivateUsage]
        assert not otel.tracing()
        # ...then, with a provider set, the check says yes again: the flag is only a cache of it.
        otel._next_tracing_check = 0.0  # pyright: ignore[reportPrivateUsage]
        assert otel.tracing()
    finally:
        otel._tracing = saved  # pyright: ignore[reportPrivateUsage]
    assert traces.with_trace_context(None) is None or otel.tracing()


@pytest.mark.parametrize("dialect", dialects())
async def test_a_started_task_is_one_span_from_its_creation_to_its_result(
    telemetry: Telemetry, dialect: str
) -> None:
    server = build_task_server(TOOLS)
    async with connect_in_memory(server, dialect=dialect) as session:
        with anyio.fail_after(BOUND):
            handle = await start_tool(session, "work", {"text": "x"})
            assert telemetry.named("execute_tool work") == []  # open: the follow is still to come
            await handle.result()
    (client,) = telemetry.named("execute_tool work")
    (run,) = await telemetry.ended("mcp_tasks.run work")
    assert client.context.trace_id == run.context.trace_id
    assert dict(client.attributes or {})["mcp_tasks.task.id"] == handle.task_id
    assert client.end_time is not None
    assert run.end_time is not None
    assert client.end_time >= run.end_time  # it lasted until the client had the result
