"""The fixtures of :mod:`mcp_tasks_compat.testing`, loaded by pytest wherever the library is installed.

So this module imports no ``mcp`` (the fixtures build servers and sessions on first use, through
:mod:`._testkit`), and defines only fixtures whose names start with ``mcp_tasks_`` plus the two
markers ``mcp1`` / ``mcp2`` (a test marked for the other major is skipped with the reason; the
installed major is looked up only when some test carries one). The async fixtures are anyio
fixtures: use them from ``@pytest.mark.anyio`` tests.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, Generator
from typing import Any

import pytest

from ._testkit.processes import child_environment, http_server_process
from ._testkit.serve import server_command
from ._testkit.sessions import connect_http, connect_in_memory, connect_stdio
from ._testkit.toolsets import EXAMPLE_TOOLSET, ToolSet, build_task_server, load_toolset
from .dialects import Dialect

MAJOR_MARKERS = {"mcp1": "1.x", "mcp2": "2.x"}
"""The markers of tests that need one mcp major installed, and the major each names."""


def pytest_configure(config: pytest.Config) -> None:
    for marker, major in MAJOR_MARKERS.items():
        line = f"{marker}: needs mcp {major} installed (skipped otherwise, with the reason)"
        config.addinivalue_line("markers", line)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip the tests marked ``mcp1`` / ``mcp2`` for the major that is not installed."""
    marked = [(item, {m.name for m in item.iter_markers() if m.name in MAJOR_MARKERS}) for item in items]
    marked = [(item, names) for item, names in marked if names]
    if not marked:
        return  # no test asks: mcp is not looked at
    from ._adapters import get_adapter
    from ._detect import sdk_info

    installed = f"mcp{get_adapter().major}"
    for item, names in marked:
        if installed not in names:
            needs = " or ".join(f"mcp {MAJOR_MARKERS[name]}" for name in sorted(names))
            item.add_marker(pytest.mark.skip(reason=f"needs {needs}; installed mcp {sdk_info().mcp_version}"))


def _skip_unless_spoken(dialect: Dialect | None) -> None:
    """A pinned dialect the installed mcp cannot speak skips the test, saying so (not a setup error)."""
    if dialect is None:
        return
    from ._detect import sdk_info
    from ._testkit.matrix import dialects

    spoken = dialects()
    if dialect not in spoken:
        pytest.skip(
            f"mcp {sdk_info().mcp_version} cannot speak the {dialect} task dialect "
            f"(it speaks {', '.join(spoken) or 'none'}, as client and server)"
        )


__all__ = [
    "MAJOR_MARKERS",
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
    "pytest_collection_modifyitems",
    "pytest_configure",
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
    """A negotiated ``ClientSession`` with the library's settings to ``mcp_tasks_server`` in memory."""
    _skip_unless_spoken(mcp_tasks_dialect)
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
    _skip_unless_spoken(mcp_tasks_dialect)
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
    _skip_unless_spoken(mcp_tasks_dialect)
    async with connect_http(mcp_tasks_http_url, dialect=mcp_tasks_dialect) as session:
        yield session
