"""longtools' tests use the mcp-tasks-compat testing kit's fixtures (its pytest plugin loads itself).

Two overrides point the kit at longtools: ``mcp_tasks_server`` (the in-memory server) and
``mcp_tasks_server_command`` (the stdio subprocess).
"""

from __future__ import annotations

import sys

import pytest
from longtools import build_app

from mcp_tasks_compat.testing import dialects


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def mcp_tasks_server() -> object:
    return build_app()


@pytest.fixture
def mcp_tasks_server_command() -> list[str]:
    return [sys.executable, "-m", "longtools"]


@pytest.fixture(params=dialects())
def mcp_tasks_dialect(request: pytest.FixtureRequest) -> str:
    """Every test runs once in each task dialect the installed mcp speaks."""
    return str(request.param)
