"""The operator's ``mcp-tasks-compat tasks`` command on a fleet's Redis store, without a session."""

from __future__ import annotations

import anyio
import pytest

from mcp_tasks_compat._testkit.sessions import connect_http
from mcp_tasks_compat.client import start_tool
from mcp_tasks_compat.core._model import TaskStatus

from ._procs import NEWEST_DIALECT, START_BOUND_S, Watch, following, is_, operator
from .conftest import Replicas

pytestmark = pytest.mark.anyio

CANCEL_REACHES_S = START_BOUND_S
"""A bound, not a wait: docs/deploy.md says the replica running the work hears the cancel through
Redis at once; the replicas' lease is long (conftest.REPLICA_LEASE_S), so no lease renewal re-reads
the task within this bound."""


async def test_the_operator_lists_and_cancels_a_task_a_replica_runs(replicas: Replicas) -> None:
    with anyio.fail_after(2 * START_BOUND_S):
        async with connect_http(replicas.url_a, dialect=NEWEST_DIALECT) as session_a:
            watch = Watch()
            run = await start_tool(
                session_a, "slow_echo", {"text": "op", "seconds": 60, "steps": 60}, on_status=watch
            )
            assert run.task_id is not None
            async with following(run):
                listed = await operator("list", "--store", replicas.store)
                rows = {row["task_id"]: row for row in listed["tasks"]}
                assert rows[run.task_id]["status"] == "working"
                assert rows[run.task_id]["tool"] == "slow_echo"
                assert rows[run.task_id]["dialect"] == NEWEST_DIALECT

                shown = await operator("cancel", run.task_id, "--store", replicas.store)
                assert shown["status"] == "cancelled"
                # A hears of the cancel through Redis and stops the work; its client sees it.
                seen = await watch.until(is_(TaskStatus.CANCELLED), within=CANCEL_REACHES_S)
    assert "cancelled by an operator" in (seen.status_message or ""), seen
