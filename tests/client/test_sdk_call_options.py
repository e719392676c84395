"""No orphaned task: each keyword of the SDK's ``ClientSession.call_tool``, through every entry point.

An agent framework calls ``session.call_tool(...)`` with the SDK's own keywords (strands-agents
passes ``allow_input_required=True`` on mcp 2.x). Handed to the SDK unchanged, such a call let
the server create a task that the SDK then refused (``UnexpectedClaimedResult``), and the task ran
on with nobody following it. The sweep reads the keywords from the installed SDK at test time, so
a keyword a new release adds fails here until its behaviour is decided. Each call is checked on
the SERVER side: the tasks it created all ended (none left running unfollowed), and a call meant
to run as a task did create one.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import anyio
import pytest
from tests.client.round_tools import TOOLS as ROUND_TOOLS

from mcp_tasks_compat._adapters import get_adapter
from mcp_tasks_compat._client_api import session_kwargs, tasks_extension, with_tasks
from mcp_tasks_compat._testkit.sessions import connect_in_memory
from mcp_tasks_compat.client import TaskClientSession, call_tool, negotiate
from mcp_tasks_compat.dialects import DIALECT_2026_07_28, Dialect
from mcp_tasks_compat.server import InMemoryTaskStore
from mcp_tasks_compat.testing import EXAMPLE_TOOLSET, ToolSet, build_task_server, dialects

pytestmark = pytest.mark.anyio

BOUND = 30.0
MAJOR = get_adapter().major
TOOLSET = ToolSet(
    tools={**EXAMPLE_TOOLSET.tools, **ROUND_TOOLS.tools},
    support={**EXAMPLE_TOOLSET.support, **ROUND_TOOLS.support},
)
SLOW = {"text": "tasked", "seconds": 0.3, "steps": 2}

COMMON = ("read_timeout_seconds", "progress_callback", "meta")
"""The keywords every major's ``call_tool`` has."""
KNOWN = (*COMMON, "input_responses", "request_state", "allow_input_required", "allow_claimed")
"""Every keyword whose behaviour this library decided; a keyword outside it fails the sweep."""


def sdk_keywords() -> list[str]:
    from mcp.client.session import ClientSession

    parameters = inspect.signature(ClientSession.call_tool).parameters
    return [name for name in parameters if name not in ("self", "name", "arguments")]


def test_every_sdk_keyword_is_decided() -> None:
    undecided = sorted(set(sdk_keywords()) - set(KNOWN))
    assert not undecided, f"the SDK's call_tool gained {undecided}: decide how the library honours them"


# --- the server, and what it holds ----------------------------------------------------------------


class Served:
    """A task server in memory whose store the test reads: the server side of every assertion."""

    def __init__(self, **options: Any) -> None:
        self.store = InMemoryTaskStore()
        self.server = build_task_server(TOOLSET, store=self.store, **{"inline_grace_s": 0, **options})

    async def tasks(self) -> list[Any]:
        states, _ = await self.store.list_tasks()
        return [state.task for state in states]

    async def assert_none_unfollowed(self, *, created_at_least: int) -> None:
        tasks = await self.tasks()
        running = [(task.task_id, task.status.value) for task in tasks if not task.is_terminal]
        assert not running, f"tasks left running with nobody following them: {running}"
        assert len(tasks) >= created_at_least, f"expected a task on the server, found {tasks}"


async def name_ada(_message: str, _schema: Any) -> dict[str, Any]:
    return {"name": "Ada"}


def accept_name() -> Any:
    """An elicitation callback of the installed SDK that answers every question with the name Ada."""
    return get_adapter().app.elicitation_callback(name_ada)


# --- the entry points -----------------------------------------------------------------------------

Caller = Callable[..., Awaitable[Any]]


@asynccontextmanager
async def task_client_session(served: Served, dialect: Dialect) -> AsyncIterator[Caller]:
    app = get_adapter().app
    async with (
        app.in_memory_streams(served.server) as (read, write),
        TaskClientSession(read, write, dialect=dialect) as session,
    ):
        await app.handshake(session, dialect_2025=dialect != DIALECT_2026_07_28)
        await negotiate(session)
        yield session.call_tool


@asynccontextmanager
async def wrapped_session(served: Served, dialect: Dialect) -> AsyncIterator[Caller]:
    async with connect_in_memory(
        served.server, dialect=dialect, session_options=session_kwargs(dialect=dialect)
    ) as session:
        yield with_tasks(session).call_tool


@asynccontextmanager
async def public_call_tool(served: Served, dialect: Dialect) -> AsyncIterator[Caller]:
    async with connect_in_memory(served.server, dialect=dialect) as session:

        async def call(name: str, arguments: dict[str, Any] | None = None, *args: Any, **kwargs: Any) -> Any:
            assert not args
            kwargs["on_progress"] = kwargs.pop("progress_callback", None)
            return await call_tool(session, name, arguments, **kwargs)

        yield call


