"""docs/integrations.md's journal recipes (langchain-mcp-adapters, strands-agents; mcp 1.x): a task
survives the agent's restart.

The agent (``journal_agent.py``: the page's block, then the framework's own tool call of the
example server's ``slow_echo`` over streamable HTTP) is killed with SIGKILL once its journal holds
the task; the restarted agent (this test's process, in the same folder) runs the same block, whose
``journal.resume()`` reads the tool's result. The example server is a real process with
``--unauthenticated-2025-scope task_id``, so the new session may read the 2025-11-25 task.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from tests.doc_blocks import run_doc_block_async

from integrations.records import MCP_MAJOR
from mcp_tasks_compat.client import TaskJournal, read_result
from mcp_tasks_compat.testing import HttpServerProcess

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(MCP_MAJOR != 1, reason="the recipes' frameworks run on mcp 1.x in CI"),
]

AGENT = str(Path(__file__).with_name("journal_agent.py"))
BOUND_S = 90.0
"""A bound, not a wait: interpreters importing a framework on a possibly busy machine."""
BLOCKS = {"langchain": "langchain-journal", "strands": "strands-journal"}
"""docs/integrations.md's block of each framework."""
MODULES = {
    "langchain": ("langchain_mcp_adapters.sessions", "ClientSession"),
    "strands": ("strands.tools.mcp.mcp_client", "ClientSession"),
}


@pytest.fixture
def url() -> Iterator[str]:
    server = HttpServerProcess(
        [sys.executable, "-m", "mcp_tasks_compat", "example-server", "--transport", "http", "--port", "0",
         "--unauthenticated-2025-scope", "task_id"],
        start_timeout=BOUND_S,
    )  # fmt: skip
    try:
        yield server.start()
    finally:
        server.stop()


async def killed_once_journaled(agent: subprocess.Popen[str], journal: Path) -> TaskJournal.Entry:
    with anyio.fail_after(BOUND_S):
        while not (await anyio.Path(journal).exists() and TaskJournal(journal).pending()):
            if agent.poll() is not None:
                raise AssertionError(f"the agent ended first: {agent.communicate()}")
            await anyio.sleep(0.05)
    agent.send_signal(signal.SIGKILL)
    agent.wait(timeout=BOUND_S)
    [entry] = TaskJournal(journal).pending()
    return entry


def start_agent(framework: str, url: str, folder: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, AGENT, framework, url],
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize("framework", ["langchain", "strands"])
async def test_the_restarted_agent_reads_the_result_of_the_task_its_killed_run_left(
    framework: str, url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module_name, name = MODULES[framework]
    module: Any = __import__(module_name, fromlist=[name])
    monkeypatch.setattr(module, name, getattr(module, name))  # the block rebinds it: restored afterwards
    entry = await killed_once_journaled(start_agent(framework, url, tmp_path), tmp_path / "agent-tasks.db")
    assert (entry.tool, entry.endpoint.url) == ("slow_echo", url)
    monkeypatch.chdir(tmp_path)  # the restarted agent, in its folder
    with anyio.fail_after(BOUND_S):
        names = await run_doc_block_async("docs/integrations.md", BLOCKS[framework], {"url": url})
    [(resumed, result)] = names["finished"]
    assert resumed.task_id == entry.task_id
    assert read_result(result).text == "after the restart"
    assert TaskJournal(tmp_path / "agent-tasks.db").pending() == []
