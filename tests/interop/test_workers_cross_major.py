"""A server on this major, its worker on the other (issue 34: "say what happens"): it works.

The queue and the task states are the same on both majors, so a server built on mcp 2.x (serving
2026-07-28 and 2025-11-25) may queue its runs for workers on mcp 1.x, and the other way round: the
worker runs the example tools of its own major and writes their results and questions to the
store. One SQLite file; the worker from ``MCP_TASKS_COMPAT_PEER_PYTHON`` (what nox sets) or a
sibling environment, as tests/interop/test_input_cross_major.py finds it.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_tasks_compat._client_api import session_kwargs
from mcp_tasks_compat._testkit.sessions import connect_http
from mcp_tasks_compat.client import call_tool
from mcp_tasks_compat.testing import HttpServerProcess

from .test_input_cross_major import PEER, ROOT, Answering, needs_peer

pytestmark = [pytest.mark.anyio, needs_peer]

BOUND_S = 60.0  # a bound, not a wait: it includes starting the other interpreter
READY = "taking tasks from"


@asynccontextmanager
async def _peer_worker(store: str) -> AsyncIterator[None]:
    """``worker --example`` on the other major, until the block ends (then SIGTERM: a graceful stop)."""
    assert PEER is not None
    command = [PEER, "-m", "mcp_tasks_compat", "worker", "--example", "--store", store]
    async with await anyio.open_process(command, cwd=ROOT, stderr=subprocess.PIPE) as process:
        assert process.stderr is not None
        seen = ""
        with anyio.fail_after(BOUND_S):
            async for chunk in process.stderr:
                seen += chunk.decode(errors="replace")
                if READY in seen:
                    break
        try:
            yield
        finally:
            process.terminate()
            with anyio.fail_after(BOUND_S):
                assert await process.wait() == 0


async def test_a_worker_on_the_other_major_runs_and_asks_for_this_majors_server(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'tasks.db'}"
    server = [
        sys.executable,
        "-m",
        "mcp_tasks_compat",
        "example-server",
        "--transport",
        "http",
        "--port",
        "0",
    ]
    server += ["--store", store, "--run-on", "workers"]
    answering = Answering()
    options: dict[str, Any] = {**session_kwargs(), "elicitation_callback": answering}
    with anyio.fail_after(BOUND_S), HttpServerProcess(server, cwd=ROOT) as url:
        async with _peer_worker(store), connect_http(url, session_options=options) as session:
            echoed = await call_tool(session, "slow_echo", {"text": "hi", "seconds": 0.2}, mode="task")
            asked = await call_tool(session, "ask", {"question": "Your name?"}, mode="task")
    assert echoed.content[0].text == "hi"
    assert asked.content[0].text == "Ada"
    assert answering.asked == ["Your name?"]