ENTRY_POINTS = {
    "TaskClientSession": task_client_session,
    "with_tasks": wrapped_session,
    "call_tool": public_call_tool,
}


# --- one scenario per keyword ---------------------------------------------------------------------


def keyword_value(keyword: str, seen: list[Any]) -> Any:
    if keyword == "read_timeout_seconds":
        return timedelta(seconds=BOUND) if MAJOR == 1 else BOUND
    if keyword == "progress_callback":

        async def progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append((progress, total, message))

        return progress
    if keyword == "meta":
        return {"trace": "sweep"}
    if keyword in ("allow_input_required", "allow_claimed"):
        return True
    raise AssertionError(f"no value for {keyword!r}")


def text_of(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
@pytest.mark.parametrize("dialect", dialects())
async def test_each_keyword_follows_the_task_it_causes(entry: str, dialect: Dialect) -> None:
    """A task-capable tool called with each keyword alone: the task is followed to its result."""
    for keyword in sdk_keywords():
        if keyword in ("input_responses", "request_state"):
            continue  # they continue an input_required round: test_input_required_round_trip
        served = Served()
        seen: list[Any] = []
        with anyio.fail_after(BOUND):
            async with ENTRY_POINTS[entry](served, dialect) as call:
                result = await call("slow_echo", SLOW, **{keyword: keyword_value(keyword, seen)})
        assert text_of(result) == "tasked", (keyword, result)
        await served.assert_none_unfollowed(created_at_least=1)


@pytest.mark.skipif(
    MAJOR == 1, reason="mcp 1.x's call_tool has no input_required keywords (1.x runs the rest)"
)
@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
async def test_input_required_round_trip(entry: str) -> None:
    """``allow_input_required=True`` returns the SDK's ``InputRequiredResult`` (no task yet); the
    caller's answers sent back with ``input_responses`` / ``request_state`` make the task, followed."""
    import mcp_types

    served = Served(inline_grace_s=1.0)  # the question comes before any task
    with anyio.fail_after(BOUND):
        async with ENTRY_POINTS[entry](served, DIALECT_2026_07_28) as call:
            asked = await call("greet_first", {}, allow_input_required=True)
            assert isinstance(asked, mcp_types.InputRequiredResult), asked
            assert await served.tasks() == []
            (key,) = (asked.input_requests or {}).keys()
            answers = {key: {"action": "accept", "content": {"name": "Ada"}}}
            result = await call(
                "greet_first",
                {},
                input_responses=answers,
                request_state=asked.request_state,
                allow_input_required=True,
            )
    assert text_of(result) == "Hello, accept: Ada!"
    await served.assert_none_unfollowed(created_at_least=1)


@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
async def test_unknown_keyword_is_refused_before_anything_is_sent(entry: str) -> None:
    served = Served()
    async with ENTRY_POINTS[entry](served, dialects()[-1]) as call:
        with pytest.raises(TypeError, match="not_a_keyword"):
            await call("slow_echo", SLOW, not_a_keyword=True)
    assert await served.tasks() == []


# --- mcp.Client with tasks_extension() ------------------------------------------------------------


@pytest.mark.skipif(MAJOR == 1, reason="mcp.Client and tasks_extension() are mcp 2.x only")
async def test_mcp_client_route_follows_every_keyword_it_takes() -> None:
    """``mcp.Client.call_tool`` takes a subset of the session's keywords; each call's task is followed."""
    from mcp.client import Client

    taken = set(inspect.signature(Client.call_tool).parameters) & set(sdk_keywords())
    assert taken >= {"read_timeout_seconds", "progress_callback", "meta"}
    for keyword in sorted(taken - {"input_responses", "request_state"}):
        served = Served()
        seen: list[Any] = []
        with anyio.fail_after(BOUND):
            async with Client(served.server, extensions=[tasks_extension()]) as client:
                result = await client.call_tool("slow_echo", SLOW, **{keyword: keyword_value(keyword, seen)})
        assert text_of(result) == "tasked", keyword
        await served.assert_none_unfollowed(created_at_least=1)
    if {"input_responses", "request_state"} <= taken:
        served = Served(inline_grace_s=1.0)
        with anyio.fail_after(BOUND):
            async with Client(
                served.server, extensions=[tasks_extension()], elicitation_callback=accept_name()
            ) as client:
                result = await client.call_tool("greet_first", {})
        assert text_of(result) == "Hello, accept: Ada!"
        await served.assert_none_unfollowed(created_at_least=1)
