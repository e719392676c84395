"""``store_from_url``: the URL forms ``store=`` and ``--store`` accept, and what the others get."""

from __future__ import annotations

import sys

import pytest

from mcp_tasks_compat._engine import InMemoryTaskStore, SqliteTaskStore, store_from_url
from mcp_tasks_compat._engine.stores.echo import shown_url
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


def test_postgres_without_its_extra_names_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mcp_tasks_compat._engine.stores.postgres", None)  # as if not installed
    for url in ("postgresql://ops:s3cret@db.internal:5432/tasks", "postgres://db.internal/tasks"):
        with pytest.raises(TaskStoreError, match=r"pip install 'mcp-tasks-compat\[postgres\]'") as refused:
            store_from_url(url)
        assert "s3cret" not in str(refused.value)


def test_postgres_urls_name_a_postgres_store() -> None:
    from mcp_tasks_compat._engine.stores.postgres import PostgresTaskStore

    store = store_from_url("postgresql://ops:s3cret@db.internal:5432/tasks")
    assert isinstance(store, PostgresTaskStore)
    assert store.describe == "postgresql://ops:***@db.internal:5432/tasks"
    assert isinstance(store_from_url("postgres://db.internal/tasks"), PostgresTaskStore)


@pytest.mark.parametrize(
    "url",
    [
        "",
        "memory",
        "memory://",
        "sqlite://tasks.db",
        "sqlite:///",
        "sqlite:///tasks.db?mode=ro",
        "sqlite:///tasks.db#frag",
        "sqlite:///tasks.db#",
        "mysql://db/x",
    ],
)
def test_other_forms_are_refused_with_the_accepted_ones(url: str) -> None:
    with pytest.raises(ValueError, match="sqlite:///"):
        store_from_url(url)


@pytest.mark.parametrize(
    ("url", "found"),
    [
        ("sqlite:///tasks.db#frag", "the fragment '#frag'"),
        ("sqlite:////srv/tasks.db?mode=ro#x", "the query '?mode=ro#x'"),
        ("sqlite:///tasks.db#a?b", "the fragment '#a?b'"),
    ],
)
def test_a_query_or_fragment_is_named_not_opened_as_part_of_the_file_name(url: str, found: str) -> None:
    with pytest.raises(ValueError, match="no query or fragment") as refused:
        store_from_url(url)
    assert found in str(refused.value)


def test_a_refused_url_is_repeated_printable_and_without_its_password() -> None:
    with pytest.raises(ValueError, match="not a task store URL") as refused:
        store_from_url("mysql://ops:s3cret@db\x1b[2J/tasks\u202e")
    message = str(refused.value)
    for hidden in ("s3cret", "\x1b", "\u202e"):
        assert hidden not in message
    for shown in ("ops:***@", "\\x1b[2J", "\\u202e"):
        assert shown in message


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://ops:s3cret@10.0.0.5:6380/2", "redis://ops:***@10.0.0.5:6380/2"),
        (
            "redis://ops:s3cret@10.0.0.5:99999/2",
            "redis://ops:***@10.0.0.5:99999/2",
        ),  # a port urlsplit refuses
        ("redis://ops:s3cret@[::1/0", "redis://ops:***@[::1/0"),  # a bad IPv6 host
        ("sqlite:///a\u202eb\nc.db", "sqlite:///a\\u202eb\\nc.db"),
    ],
)
def test_a_shown_url_has_no_password_and_no_control_character(url: str, shown: str) -> None:
    assert shown_url(url) == shown
