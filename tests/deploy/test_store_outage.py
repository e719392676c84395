"""The store goes away while tasks end, then comes back: nothing acknowledged is lost, the server
never dies of it and heals by itself (docs/deploy.md, docs/reliability.md; issue 25, point 1).

Real processes: ``example-server`` over HTTP on a real redis-server (its data kept on disk across
the outage, as a production Redis with persistence keeps it) or a real SQLite file that this test
holds locked past the store's busy timeout. The outage is a span of time, so it is timed; every
other wait is on an event or bounded.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from tests.redis_server import redis_server

from mcp_tasks_compat import PeerProtocolError
from mcp_tasks_compat._testkit.sessions import connect_http
from mcp_tasks_compat.client import TaskRun, call_tool, start_tool

from ._procs import NEWEST_DIALECT, servers

pytestmark = pytest.mark.anyio

BOUND_S = 60.0
TASKS = 5
RUN_S = 1.0
"""Each tool runs this long after its task is acknowledged: it ends inside the outage."""
OUTAGE_S = 3.0
"""How long Redis is away; longer than every run, so every outcome meets the outage."""
LOCKED_S = 7.0
"""How long the SQLite file stays locked: past the store's 5 s busy timeout, so writes fail."""


async def _start_tasks(session: Any) -> list[TaskRun]:
    runs = []
    for index in range(TASKS):
        # Two steps: the tool reports a status inside the outage, which must not fail the work.
        arguments = {"text": f"task-{index}", "seconds": RUN_S, "steps": 2}
        runs.append(await start_tool(session, "slow_echo", arguments))
    return runs


async def _through_an_outage(
    url: str,
    go_away: Callable[[], None],
    come_back: Callable[[], None],
    *,
    outage_s: float,
    reads_refused: bool,
) -> None:
    async with connect_http(url, dialect=NEWEST_DIALECT) as session:
        runs = await _start_tasks(session)  # acknowledged: the server answered with each task
        # Still working whenever the outage starts, however long the starts took on a busy machine
        # (a task that ended in this process within the last second is read without the store).
        probe = await start_tool(session, "slow_echo", {"text": "probe", "seconds": 10 * BOUND_S, "steps": 1})
        went_at = time.monotonic()
        await anyio.to_thread.run_sync(go_away)

        # While the store is away: what needs it is refused with its message, what does not works.
        if reads_refused:
            with pytest.raises(PeerProtocolError) as refused:
                await probe.status()
            assert refused.value.jsonrpc_code is not None
        else:  # a locked SQLite file in WAL mode still serves reads
            assert await probe.status() is not None
        assert (await session.list_tools()).tools, "tools/list needs no store and must keep working"

        await anyio.sleep(max(0.0, outage_s - (time.monotonic() - went_at)))  # the outage's length
        await anyio.to_thread.run_sync(come_back)

        # Back: every acknowledged task reads its true end, on this session and a fresh one.
        for index, run in enumerate(runs):
            result = await run.result()
            assert [block.text for block in result.content] == [f"task-{index}"]
        after = await call_tool(
            session, "slow_echo", {"text": "after", "seconds": 0.1, "steps": 1}, mode="task"
        )
        assert [block.text for block in after.content] == ["after"]
        cancelled = await probe.cancel()
        assert cancelled is not None
    async with connect_http(url, dialect=NEWEST_DIALECT) as fresh:
        assert (await fresh.list_tools()).tools


async def test_redis_away_while_tasks_end_loses_nothing_and_heals(tmp_path: Path) -> None:
    with redis_server(data_dir=str(tmp_path)) as redis, servers() as started:
        server, url = await started.start_one("--store", redis.url)
        with anyio.fail_after(BOUND_S):
            await _through_an_outage(url, redis.stop, redis.start, outage_s=OUTAGE_S, reads_refused=True)
        assert server.running(), "the server died of its store"


def _lock_holder(path: Path) -> tuple[Callable[[], None], Callable[[], None]]:
    """Take the file's write lock in this process (as another writer would) and give it back."""
    held: list[sqlite3.Connection] = []

    def lock() -> None:
        connection = sqlite3.connect(path, isolation_level=None, timeout=10, check_same_thread=False)
        connection.execute("BEGIN EXCLUSIVE")
        held.append(connection)

    def unlock() -> None:
        connection = held.pop()
        connection.execute("ROLLBACK")
        connection.close()

    return lock, unlock


async def test_a_sqlite_file_locked_past_the_busy_timeout_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    lock, unlock = _lock_holder(path)
    with servers() as started:
        server, url = await started.start_one("--store", f"sqlite:///{path}")
        with anyio.fail_after(BOUND_S):
            await _through_an_outage(url, lock, unlock, outage_s=LOCKED_S, reads_refused=False)
        assert server.running(), "the server died of its store"
