"""Input during a task across SDK majors: this interpreter's client, a server on the other major.

The server runs from another virtual environment (``python -m mcp_tasks_compat.testing serve``,
whose example tool set includes ``ask``); the peer is ``MCP_TASKS_COMPAT_PEER_PYTHON`` (what nox
sets), else a sibling ``mcp<other major>.*`` environment next to this one, else the tests skip
with that reason. Across majors the dialect is always 2025-11-25: the question travels on the
client's open ``tasks/result`` and the client session's own callback answers it.
"""

from __future__ import annotations

import glob
import importlib.metadata
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from packaging.version import Version
from tests.answering import Answering

from mcp_tasks_compat import TaskCancelledError
from mcp_tasks_compat._client_api import session_kwargs
from mcp_tasks_compat._testkit.sessions import connect_http, connect_stdio
from mcp_tasks_compat.client import call_tool, resume
from mcp_tasks_compat.core._model import Task, TaskStatus
from mcp_tasks_compat.testing import HttpServerProcess, server_command

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
THIS_MAJOR = Version(importlib.metadata.version("mcp")).major
OTHER_MAJOR = 2 if THIS_MAJOR == 1 else 1
BOUND_S = 60.0  # a bound, not a wait: it includes starting the other interpreter
DIALECT = "2025-11-25"


def _peer_python() -> str | None:
    named = os.environ.get("MCP_TASKS_COMPAT_PEER_PYTHON")
    candidates = (
        [named]
        if named
        else sorted(glob.glob(str(Path(sys.prefix).parent / f"mcp{OTHER_MAJOR}.*" / "bin" / "python")))
    )
    for python in reversed(candidates):
        probe = subprocess.run(
            [python, "-c", "import importlib.metadata as m; print(m.version('mcp'))"],
            capture_output=True,
            text=True,
            check=False,
        )
        if probe.returncode == 0 and Version(probe.stdout.strip()).major == OTHER_MAJOR:
            return python
    return None


PEER = _peer_python()
needs_peer = pytest.mark.skipif(
    PEER is None,
    reason=f"no mcp {OTHER_MAJOR}.x interpreter: set MCP_TASKS_COMPAT_PEER_PYTHON or create a sibling venv "
    f"mcp{OTHER_MAJOR}.* next to {Path(sys.prefix).name}",
)


@asynccontextmanager
async def _session(transport: str, options: dict[str, Any]) -> AsyncIterator[Any]:
    assert PEER is not None
    if transport == "stdio":
        async with connect_stdio(
            server_command(python=PEER), dialect=DIALECT, session_options=options, cwd=ROOT
        ) as session:
            yield session
        return
    with HttpServerProcess(server_command(transport="http", python=PEER), cwd=ROOT) as url:
        async with connect_http(url, dialect=DIALECT, session_options=options) as session:
            yield session


@needs_peer
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_the_other_majors_server_asks_and_this_client_answers(transport: str) -> None:
    answering = Answering()
    seen: list[TaskStatus] = []

    def on_status(task: Task) -> None:
        seen.append(task.status)

    options = {**session_kwargs(dialect=DIALECT), "elicitation_callback": answering}
    with anyio.fail_after(BOUND_S):
        async with _session(transport, options) as session:
            result = await call_tool(
                session, "ask", {"question": "Your name?"}, mode="task", on_status=on_status
            )
    assert result.content[0].text == "Ada"
    assert answering.asked == ["Your name?"]
    # (input_required itself may fall between two polls: the answer can be quicker than a poll.)
    assert seen[-1] is TaskStatus.COMPLETED


@needs_peer
async def test_without_a_callback_the_other_majors_server_cancels_the_task() -> None:
    ids: list[str] = []
    with anyio.fail_after(BOUND_S):
        async with _session("stdio", session_kwargs(dialect=DIALECT)) as session:
            with pytest.raises(TaskCancelledError, match="did not declare the 'elicitation' capability"):
                await call_tool(
                    session,
                    "ask",
                    {"question": "Anyone?"},
                    mode="task",
                    on_status=lambda t: ids.append(t.task_id),
                )
            state = await (await resume(session, ids[0])).status()
    assert state is not None
    assert state.status is TaskStatus.CANCELLED
