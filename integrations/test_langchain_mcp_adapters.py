"""langchain-mcp-adapters 0.3.2 (mcp 1.x only): the page's recipe, LangChain's own tool objects, no model.

The recipe rebinds the ``ClientSession`` name langchain's ``sessions`` module builds every session
from, as the ADK and strands recipes do, so both of langchain's routes run tasks: the default
``client.get_tools()``, which opens a session per tool call, and a session kept open with
``client.session(...)`` and handed to ``load_mcp_tools``. The session hears the task's statuses
as the server pushes them, and LangChain's ``Callbacks(on_progress=)`` hears them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from tests.doc_blocks import run_doc_block

from integrations.records import Records, assert_progress, cancel_once_running

pytestmark = pytest.mark.anyio

ROUTES = ["get_tools", "kept_session"]
"""langchain's two ways to tools: ``client.get_tools()`` (a session per call), ``client.session()``."""


class Recipe:
    """The page's recipe applied, a ``MultiServerMCPClient`` on the recording server, what its
    progress callback heard."""

    def __init__(self, records: Records) -> None:
        from langchain_mcp_adapters.callbacks import CallbackContext, Callbacks
        from langchain_mcp_adapters.client import MultiServerMCPClient

        self.progress: list[str | None] = []

        async def on_progress(
            value: float, total: float | None, message: str | None, context: CallbackContext
        ) -> None:
            self.progress.append(message)

        server = {"transport": "stdio", "command": records.command, "args": records.args}
        self.client = MultiServerMCPClient({"render": server}, callbacks=Callbacks(on_progress=on_progress))

    @asynccontextmanager
    async def tools(self, route: str) -> AsyncIterator[dict[str, Any]]:
        """The LangChain tools by name, from ``route``."""
        from langchain_mcp_adapters.tools import load_mcp_tools

        if route == "get_tools":
            yield {tool.name: tool for tool in await self.client.get_tools()}
            return
        async with self.client.session("render") as session:
            tools = await load_mcp_tools(session, callbacks=self.client.callbacks, server_name="render")
            yield {tool.name: tool for tool in tools}


@pytest.fixture
def recipe(records: Records, monkeypatch: pytest.MonkeyPatch) -> Recipe:
    from langchain_mcp_adapters import sessions

    monkeypatch.setattr(sessions, "ClientSession", sessions.ClientSession)  # undone after the test
    run_doc_block("docs/integrations.md", "langchain-mcp-adapters")
    return Recipe(records)


Call = Callable[[], Awaitable[Any]]


@pytest.mark.parametrize("route", ROUTES)
async def test_a_call_runs_as_a_task_and_its_progress_reaches_langchain(
    recipe: Recipe, records: Records, route: str
) -> None:
    async with recipe.tools(route) as tools:
        answer = await tools["encode"].ainvoke({"frames": 4, "seconds": 1.0})
    assert f"encoded 4 frames in task {records.finished_task('encode')}" in str(answer)
    assert_progress(recipe.progress, 4)
    assert recipe.progress[-1] == "frame 4/4", recipe.progress  # the last step, sent as the tool ends


@pytest.mark.parametrize("route", ROUTES)
async def test_cancelling_the_agents_call_cancels_the_task(
    recipe: Recipe, records: Records, route: str
) -> None:
    arguments = {"frames": 200, "seconds": 60}
    async with recipe.tools(route) as tools:
        await cancel_once_running(records, "encode", lambda: tools["encode"].ainvoke(arguments))
