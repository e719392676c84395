"""The testing kit's smoke test against the installed wheel: ``nox -s package`` runs it (not in the suite).

The session copies this file as ``test_wheel_smoke.py`` into an empty folder outside the checkout
and runs pytest there with the environment the built wheel was installed into, so the plugin (its
``pytest11`` entry point), the fixtures, the example tools and the server subprocesses all come
from the wheel: a module the wheel lacks fails here, not in a user's project.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import mcp_tasks_compat
from mcp_tasks_compat.client import call_tool, negotiate
from mcp_tasks_compat.testing import dialects

__all__: list[str] = []

pytestmark = pytest.mark.anyio

SOURCE_PACKAGE_ENV = "MCP_TASKS_COMPAT_SOURCE_PACKAGE"
"""Set by the session to the checkout's package folder (compat/mcp_tasks_compat), never imported here."""


def text(result: Any) -> str:
    return "".join(block.text for block in result.content if block.type == "text")


def test_the_library_is_the_installed_wheel(request: pytest.FixtureRequest) -> None:
    package = Path(mcp_tasks_compat.__file__).resolve().parent
    assert "site-packages" in package.parts, package
    source = os.environ.get(SOURCE_PACKAGE_ENV)
    if source:
        assert package != Path(source).resolve(), f"imported from the checkout: {package}"
    assert request.config.pluginmanager.has_plugin("mcp_tasks_compat")  # via the wheel's entry point


@pytest.mark.parametrize("mcp_tasks_dialect", dialects())
async def test_a_long_tool_runs_as_a_task_in_memory(mcp_tasks_session: Any, mcp_tasks_dialect: str) -> None:
    statuses: list[Any] = []
    arguments = {"text": "from the wheel", "seconds": 0.2, "steps": 2}
    result = await call_tool(mcp_tasks_session, "slow_echo", arguments, on_status=statuses.append)
    assert text(result) == "from the wheel"
    assert statuses[-1].status.value == "completed"
    assert (await negotiate(mcp_tasks_session)).dialect == mcp_tasks_dialect


async def test_a_task_required_tool_over_stdio(mcp_tasks_stdio_session: Any) -> None:
    assert text(await call_tool(mcp_tasks_stdio_session, "must_task", {"text": "stdio"})) == "stdio"


async def test_a_task_over_http(mcp_tasks_http_session: Any) -> None:  # the `http` extra: uvicorn
    arguments = {"text": "http", "seconds": 0.2, "steps": 1}
    assert text(await call_tool(mcp_tasks_http_session, "slow_echo", arguments, mode="task")) == "http"
