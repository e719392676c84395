"""The plugin's fixtures in this suite, the way a downstream project uses them: a tool set of our own,
named by ``mcp_tasks_toolset_spec``, served in memory, over stdio and over streamable HTTP."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcp_tasks_compat.client import call_tool, negotiate
from mcp_tasks_compat.core._model import Task
from mcp_tasks_compat.testing import ToolSet

from .toolsets import NEWEST_DIALECT, SERVER_CLASS, TOOLS, text_of

pytestmark = pytest.mark.anyio

BOUND = 60.0


@pytest.fixture
def mcp_tasks_toolset_spec() -> str:
    return f"{__package__}.toolsets:TOOLS"


async def _check(session: Any) -> None:
    statuses: list[Task] = []
    with anyio.fail_after(BOUND):
        result = await call_tool(session, "shout", {"text": "hi"}, on_status=statuses.append)
        assert text_of(result) == "HI (task)"
        assert statuses
        assert statuses[-1].status.value == "completed"
        assert text_of(await call_tool(session, "whisper", {"text": "QUIET"})) == "quiet"
    negotiated = await negotiate(session)
    assert negotiated.dialect == NEWEST_DIALECT


def test_the_spec_reaches_the_in_memory_tool_set(mcp_tasks_toolset: ToolSet, mcp_tasks_server: Any) -> None:
    assert mcp_tasks_toolset is TOOLS
    assert type(mcp_tasks_server).__name__ == SERVER_CLASS


async def test_in_memory(mcp_tasks_session: Any) -> None:
    await _check(mcp_tasks_session)


async def test_stdio(mcp_tasks_stdio_session: Any) -> None:
    await _check(mcp_tasks_stdio_session)


async def test_http(mcp_tasks_http_session: Any) -> None:
    await _check(mcp_tasks_http_session)
