"""``client.connect_in_memory``: the client's third opener, for a server in this process (1.0 moved
it from the testing kit); its ``client_session_kwargs`` are added to the library's settings."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcp_tasks_compat.client import call_tool, connect_in_memory, negotiate, read_result
from mcp_tasks_compat.errors import SessionOptionsError
from mcp_tasks_compat.server import TaskServer, elicit

pytestmark = pytest.mark.anyio


def build_app() -> TaskServer:
    app = TaskServer("in-memory", inline_grace_s=0)

    @app.tool(task="optional")
    async def greet() -> str:
        answer = await elicit("Your name?", {"type": "object", "properties": {"name": {"type": "string"}}})
        return f"hello {(answer.content or {}).get('name')}"

    return app


async def test_a_task_runs_and_asks_through_the_callback_given_as_a_session_keyword() -> None:
    async def elicitation_callback(context: Any, params: Any) -> Any:
        from mcp import types

        return types.ElicitResult(action="accept", content={"name": "Ada"})

    statuses: list[str] = []
    options = {"elicitation_callback": elicitation_callback}
    async with connect_in_memory(build_app(), client_session_kwargs=options) as session:
        negotiated = await negotiate(session)
        assert negotiated.dialect is not None  # tasks negotiated: the library's settings were kept
        with anyio.fail_after(30):
            result = await call_tool(
                session, "greet", on_status=lambda task: statuses.append(task.status.value)
            )
    assert read_result(result).text == "hello Ada"
    assert statuses[0] == "working"
    assert "input_required" in statuses
    assert statuses[-1] == "completed"


async def test_anything_but_a_server_is_a_type_error_saying_what_is_taken() -> None:
    with pytest.raises(TypeError, match=r"connect_in_memory on mcp [12]\.x takes a TaskServer"):
        async with connect_in_memory(object()):
            pass


async def test_options_that_would_drop_the_librarys_settings_are_refused() -> None:
    async def mine(message: Any) -> None:
        return None

    from mcp_tasks_compat._client_api import session_kwargs

    own = session_kwargs()
    spread = {**own, next(iter(own)): mine} if len(own) > 1 else None
    if spread is None:
        pytest.skip("mcp 1.x sets one keyword (message_handler): nothing to drop beside it")
    with pytest.raises(SessionOptionsError, match="would lose task support"):
        async with connect_in_memory(build_app(), client_session_kwargs=spread):
            pass
