"""The stores every contract test runs against, and on which event loops.

``STORE_KINDS`` lists the stores; ``make_store`` builds a fresh, unopened one (a durable store on
a new file or database each time); ``BACKENDS`` says which anyio backends a store runs on (a
store driven through worker threads works on trio too; a client library tied to asyncio does
not); ``HAS_LEASES`` whether it reports lost leases (one process never loses its own runs). Each
test that uses ``store`` or ``store_factory`` runs once per (kind, backend) pair.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from mcp_tasks_compat._engine.sqlite_store import SqliteTaskStore
from mcp_tasks_compat._engine.store import InMemoryTaskStore, TaskStore

STORE_KINDS = ["memory", "sqlite"]
BACKENDS: dict[str, tuple[str, ...]] = {"memory": ("asyncio",), "sqlite": ("asyncio", "trio")}
HAS_LEASES: dict[str, bool] = {"memory": False, "sqlite": True}

StoreFactory = Callable[[], TaskStore]


def make_store(kind: str, folder: Path) -> TaskStore:
    """A new, unopened store of ``kind`` whose data lives under ``folder`` (if on disk)."""
    if kind == "memory":
        return InMemoryTaskStore()
    if kind == "sqlite":
        return SqliteTaskStore(folder / "tasks.db")
    raise AssertionError(f"no factory for store kind {kind!r}")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "store_kind" in metafunc.fixturenames:
        cases = [(kind, backend) for kind in STORE_KINDS for backend in BACKENDS[kind]]
        metafunc.parametrize(
            ("store_kind", "anyio_backend"), cases, ids=[f"{kind}-{backend}" for kind, backend in cases]
        )


@pytest.fixture
def store_factory(
    store_kind: str, anyio_backend: str, tmp_path_factory: pytest.TempPathFactory
) -> StoreFactory:
    """Each call: a new unopened store of this test's kind, on a folder of its own."""
    del anyio_backend  # parametrized with the kind; requested so that it is this test's
    serial = itertools.count()
    return lambda: make_store(store_kind, tmp_path_factory.mktemp(f"{store_kind}-{next(serial)}"))


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
