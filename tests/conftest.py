"""Shared test configuration: major markers that skip with a reason, the anyio backend."""

from __future__ import annotations

import importlib.metadata

import pytest
from packaging.version import Version

try:
    MCP_VERSION: Version | None = Version(importlib.metadata.version("mcp"))
except importlib.metadata.PackageNotFoundError:  # pragma: no cover - the suite needs mcp
    MCP_VERSION = None

MCP_MAJOR = MCP_VERSION.major if MCP_VERSION is not None else None


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def pytest_report_header(config: pytest.Config) -> str:
    return f"mcp {MCP_VERSION} (major {MCP_MAJOR})"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for major in (1, 2):
            if item.get_closest_marker(f"mcp{major}") and MCP_MAJOR != major:
                item.add_marker(
                    pytest.mark.skip(reason=f"needs mcp {major}.x; installed mcp {MCP_VERSION}")
                )
