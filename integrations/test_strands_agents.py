"""strands-agents 1.62 (mcp 1.x, and 2.0-2.1, which it allows): both routes, strands' own tool
calls (``call_tool_async``, which its agent tools use), no model.

* the page's recipe: strands' sessions become ``TaskClientSession`` (strands has no parameter for
  the session class, so the recipe rebinds the one name its client module builds sessions from);
* strands' own ``tasks_config``: its own task client, the library only on the server.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from tests.doc_blocks import run_doc_block

from integrations.records import MCP_MAJOR, Records, assert_progress, cancel_once_running

pytestmark = pytest.mark.anyio


class Strands:
    """An open strands ``MCPClient`` and what its progress callback heard."""

    def __init__(self, client: Any, progress: list[str | None]) -> None:
        self.client = client
        self.progress = progress

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        return await self.client.call_tool_async(tool_use_id="call-1", name=name, arguments=arguments)


def open_client(records: Records, **options: Any) -> Iterator[Strands]:
    from mcp import StdioServerParameters, stdio_client
    from strands.tools.mcp import MCPClient

    progress: list[str | None] = []

    def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message)

    params = StdioServerParameters(command=records.command, args=records.args)
    client = MCPClient(lambda: stdio_client(params), progress_callback=on_progress, **options)
    with client:
        assert {tool.tool_name for tool in client.list_tools_sync()} == {"encode", "render"}
        yield Strands(client, progress)


@pytest.fixture
def recipe(records: Records, monkeypatch: pytest.MonkeyPatch) -> Iterator[Strands]:
    from strands.tools.mcp import mcp_client

    monkeypatch.setattr(mcp_client, "ClientSession", mcp_client.ClientSession)  # restored afterwards
    run_doc_block("docs/integrations.md", "strands-agents")
    yield from open_client(records)


@pytest.fixture
def own_tasks(records: Records) -> Iterator[Strands]:
    yield from open_client(records, tasks_config={})


def text_of(result: Any) -> str:
    assert result["status"] == "success", result
    return str(result["content"][0]["text"])


async def test_the_recipe_runs_a_task_and_its_progress_reaches_strands(
    recipe: Strands, records: Records
) -> None:
    answer = text_of(await recipe.call("encode", {"frames": 4, "seconds": 1.0}))
    assert answer == f"encoded 4 frames in task {records.finished_task('encode')}"
    assert_progress(recipe.progress, 4)
    if MCP_MAJOR == 2:  # strands sends server/discover: the Tasks extension pushes the task's states
        assert records.reads() <= 3, records.summary()


async def test_the_recipe_cancels_the_task_with_the_agents_call(recipe: Strands, records: Records) -> None:
    arguments = {"frames": 200, "seconds": 60}
    await cancel_once_running(records, "encode", lambda: recipe.call("encode", arguments))


async def test_strands_own_tasks_config_runs_a_task(own_tasks: Strands, records: Records) -> None:
    answer = text_of(await own_tasks.call("encode", {"frames": 4, "seconds": 1.0}))
    assert answer == f"encoded 4 frames in task {records.finished_task('encode')}"


async def test_strands_own_tasks_config_cancels_the_task(own_tasks: Strands, records: Records) -> None:
    arguments = {"frames": 200, "seconds": 60}
    await cancel_once_running(records, "encode", lambda: own_tasks.call("encode", arguments))
