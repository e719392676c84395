"""Why a lost run failed, said as far as this host knows it (issue 41, item 8).

A run is lost when its lease runs out. Its process may have stopped, or may be alive and cut off
from the store (paused, or partitioned): the sweeper's reason used to be "the server stopped while
this task ran" either way. Two engines on one real store (a SQLite file; a real redis-server) stand
for two replicas, as in ``test_fencing.py``: replica A holds a run whose lease it never renews (its
background does not run: alive, but cut off), replica B's sweeper fails it.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest
from tests.engine.shared_stores import SHARED_KINDS, StoreMaker, shared_store_maker

from mcp_tasks_compat._engine import TaskEngine
from mcp_tasks_compat._engine.expiry import SERVER_STOPPED, WORKER_STOPPED, lost_run_reasons
from mcp_tasks_compat._engine.stores import InMemoryTaskStore
from mcp_tasks_compat.core._model import TaskStatus, format_timestamp
from mcp_tasks_compat.dialects import DIALECT_2026_07_28

pytestmark = pytest.mark.anyio

LEASE_S = 0.6
BOUND_S = 20.0
"""A bound, not a wait: every wait below ends on an event."""


@pytest.fixture(params=SHARED_KINDS)
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> StoreMaker:
    return shared_store_maker(request, tmp_path, prefix="lost-reasons")


async def test_a_run_cut_off_from_the_store_while_alive_fails_saying_so(make_store: StoreMaker) -> None:
    cut_off, other = (TaskEngine(store=make_store(), lease_s=LEASE_S) for _ in range(2))
    await cut_off.open()
    record = await cut_off.create(
        dialect=DIALECT_2026_07_28, owner=None, tool_name="build", ttl_ms=None, arguments={}
    )

    async def forever() -> Mapping[str, Any]:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")  # pragma: no cover

    with anyio.fail_after(BOUND_S):
        # A's run in a group of its own; A's background (its lease renewals) never runs.
        async with other.hosted(), anyio.create_task_group() as runs:
            cut_off.start(record, forever, runs)
            task = await other.reader.wait_terminal(record.task.task_id, None)
            runs.cancel_scope.cancel()
        await other.store.close()
    await cut_off.store.close()
    assert task.status is TaskStatus.FAILED
    assert task.status_message is not None
    assert task.status_message.startswith(
        "the server running this task could not reach the task store while it ran (alive, but paused"
        " or partitioned; its lease ran out at "
    ), task.status_message
    assert SERVER_STOPPED not in task.status_message


def _gone_pid() -> int:
    """The pid of a process of this host that has ended (and was reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


async def test_the_reason_says_what_this_host_knows_of_the_runner() -> None:
    engine = TaskEngine(store=InMemoryTaskStore())
    record = await engine.create(
        dialect=DIALECT_2026_07_28, owner=None, tool_name="build", ttl_ms=None, arguments={}
    )
    assert record.state.lease_until is None
    ran = record.state.evolve(lease_until=record.state.task.created_at)
    at = format_timestamp(record.state.task.created_at)
    here = socket.gethostname()
    gone = ran.evolve(runner=f"{here}/{_gone_pid()}/0a1b2c3d")
    elsewhere = ran.evolve(runner="another-host/42/0a1b2c3d")

    assert lost_run_reasons(gone, lease_ran_out=True) == (
        f"{SERVER_STOPPED} (its lease ran out at {at})",
        f"its server stopped (its lease ran out at {at})",
    )
    assert lost_run_reasons(elsewhere, lease_ran_out=True) == (
        f"the server running this task stopped, or could not reach the task store, while it ran"
        f" (its lease ran out at {at})",
        f"its server stopped or could not reach the task store (its lease ran out at {at})",
    )
    on_worker = elsewhere.evolve(run_on="workers")
    assert lost_run_reasons(on_worker, lease_ran_out=True)[1] == (
        f"its worker stopped or could not reach the task store (its lease ran out at {at})"
    )
    # At a server's start the runner is known gone (a process of this host): no lease in it.
    assert lost_run_reasons(gone.evolve(run_on="workers"), lease_ran_out=False) == (
        WORKER_STOPPED,
        "its worker stopped",
    )
