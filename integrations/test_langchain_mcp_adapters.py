"""langchain-mcp-adapters 0.3.2 (mcp 1.x only): the page's recipe, LangChain's own tool objects, no model.

The recipe keeps one session (``client.session(...)``) and gives ``load_mcp_tools`` that session
wrapped by ``with_tasks``; the connection's ``session_kwargs`` (a public field of its connection
config) lets the session hear task statuses as they happen, and LangChain's
``Callbacks(on_progress=)`` hears them. Each test's body is the recipe's ``use_tools``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from tests.doc_blocks import run_doc_block_async

from integrations.records import Records, assert_progress, cancel_once_running

pytestmark = pytest.mark.anyio

UseTools = Callable[[dict[str, Any], list[str | None]], Awaitable[None]]


async def run_recipe(records: Records, body: UseTools) -> None:
    """The recipe as printed, its tools (by name) and what its progress callback heard given to ``body``."""
    from langchain_mcp_adapters.callbacks import CallbackContext, Callbacks

    progress: list[str | None] = []

    async def on_progress(
        value: float, total: float | None, message: str | None, context: CallbackContext
    ) -> None:
        progress.append(message)

    async def use_tools(tools: list[Any]) -> None:
        await body({tool.name: tool for tool in tools}, progress)

    names = {
        "server": {"transport": "stdio", "command": records.command, "args": records.args},
        "callbacks": Callbacks(on_progress=on_progress),
        "use_tools": use_tools,
    }
    await run_doc_block_async("docs/integrations.md", "langchain-mcp-adapters", names)


async def test_a_call_runs_as_a_task_and_its_progress_reaches_langchain(records: Records) -> None:
    async def body(tools: dict[str, Any], progress: list[str | None]) -> None:
        answer = await tools["encode"].ainvoke({"frames": 4, "seconds": 1.0})
        assert f"encoded 4 frames in task {records.finished_task('encode')}" in str(answer)
        assert_progress(progress, 4)

    await run_recipe(records, body)


async def test_cancelling_the_agents_call_cancels_the_task(records: Records) -> None:
    async def body(tools: dict[str, Any], progress: list[str | None]) -> None:
        arguments = {"frames": 200, "seconds": 60}
        await cancel_once_running(records, "encode", lambda: tools["encode"].ainvoke(arguments))

    await run_recipe(records, body)
