"""A PostgreSQL store that cannot be used is refused in one line, exit 2, before anything listens or
is written (docs/deploy.md, "PostgreSQL"): real ``example-server`` processes on the session's real
cluster (and a real streaming standby of it).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest
from tests.postgres_server import NO_CREATE_USER, PASSWORD_USER, PostgresServer, postgres_server

from .test_startup_refusals import closed_port, serve_refusal


def _database(cluster: PostgresServer) -> str:
    """A new, empty database on the cluster (owned by its superuser), by name."""
    name = f"r_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(cluster.url(database="postgres"), autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE {name}")  # pyright: ignore[reportArgumentType]
    return name


def _tables(cluster: PostgresServer, database: str) -> list[str]:
    """Every table outside PostgreSQL's own schemas, as ``schema.table``: what a refusal must not write."""
    with psycopg.connect(cluster.url(database=database)) as connection:
        rows = connection.execute(
            "SELECT schemaname || '.' || tablename FROM pg_tables"
            " WHERE schemaname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1"
        ).fetchall()
        schemas = connection.execute(
            "SELECT nspname FROM pg_namespace WHERE nspname = 'mcp_tasks'"
        ).fetchall()
    return [str(row[0]) for row in rows] + [f"schema {row[0]}" for row in schemas]


def _said_once(line: str, url: str) -> None:
    assert line.startswith(f"mcp-tasks-compat: cannot use the task store {url}: "), line
    assert line.count(url) == 1, line


def test_an_unreachable_server_is_refused() -> None:
    url = f"postgresql://postgres@127.0.0.1:{closed_port()}/tasks"
    line = serve_refusal(url)
    _said_once(line, url)
    assert "it does not answer (" in line, line
    assert "start PostgreSQL, or check the URL" in line, line


def test_bad_credentials_are_refused_without_the_password(postgres_cluster: PostgresServer) -> None:
    url = postgres_cluster.url(PASSWORD_USER, "wrong-password")
    line = serve_refusal(url)
    shown = postgres_cluster.url(PASSWORD_USER, "***")
    _said_once(line, shown)
    assert "wrong-password" not in line, line
    assert "refused the credentials" in line, line
    assert "password authentication failed" in line, line


def test_a_user_who_may_not_create_the_schema_is_refused_and_nothing_is_written(
    postgres_cluster: PostgresServer,
) -> None:
    database = _database(postgres_cluster)
    url = postgres_cluster.url(NO_CREATE_USER, database=database)
    line = serve_refusal(url)
    _said_once(line, url)
    assert "refused to create the store's schema 'mcp_tasks'" in line, line
    assert f"GRANT CREATE ON DATABASE {database} TO {NO_CREATE_USER}" in line, line
    assert _tables(postgres_cluster, database) == []


def test_a_foreign_table_in_the_schema_is_refused_and_left_as_it_was(
    postgres_cluster: PostgresServer,
) -> None:
    database = _database(postgres_cluster)
    with psycopg.connect(postgres_cluster.url(database=database), autocommit=True) as connection:
        connection.execute("CREATE SCHEMA mcp_tasks")
        connection.execute("CREATE TABLE mcp_tasks.tasks (id serial PRIMARY KEY, title text)")
        connection.execute("INSERT INTO mcp_tasks.tasks (title) VALUES ('buy milk')")
    url = postgres_cluster.url(database=database)
    line = serve_refusal(url)
    _said_once(line, url)
    assert "it has tables of another application in the schema 'mcp_tasks' (tasks)" in line, line
    assert _tables(postgres_cluster, database) == ["mcp_tasks.tasks", "schema mcp_tasks"]
    with psycopg.connect(url) as connection:
        assert connection.execute("SELECT title FROM mcp_tasks.tasks").fetchall() == [("buy milk",)]


def test_a_newer_schema_is_refused_by_name(postgres_cluster: PostgresServer) -> None:
    from mcp_tasks_compat._engine.stores.postgres_schema import layout_statements

    database = _database(postgres_cluster)
    url = postgres_cluster.url(database=database)
    with psycopg.connect(url, autocommit=True) as connection:
        for statement in layout_statements("mcp_tasks"):
            connection.execute(statement)  # pyright: ignore[reportArgumentType]
        connection.execute("UPDATE mcp_tasks.store_meta SET value = '99' WHERE key = 'schema'")
    line = serve_refusal(url)
    _said_once(line, url)
    assert "holds task-store schema 99" in line, line
    assert "this one reads up to 1" in line, line
    assert "pip install -U 'mcp-tasks-compat[postgres]'" in line, line


@pytest.fixture
def standby(postgres_cluster: PostgresServer) -> Iterator[PostgresServer]:
    with postgres_server(standby_of=postgres_cluster.port) as server:
        yield server


def test_a_read_only_standby_is_refused(standby: PostgresServer) -> None:
    url = standby.url()
    line = serve_refusal(url)
    _said_once(line, url)
    assert "it is a read-only standby (pg_is_in_recovery() is true)" in line, line
    assert "point the store at the primary" in line, line
