"""A result is checked against the tool's declared output schema, as ``ClientSession.call_tool``
checks a plain one, whichever way it arrives: a plain answer, a task's result (both dialects),
or a plain answer to a task-augmented call."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_tasks_compat._testkit.sessions import connect_in_memory
from mcp_tasks_compat.client import call_tool, resume, start_tool
from mcp_tasks_compat.dialects import Dialect
from mcp_tasks_compat.testing import dialects

from .harness import structured_of, structured_server

pytestmark = pytest.mark.anyio

COUNT = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
STRUCTURED = {"off_schema": {"n": "many"}, "on_schema": {"n": 3}, "no_schema": {"n": "many"}}
SCHEMAS = {"off_schema": COUNT, "on_schema": COUNT}


@pytest.fixture(params=dialects())
def dialect(request: pytest.FixtureRequest) -> Dialect:
    return request.param  # type: ignore[no-any-return]


async def test_a_task_result_off_its_output_schema_is_refused_as_the_sdk_refuses_a_plain_one(
    dialect: Dialect,
) -> None:
    async with connect_in_memory(structured_server(STRUCTURED, SCHEMAS), dialect=dialect) as session:
        with pytest.raises(RuntimeError) as plain:
            await call_tool(session, "off_schema", {}, mode="plain")
        assert str(plain.value).startswith("Invalid structured content returned by tool off_schema: ")
        run = await start_tool(session, "off_schema", {})
        assert run.task_id is not None  # it did run as a task
        with pytest.raises(RuntimeError) as from_task:
            await run.result()
        assert str(from_task.value) == str(plain.value)
        with pytest.raises(RuntimeError) as called:
            await call_tool(session, "off_schema", {}, mode="task")
        assert str(called.value) == str(plain.value)


async def test_a_task_result_on_its_output_schema_passes(dialect: Dialect) -> None:
    async with connect_in_memory(structured_server(STRUCTURED, SCHEMAS), dialect=dialect) as session:
        run = await start_tool(session, "on_schema", {})
        assert run.task_id is not None
        assert structured_of(await run.result()) == {"n": 3}
        assert structured_of(await call_tool(session, "on_schema", {}, mode="task")) == {"n": 3}


async def test_a_tool_without_an_output_schema_is_never_checked(dialect: Dialect) -> None:
    async with connect_in_memory(structured_server(STRUCTURED, SCHEMAS), dialect=dialect) as session:
        assert structured_of(await call_tool(session, "no_schema", {}, mode="task")) == {"n": "many"}
        assert structured_of(await call_tool(session, "no_schema", {}, mode="plain")) == {"n": "many"}


async def test_a_resumed_task_whose_tool_is_unknown_is_not_checked(dialect: Dialect) -> None:
    async with connect_in_memory(structured_server(STRUCTURED, SCHEMAS), dialect=dialect) as session:
        started = await start_tool(session, "off_schema", {})
        assert started.task_id is not None
        resumed = await resume(session, started.task_id)
        assert structured_of(await resumed.result()) == {"n": "many"}


async def test_a_plain_result_off_its_output_schema_is_refused_as_the_sdk_refuses_it() -> None:
    """Tools that never run as tasks: the SDK's own ``call_tool`` and ours say the same (both modes)."""
    server = structured_server(STRUCTURED, SCHEMAS, support="forbidden")
    async with connect_in_memory(server) as session:
        with pytest.raises(RuntimeError) as sdk:
            await session.call_tool("off_schema", {})
        for mode in ("plain", "auto"):
            with pytest.raises(RuntimeError) as ours:
                await call_tool(session, "off_schema", {}, mode=mode)
            assert str(ours.value) == str(sdk.value)
            result: Any = await call_tool(session, "on_schema", {}, mode=mode)
            assert structured_of(result) == {"n": 3}
