"""A Redis outage in a server's log: one line when the store goes away, one when it is back with
what failed meanwhile, per replica; no traceback (docs/reliability.md; issue 33, item 6).

Real processes: two ``example-server`` replicas over HTTP on a real redis-server (its data kept on
disk across the outage), stopped for a few seconds while one replica's tasks end and report
status, then started again. Each replica's stderr is read whole once it has exited: the log is
what an operator would read. The outage is a span of time, so it is timed; every other wait is on
an event or bounded.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from tests.redis_server import redis_server

from mcp_tasks_compat._testkit.sessions import connect_http
from mcp_tasks_compat.client import TaskRun, call_tool, start_tool
from mcp_tasks_compat.testing import HttpServerProcess

from ._procs import NEWEST_DIALECT, servers

pytestmark = pytest.mark.anyio

BOUND_S = 90.0
TASKS = 4
RUN_S = 1.0
"""Each tool runs this long after its task is acknowledged: it reports and ends inside the outage."""
OUTAGE_S = 5.0
"""How long Redis is away: the notifier resubscribes, the outcomes are retried, many times over."""


async def _through_the_outage(
    url_a: str, url_b: str, stop: Callable[[], None], start: Callable[[], None]
) -> None:
    # A session on each replica through the outage: on mcp 1.x a server's background (the
    # sweeper, the notifier) runs while a session does.
    async with (
        connect_http(url_a, dialect=NEWEST_DIALECT) as session,
        connect_http(url_b, dialect=NEWEST_DIALECT) as other,
    ):
        runs: list[TaskRun] = []
        for index in range(TASKS):
            arguments = {"text": f"task-{index}", "seconds": RUN_S, "steps": 3}
            runs.append(await start_tool(session, "slow_echo", arguments))
        went_at = time.monotonic()
        await anyio.to_thread.run_sync(stop)
        await anyio.sleep(max(0.0, OUTAGE_S - (time.monotonic() - went_at)))  # the outage's length
        await anyio.to_thread.run_sync(start)
        for index, run in enumerate(runs):  # each outcome was retried until Redis took it
            result = await run.result()
            assert [block.text for block in result.content] == [f"task-{index}"]
        # The other replica ran nothing; a task made there is a write that lands, so its log says
        # "back" before the call is answered.
        after = await call_tool(
            other, "slow_echo", {"text": "after", "seconds": 0.1, "steps": 1}, mode="task"
        )
        assert [block.text for block in after.content] == ["after"]


def _outage_lines(server: HttpServerProcess, store: str) -> tuple[list[str], list[str]]:
    """The replica's "went away" and "back" lines (its log once it has exited)."""
    lines = server.stderr_lines
    assert not [line for line in lines if "Traceback" in line], "\n".join(lines)
    away = [line for line in lines if line.startswith(f"task store {store} unreachable (")]
    back = [line for line in lines if line.startswith(f"task store {store} back after ")]
    return away, back


async def test_a_redis_outage_is_two_log_lines_per_replica(tmp_path: Path) -> None:
    with redis_server(data_dir=str(tmp_path)) as redis, servers() as started:
        (a, url_a), (b, url_b) = await started.start("--store", redis.url, count=2)
        with anyio.fail_after(BOUND_S):
            await _through_the_outage(url_a, url_b, redis.stop, redis.start)
        for server in (a, b):  # SIGTERM, then its stderr read to the end
            await anyio.to_thread.run_sync(server.stop)
    for name, server in (("the replica that ran the tasks", a), ("the other replica", b)):
        away, back = _outage_lines(server, redis.url)
        log = "\n".join(server.stderr_lines)
        assert len(away) == 1, f"{name}:\n{log}"
        assert "ConnectionError" in away[0], away[0]
        assert away[0].endswith("until it answers, what fails is counted, not logged"), away[0]
        assert len(back) == 1, f"{name}:\n{log}"
        found = re.fullmatch(r".* back after (\d+\.\d) s; (\d+) calls? failed meanwhile", back[0])
        assert found is not None, back[0]
        assert float(found[1]) >= 1.0, back[0]  # the outage, not a blip
        assert int(found[2]) >= 2, back[0]  # the notifier alone fails once a second
        others = [line for line in server.stderr_lines if line not in away + back]
        assert len(others) <= 3, f"{name}: besides the outage's two lines:\n{log}"
