"""The kit's ``session_options``: added to the library's session settings, never silently replacing them.

Before, ``connect_in_memory(session_options={"elicitation_callback": cb})`` replaced
``session_kwargs()``: on mcp 2.x the session lost the Tasks extension and a task-required tool
failed with -32021. Now the options are added (the keywords ``session_kwargs()`` composes go
through it), options spread from ``session_kwargs()`` are taken as they are, and a spread that
replaces part of it is refused, naming what was replaced and the fix.
"""

from __future__ import annotations

from typing import Any

import mcp.types as types
import pytest

from mcp_tasks_compat._client_api import session_kwargs
from mcp_tasks_compat._detect import sdk_info
from mcp_tasks_compat._testkit.options import COMPOSED_SESSION_OPTIONS, merged_session_options
from mcp_tasks_compat._testkit.sessions import connect_in_memory
from mcp_tasks_compat.client import call_tool, negotiate, read_result
from mcp_tasks_compat.core._model import Task
from mcp_tasks_compat.errors import SessionOptionsError, UnsupportedOptInError
from mcp_tasks_compat.server import TaskServer, current_call, elicit
from mcp_tasks_compat.testing import dialects

pytestmark = pytest.mark.anyio


@pytest.fixture(params=dialects())
def dialect(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def asking_app() -> TaskServer:
    app = TaskServer("asks")

    @app.tool(task="required")
    async def greet() -> str:
        answer = await elicit("Your name?", {"type": "object", "properties": {"name": {"type": "string"}}})
        return f"Hello, {answer.content['name']}! (task: {current_call().task is not None})"

    return app


async def answer_ada(context: Any, params: Any) -> Any:
    return types.ElicitResult(action="accept", content={"name": "Ada"})


async def test_an_added_callback_keeps_task_support(dialect: str) -> None:
    seen: list[Task] = []
    options = {"elicitation_callback": answer_ada}
    async with connect_in_memory(asking_app(), dialect=dialect, session_options=options) as session:
        result = read_result(await call_tool(session, "greet", on_status=seen.append))
    assert result.text == "Hello, Ada! (task: True)"
    assert seen[-1].status.value == "completed"


async def test_options_spread_from_session_kwargs_are_taken_as_they_are(dialect: str) -> None:
    spread = {**session_kwargs(dialect=dialect), "elicitation_callback": answer_ada}  # the way before
    merged = merged_session_options(spread, dialect=dialect)
    assert merged == spread
    assert all(merged[key] is spread[key] for key in spread)
    async with connect_in_memory(asking_app(), dialect=dialect, session_options=spread) as session:
        assert read_result(await call_tool(session, "greet")).text == "Hello, Ada! (task: True)"


async def test_composed_keywords_go_through_session_kwargs() -> None:
    async def message_handler(message: object) -> None: ...

    merged = merged_session_options(
        {"message_handler": message_handler, "read_timeout_seconds": 9}, dialect=None
    )
    own = session_kwargs()
    assert set(merged) == set(own) | {"message_handler", "read_timeout_seconds"}
    assert merged["read_timeout_seconds"] == 9
    # session_kwargs() wraps the caller's handler in its own, which hears task statuses first
    assert merged["message_handler"] is not message_handler
    assert "message_handler" in COMPOSED_SESSION_OPTIONS
    async with connect_in_memory(
        asking_app(), session_options={"message_handler": message_handler}
    ) as session:
        negotiated = await negotiate(session)
        assert negotiated.dialect is not None  # the library's plumbing is still there


async def test_a_spread_that_replaces_part_of_the_librarys_settings_is_refused() -> None:
    own = session_kwargs()

    async def mine(message: object) -> None: ...

    replaced = {**own, "message_handler": mine}
    if set(own) == {"message_handler"}:  # mcp 1.x: the handler is all session_kwargs() sets
        pytest.skip("on mcp 1.x a lone message_handler is the caller's own: it is composed, not refused")
    with pytest.raises(SessionOptionsError) as refused:
        async with connect_in_memory(asking_app(), session_options=replaced):
            pass
    message = str(refused.value)
    assert "replaces its ['message_handler']" in message
    assert f"mcp {sdk_info().mcp_version}" in message
    assert "fix: give only your own options" in message
    dropped = {key: value for key, value in own.items() if key != "extensions"}
    with pytest.raises(SessionOptionsError, match=r"leaves out its \['extensions'\]"):
        merged_session_options(dropped, dialect=None)


async def test_bare_gives_a_session_without_the_librarys_plumbing() -> None:
    assert merged_session_options({"read_timeout_seconds": 3}, dialect=None, bare=True) == {
        "read_timeout_seconds": 3
    }
    if sdk_info().major == 1:
        pytest.skip("a bare mcp 1.x session still runs tasks (statuses are polled): nothing to tell apart")
    async with connect_in_memory(asking_app(), bare=True) as session:
        with pytest.raises(UnsupportedOptInError, match="TaskClientSession"):
            await call_tool(session, "greet", mode="task")
