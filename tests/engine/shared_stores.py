"""One shared store (a SQLite file, a key prefix on the session's redis-server, a schema on the
session's PostgreSQL cluster), a store object per call: what two engines standing for two processes
open (tests/engine/test_fencing.py, test_workers.py)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from mcp_tasks_compat._engine.stores import SqliteTaskStore, TaskStore
from mcp_tasks_compat._engine.stores.redis import RedisTaskStore

StoreMaker = Callable[[], TaskStore]

SHARED_KINDS = ["sqlite", "redis", "postgres"]


def shared_store_maker(
    request: pytest.FixtureRequest, tmp_path: Path, *, prefix: str, busy_timeout: float = 5.0
) -> StoreMaker:
    """For ``request.param`` (a :data:`SHARED_KINDS` kind): each call a new store object on one store."""
    if request.param == "sqlite":
        path = tmp_path / "tasks.db"
        return lambda: SqliteTaskStore(path, busy_timeout=busy_timeout)
    if request.param == "postgres":
        from mcp_tasks_compat._engine.stores.postgres import PostgresTaskStore

        postgres_url: str = request.getfixturevalue("postgres_url")
        schema = f"{prefix.replace('-', '_')}_{uuid.uuid4().hex[:12]}"
        return lambda: PostgresTaskStore(postgres_url, schema=schema)
    redis_url: str = request.getfixturevalue("redis_url")
    unique = f"{prefix}-{uuid.uuid4().hex[:12]}:"
    return lambda: RedisTaskStore(redis_url, prefix=unique)
