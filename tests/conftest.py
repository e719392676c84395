"""Shared test configuration: Hypothesis profiles, anyio backend, the session's redis-server
(``redis_url``) and PostgreSQL cluster (``postgres_url``).

The ``mcp1`` / ``mcp2`` markers (skip with the reason on the other major) come from the testing
kit's plugin, as they do downstream."""

from __future__ import annotations

import importlib.metadata
import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings
from packaging.version import Version
from tests.postgres_server import PostgresServer, postgres_server
from tests.redis_server import redis_server

# pytester: tests/kit runs downstream-style suites against the testing kit's plugin.
pytest_plugins = ["pytester"]

try:
    MCP_VERSION: Version | None = Version(importlib.metadata.version("mcp"))
except importlib.metadata.PackageNotFoundError:  # pragma: no cover - the suite needs mcp
    MCP_VERSION = None

MCP_MAJOR = MCP_VERSION.major if MCP_VERSION is not None else None

# Hypothesis profiles, chosen with HYPOTHESIS_PROFILE (nox sets "ci"):
#   default  - local runs: random, 100 examples (25 steps per state machine run), no deadline;
#   ci       - reproducible (derandomize, no example database) and bounded so each SDK session stays fast;
#   thorough - a long local hunt before a release.
settings.register_profile("default", deadline=None, stateful_step_count=25)
settings.register_profile(
    "ci",
    deadline=None,
    derandomize=True,
    database=None,
    max_examples=30,
    stateful_step_count=20,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.register_profile("thorough", deadline=None, max_examples=2_000, stateful_step_count=100)
HYPOTHESIS_PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "default")
settings.load_profile(HYPOTHESIS_PROFILE)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """A redis-server of this test session on a free loopback port (skips if none is installed).

    Tests sharing it keep apart with a key prefix of their own.
    """
    with redis_server() as server:
        yield server.url


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresServer]:
    """A PostgreSQL cluster of this test session on a free loopback port (skips if none is installed)."""
    with postgres_server() as server:
        yield server


@pytest.fixture(scope="session")
def postgres_url(postgres_cluster: PostgresServer) -> str:
    """The session cluster's database as its superuser (trusted on 127.0.0.1). Tests sharing it keep
    apart with a schema of their own (``PostgresTaskStore(url, schema=...)``)."""
    return postgres_cluster.url()


def pytest_report_header(config: pytest.Config) -> str:
    return f"mcp {MCP_VERSION} (major {MCP_MAJOR}); hypothesis profile {HYPOTHESIS_PROFILE}"
