"""The Redis store's one start-up warning when redis-server keeps nothing on disk.

Against real redis-servers: one without persistence (``appendonly no``, ``save ''``), one with an
append-only file, one with RDB snapshots only, and one whose ``CONFIG`` an ACL forbids.
"""

from __future__ import annotations

import logging
import tempfile
import uuid

import pytest
from tests.redis_server import redis_server

from mcp_tasks_compat._engine.stores.redis import RedisTaskStore

pytestmark = pytest.mark.anyio

LOGGER = "mcp_tasks_compat.engine"


def persistence_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.name == LOGGER and "keeps its data only in memory" in record.getMessage()
    ]


async def open_and_close(url: str) -> None:
    store = RedisTaskStore(url, prefix=f"test-{uuid.uuid4().hex[:12]}:")
    await store.open()
    await store.close()


async def test_a_redis_without_persistence_is_named_once_with_what_an_outage_loses(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    with redis_server() as server:
        await open_and_close(server.url)
    (warning,) = persistence_warnings(caplog)
    assert warning.startswith(f"the Redis task store {server.url} keeps its data only in memory")
    assert "appendonly no" in warning
    assert "loses every task" in warning
    assert "finished results not yet fetched" in warning
    assert "appendonly yes" in warning  # the fix


async def test_a_redis_with_an_append_only_file_opens_without_the_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    with tempfile.TemporaryDirectory() as data_dir, redis_server(data_dir) as server:
        await open_and_close(server.url)
    assert persistence_warnings(caplog) == []


async def test_a_redis_with_snapshots_only_opens_without_the_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    with tempfile.TemporaryDirectory() as data_dir, redis_server(data_dir) as server:
        store = RedisTaskStore(server.url)
        await store.open()
        try:  # from an append-only file to RDB snapshots alone (in the test's folder)
            await store.connection().config_set("save", "3600 1")  # pyright: ignore[reportUnknownMemberType]
            await store.connection().config_set("appendonly", "no")  # pyright: ignore[reportUnknownMemberType]
        finally:
            await store.close()
        caplog.clear()
        await open_and_close(server.url)
    assert persistence_warnings(caplog) == []


async def test_a_user_whom_an_acl_denies_config_opens_without_a_word_of_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Managed services forbid ``CONFIG``: the store opens and serves, saying nothing it cannot know."""
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    with redis_server() as server:
        admin = RedisTaskStore(server.url)
        await admin.open()
        try:
            await admin.connection().execute_command(  # pyright: ignore[reportUnknownMemberType]
                "ACL", "SETUSER", "tasks", "on", ">secret", "~*", "&*", "+@all", "-config"
            )
        finally:
            await admin.close()
        caplog.clear()
        limited = RedisTaskStore(f"redis://tasks:secret@127.0.0.1:{server.port}/0")
        await limited.open()
        try:
            assert await limited.get("missing") is None  # it serves
        finally:
            await limited.close()
    assert persistence_warnings(caplog) == []
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
