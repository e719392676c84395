"""The fixtures of :mod:`mcp_tasks_compat.testing`, loaded by pytest wherever the library is installed.

So this module imports no ``mcp`` (the fixtures build servers and sessions on first use, through
:mod:`._testkit`), defines only fixtures whose names start with ``mcp_tasks_``, and no hooks.
The async fixtures are anyio fixtures: use them from ``@pytest.mark.anyio`` tests.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, Generator
from typing import Any

import pytest

from ._testkit import (
    EXAMPLE_TOOLSET,
    ToolSet,
    build_task_server,
    child_environment,
    connect_http,
    connect_in_memory,
    connect_stdio,
    http_server_process,
    load_toolset,
    server_command,
)
from .dialects import Dialect

__all__ = [
    "mcp_tasks_dialect",
    "mcp_tasks_http_session",
    "mcp_tasks_http_url",
    "mcp_tasks_server",
    "mcp_tasks_server_command",
    "mcp_tasks_server_options",
    "mcp_tasks_session",
    "mcp_tasks_stdio_session",
    "mcp_tasks_toolset",
    "mcp_tasks_toolset_spec",
]


@pytest.fixture
def mcp_tasks_toolset_spec() -> str | None:
    """Your tool set as ``"package.module:ATTRIBUTE"`` (override it); ``None`` serves the example set.

    Every server fixture reads it: the in-memory one imports it, the stdio and HTTP ones pass it
    to the server subprocess.
    """
    return None


@pytest.fixture
def mcp_tasks_toolset(mcp_tasks_toolset_spec: str | None) -> ToolSet:
    """The tool set of the in-memory server (override it to serve tools that close over test state)."""
    return EXAMPLE_TOOLSET if mcp_tasks_toolset_spec is None else load_toolset(mcp_tasks_toolset_spec)


@pytest.fixture
def mcp_tasks_server_options() -> dict[str, Any]:
    """Keyword arguments for the in-memory server's ``ServerTasks`` (e.g. ``poll_policy``)."""
    return {}


@pytest.fixture
def mcp_tasks_dialect() -> Dialect | None:
    """The task dialect the session fixtures pin (``None``: the newest the connection offers).

    Parametrize it with ``mcp_tasks_compat.testing.dialects()`` to run a test in each dialect the
    installed mcp speaks.
    """
    return None


@pytest.fixture
def mcp_tasks_server(mcp_tasks_toolset: ToolSet, mcp_tasks_server_options: dict[str, Any]) -> Any:
    """A task-capable server of the installed major (``FastMCP`` on 1.x, ``MCPServer`` on 2.x)."""
    return build_task_server(mcp_tasks_toolset, **mcp_tasks_server_options)


@pytest.fixture
async def mcp_tasks_session(
    mcp_tasks_server: Any, mcp_tasks_dialect: Dialect | None
) -> AsyncGenerator[Any, None]:
    """A ``ClientSession`` (``session_kwargs()``, negotiated) to ``mcp_tasks_server`` in memory."""
    async with connect_in_memory(mcp_tasks_server, dialect=mcp_tasks_dialect) as session:
        yield session


@pytest.fixture
def mcp_tasks_server_command(mcp_tasks_toolset_spec: str | None) -> list[str]:
    """The stdio server subprocess: this interpreter serving ``mcp_tasks_toolset_spec``."""
    return server_command(mcp_tasks_toolset_spec)


@pytest.fixture
async def mcp_tasks_stdio_session(
    mcp_tasks_server_command: list[str], mcp_tasks_dialect: Dialect | None, request: pytest.FixtureRequest
) -> AsyncGenerator[Any, None]:
    """A negotiated ``ClientSession`` to ``mcp_tasks_server_command`` over stdio.

    The subprocess runs in the rootdir with this run's ``sys.path`` on its ``PYTHONPATH``.
    """
    root = request.config.rootpath
    async with connect_stdio(
        mcp_tasks_server_command, dialect=mcp_tasks_dialect, env=child_environment([root]), cwd=root
    ) as session:
        yield session


@pytest.fixture
def mcp_tasks_http_url(
    mcp_tasks_toolset_spec: str | None, request: pytest.FixtureRequest
) -> Generator[str, None, None]:
    """A server subprocess over streamable HTTP on a free port (one per test); its URL."""
    root = request.config.rootpath
    env = {**os.environ, **child_environment([root])}
    with http_server_process(mcp_tasks_toolset_spec, env=env, cwd=root) as url:
        yield url


@pytest.fixture
async def mcp_tasks_http_session(
    mcp_tasks_http_url: str, mcp_tasks_dialect: Dialect | None
) -> AsyncGenerator[Any, None]:
    """A negotiated ``ClientSession`` to ``mcp_tasks_http_url``."""
    async with connect_http(mcp_tasks_http_url, dialect=mcp_tasks_dialect) as session:
        yield session
