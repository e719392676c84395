"""The agent process of the journal recipes' test: ``python journal_agent.py FRAMEWORK URL``.

Run in the folder of the agent's journal (the page's ``sqlite:///agent-tasks.db``): it runs
docs/integrations.md's journal block for ``FRAMEWORK`` (``langchain`` or ``strands``), then calls
the example server's ``slow_echo`` at ``URL`` through that framework's own tool objects (no model),
and prints the result. The test kills it with SIGKILL once the journal holds the task.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository: tests.doc_blocks

from tests.doc_blocks import run_doc_block_async

ARGUMENTS = {"text": "after the restart", "seconds": 8, "steps": 4}


async def call_with_langchain(url: str) -> Any:
    from langchain_mcp_adapters.client import MultiServerMCPClient

    client = MultiServerMCPClient({"tools": {"transport": "streamable_http", "url": url}})
    tools = {tool.name: tool for tool in await client.get_tools()}
    return await tools["slow_echo"].ainvoke(ARGUMENTS)


async def call_with_strands(url: str) -> Any:
    from mcp.client.streamable_http import streamablehttp_client
    from strands.tools.mcp import MCPClient

    with MCPClient(lambda: streamablehttp_client(url)) as client:
        return await client.call_tool_async(tool_use_id="call-1", name="slow_echo", arguments=ARGUMENTS)


async def main(framework: str, url: str) -> None:
    block = {"langchain": "langchain-journal", "strands": "strands-journal"}[framework]
    await run_doc_block_async("docs/integrations.md", block, {"url": url})
    call = call_with_langchain if framework == "langchain" else call_with_strands
    print(await call(url), flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
