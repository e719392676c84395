"""The stores every contract test runs against, and on which event loops.

``STORE_KINDS`` lists the stores; ``make_store`` builds a fresh, unopened one (a durable store on
a new file or database each time; ``layered``: a SQLite file behind the engine's store layer with
its health and metrics hooks, which must change nothing a store answers); ``BACKENDS`` says which
anyio backends a store runs on (a store driven through worker threads works on trio too; a client
library tied to asyncio does not); ``HAS_LEASES`` whether it reports lost leases (one process
never loses its own runs). Each test that uses ``store`` or ``store_factory`` runs once per
(kind, backend) pair.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from mcp_tasks_compat._engine.observed import MetricsHook, store_kind
from mcp_tasks_compat._engine.outage import HealthHook, StoreHealth
from mcp_tasks_compat._engine.stores import InMemoryTaskStore, SqliteTaskStore, TaskStore
from mcp_tasks_compat._engine.stores.delegating import DelegatingStore

STORE_KINDS = ["memory", "sqlite", "redis", "postgres", "layered"]
BACKENDS: dict[str, tuple[str, ...]] = {
    "memory": ("asyncio",),
    "sqlite": ("asyncio", "trio"),
    "redis": ("asyncio",),  # redis-py is asyncio-only (the store refuses trio, tested on its own)
    "postgres": ("asyncio",),  # psycopg's async connections are asyncio-only (refused as Redis)
    "layered": ("asyncio",),  # the layer awaits what it hands on: sqlite's trio run covers the backend
}
HAS_LEASES: dict[str, bool] = {
    "memory": False,
    "sqlite": True,
    "redis": True,
    "postgres": True,
    "layered": True,
}

StoreFactory = Callable[[], TaskStore]


def make_store(kind: str, folder: Path, server_url: str | None = None) -> TaskStore:
    """A new, unopened store of ``kind`` whose data lives under ``folder`` (on disk), under a key
    prefix of its own (on the session's redis-server) or in a schema of its own (on the session's
    PostgreSQL cluster); ``server_url`` is that server's."""
    if kind == "memory":
        return InMemoryTaskStore()
    if kind == "sqlite":
        return SqliteTaskStore(folder / "tasks.db")
    if kind == "layered":
        inner = SqliteTaskStore(folder / "tasks.db")
        return DelegatingStore(
            inner, [HealthHook(StoreHealth(inner.describe)), MetricsHook(store_kind(inner))]
        )
    if kind == "redis":
        from mcp_tasks_compat._engine.stores.redis import RedisTaskStore

        assert server_url is not None
        return RedisTaskStore(server_url, prefix=f"contract-{uuid.uuid4().hex}:")
    if kind == "postgres":
        from mcp_tasks_compat._engine.stores.postgres import PostgresTaskStore

        assert server_url is not None
        return PostgresTaskStore(server_url, schema=f"contract_{uuid.uuid4().hex[:16]}")
    raise AssertionError(f"no factory for store kind {kind!r}")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "store_kind" in metafunc.fixturenames:
        cases = [(kind, backend) for kind in STORE_KINDS for backend in BACKENDS[kind]]
        metafunc.parametrize(
            ("store_kind", "anyio_backend"), cases, ids=[f"{kind}-{backend}" for kind, backend in cases]
        )


@pytest.fixture
def store_factory(
    store_kind: str,
    anyio_backend: str,
    tmp_path_factory: pytest.TempPathFactory,
    request: pytest.FixtureRequest,
) -> StoreFactory:
    """Each call: a new unopened store of this test's kind, on a folder (or key prefix) of its own."""
    del anyio_backend  # parametrized with the kind; requested so that it is this test's
    server_fixture = {"redis": "redis_url", "postgres": "postgres_url"}.get(store_kind)
    server_url: str | None = request.getfixturevalue(server_fixture) if server_fixture else None
    serial = itertools.count()
    return lambda: make_store(store_kind, tmp_path_factory.mktemp(f"{store_kind}-{next(serial)}"), server_url)


@pytest.fixture
async def store(store_factory: StoreFactory) -> AsyncIterator[TaskStore]:
    opened = store_factory()
    await opened.open()
    try:
        yield opened
    finally:
        await opened.close()


@pytest.fixture
def store_has_leases(store_kind: str) -> bool:
    return HAS_LEASES[store_kind]
