"""``store_from_url``: the URL forms ``store=`` and ``--store`` accept, and what the others get."""

from __future__ import annotations

import sys

import pytest

from mcp_tasks_compat._engine import InMemoryTaskStore, SqliteTaskStore, store_from_url
from mcp_tasks_compat.errors import TaskStoreError


def test_memory() -> None:
    assert isinstance(store_from_url("memory:"), InMemoryTaskStore)


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("sqlite:///tasks.db", "tasks.db"),
        ("sqlite:///var/tasks.db", "var/tasks.db"),
        ("sqlite:////srv/app/tasks.db", "/srv/app/tasks.db"),
    ],
)
def test_sqlite_urls_are_sqlalchemys_form(url: str, path: str) -> None:
    store = store_from_url(url)
    assert isinstance(store, SqliteTaskStore)
    assert store.path == path
    assert store.describe == url


def test_redis_without_its_extra_names_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mcp_tasks_compat._engine.stores.redis", None)  # as if not installed
    with pytest.raises(TaskStoreError, match=r"pip install 'mcp-tasks-compat\[redis\]'"):
        store_from_url("redis://localhost:6379/0")
    with pytest.raises(TaskStoreError, match="redis"):
        store_from_url("rediss://cache.internal:6380/2")


@pytest.mark.parametrize(
    "url",
    [
        "",
        "memory",
        "memory://",
        "sqlite://tasks.db",
        "sqlite:///",
        "sqlite:///tasks.db?mode=ro",
        "postgres://db/x",
    ],
)
def test_other_forms_are_refused_with_the_accepted_ones(url: str) -> None:
    with pytest.raises(ValueError, match="sqlite:///"):
        store_from_url(url)
