"""Several replicas on one Redis: a task created through replica A is read, answered and cancelled
through replica B, and B fails A's runs when A dies (docs/deploy.md, "Several replicas on Redis").

2026-07-28 task ids are handles any replica serves (mcp 2.x only: mcp 1.x speaks 2025-11-25
alone); 2025-11-25 tasks stay bound to the session that created them, on both majors.
"""

from __future__ import annotations

import re
import time
from datetime import datetime, timedelta, timezone

import anyio
import pytest
from tests.answering import Answering

from mcp_tasks_compat import TaskNotFoundError
from mcp_tasks_compat._client_api import session_kwargs
from mcp_tasks_compat._testkit.sessions import connect_http
from mcp_tasks_compat.client import resume, start_tool
from mcp_tasks_compat.core._model import Task, TaskStatus, parse_timestamp
from mcp_tasks_compat.dialects import DIALECT_2025_11_25, DIALECT_2026_07_28

from ._procs import LOST_RUN, Watch, following, fresh_redis_db, is_, kill, servers, until_status
from .conftest import REPLICA_LEASE_S, Replicas

pytestmark = pytest.mark.anyio

BOUND_S = 60.0
"""A bound on every wait, not its expected length (the waits end on events)."""
RENEWAL_S = REPLICA_LEASE_S / 3
"""The replicas re-read the tasks they run this often: a cancel that reaches A sooner came through
Redis pub/sub (docs/deploy.md: the replica running the work stops it at once)."""
LEASE_S = 1.5
SWEEP_S = 2.0
"""How late after the lease ran out the surviving replica's sweeper may fail the run, on its own
clock (docs/deploy.md: one sweep, at most a second; plus slack)."""
NEW = DIALECT_2026_07_28
LONG = {"text": "long", "seconds": 60, "steps": 300}  # a status step every 0.2 s


def _step(task: Task) -> int | None:
    found = re.fullmatch(r"step (\d+)/\d+", task.status_message or "")
    return int(found.group(1)) if found else None


@pytest.mark.mcp2
async def test_replica_b_reads_and_cancels_a_task_replica_a_runs(replicas: Replicas) -> None:
    with anyio.fail_after(BOUND_S):
        async with (
            connect_http(replicas.url_a, dialect=NEW) as session_a,
            connect_http(replicas.url_b, dialect=NEW) as session_b,
        ):
            via_a, via_b = Watch(), Watch()
            run_a = await start_tool(session_a, "slow_echo", LONG, on_status=via_a)
            assert run_a.task_id is not None
            run_b = await resume(session_b, run_a.task_id, on_status=via_b)
            async with following(run_a), following(run_b):
                first = await via_b.until(lambda t: (_step(t) or 0) >= 1, within=BOUND_S)
                later = await via_b.until(lambda t: (_step(t) or 0) > (_step(first) or 0), within=BOUND_S)
                assert first.status is later.status is TaskStatus.WORKING

                asked = time.monotonic()
                cancelled = await run_b.cancel()
                assert cancelled is not None
                assert cancelled.status is TaskStatus.CANCELLED, cancelled
                seen_by_a = await via_a.until(is_(TaskStatus.CANCELLED), within=BOUND_S)
                reached_a_s = time.monotonic() - asked
            # Once cancelled, the task no longer changes when read through A: its work reports no
            # more steps (a status message set by live work would show here as a newer update).
            again = await run_a.status()
    assert again is not None
    assert again.status is TaskStatus.CANCELLED
    assert (again.status_message, again.last_updated_at) == (
        seen_by_a.status_message,
        seen_by_a.last_updated_at,
    )
    assert not [
        t
        for t in via_a.seen
        if t.status is TaskStatus.WORKING and t.last_updated_at > seen_by_a.last_updated_at
    ]
    assert BOUND_S < RENEWAL_S
    assert reached_a_s < RENEWAL_S


@pytest.mark.mcp2
async def test_an_answer_given_through_replica_b_reaches_the_work_on_replica_a(replicas: Replicas) -> None:
    answering = Answering()
    options = {**session_kwargs(dialect=NEW), "elicitation_callback": answering}
    with anyio.fail_after(BOUND_S):
        async with (
            connect_http(replicas.url_a, dialect=NEW) as session_a,
            connect_http(replicas.url_b, dialect=NEW, session_options=options) as session_b,
        ):
            run_a = await start_tool(session_a, "ask", {"question": "Your name?"})
            assert run_a.task_id is not None
            # B's client sees input_required, asks its callback and sends the answer with
            # tasks/update to B; A, which runs the tool, delivers it to the waiting elicit().
            result = await (await resume(session_b, run_a.task_id)).result()
            through_a = await run_a.status()
    assert [block.text for block in result.content] == ["Ada"]
    assert answering.asked == ["Your name?"]
    assert through_a is not None
    assert through_a.status is TaskStatus.COMPLETED


async def test_a_2025_11_25_task_stays_with_the_session_that_created_it(replicas: Replicas) -> None:
    with anyio.fail_after(BOUND_S):
        async with (
            connect_http(replicas.url_a, dialect=DIALECT_2025_11_25) as session_a,
            connect_http(replicas.url_b, dialect=DIALECT_2025_11_25) as session_b,
            await start_tool(session_a, "slow_echo", LONG) as run_a,  # cancelled on leaving
        ):
            assert run_a.task_id is not None
            own = await run_a.status()
            assert own is not None
            assert own.status is TaskStatus.WORKING
            # Served from the same Redis, yet refused: the task belongs to session A.
            with pytest.raises(TaskNotFoundError, match="keeps an unauthenticated task to the session"):
                await (await resume(session_b, run_a.task_id)).status()


@pytest.mark.mcp2
async def test_when_replica_a_dies_replica_b_fails_its_run_within_the_lease(redis_url: str) -> None:
    store = fresh_redis_db(redis_url)
    with servers() as started:
        (server_a, url_a), (_b, url_b) = await started.start(
            "--store", store, "--lease-s", str(LEASE_S), count=2
        )
        with anyio.fail_after(BOUND_S):
            async with connect_http(url_a, dialect=NEW) as session_a:
                run_a = await start_tool(session_a, "slow_echo", LONG)
                assert run_a.task_id is not None
                kill(server_a)
            killed_at = datetime.now(timezone.utc)
            async with connect_http(url_b, dialect=NEW) as session_b:
                run_b = await resume(session_b, run_a.task_id)
                # Polled: a dead replica announces nothing, and B's sweeper decides on its own
                # clock in another process.
                failed = await until_status(run_b, is_(TaskStatus.FAILED), within=BOUND_S)
    assert LOST_RUN in (failed.status_message or ""), failed
    # What the docs promise, read on the servers' clocks (this client's polls, slow on a busy
    # machine, are not part of it): A's lease ran out at most a lease after it died, and B failed
    # the run within a sweep of that.
    ran_out = re.search(r"its lease ran out at (\S+)\)", failed.status_message or "")
    assert ran_out is not None, failed
    lease_until = parse_timestamp(ran_out.group(1))
    assert lease_until <= killed_at + timedelta(seconds=LEASE_S)
    assert failed.last_updated_at - lease_until < timedelta(seconds=SWEEP_S)
