"""2025-11-25 tasks after a restart (issue 25, point 3): an unauthenticated task is its session's,
so a new session cannot read it, unless the server opts in to ``unauthenticated_2025_scope=
"task_id"`` (whoever knows the id reads it, as on 2026-07-28). Real processes on a SQLite file,
the server killed (SIGKILL) and started again; both majors, in the 2025-11-25 dialect.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from mcp_tasks_compat import TaskNotFoundError
from mcp_tasks_compat._testkit.sessions import connect_http
from mcp_tasks_compat.client import resume, start_tool
from mcp_tasks_compat.core._model import TaskStatus
from mcp_tasks_compat.dialects import DIALECT_2025_11_25

from ._procs import Watch, following, is_, kill, servers

pytestmark = pytest.mark.anyio

BOUND_S = 60.0


async def _a_finished_task(url: str) -> str:
    async with connect_http(url, dialect=DIALECT_2025_11_25) as session:
        watch = Watch()
        run = await start_tool(
            session, "slow_echo", {"text": "kept", "seconds": 0.05, "steps": 1}, on_status=watch
        )
        async with following(run):
            await watch.until(is_(TaskStatus.COMPLETED), within=BOUND_S)
        assert run.task_id is not None
        return run.task_id


@pytest.mark.parametrize("scope", ["session", "task_id"])
async def test_a_new_session_after_a_restart_reads_the_task_only_when_opted_in(
    tmp_path: Path, scope: str
) -> None:
    options = ("--store", f"sqlite:///{tmp_path / 'tasks.db'}", "--unauthenticated-2025-scope", scope)
    with servers() as started:
        first, url = await started.start_one(*options)
        with anyio.fail_after(BOUND_S):
            task_id = await _a_finished_task(url)
        kill(first)
        _second, url = await started.start_one(*options)
        with anyio.fail_after(BOUND_S):
            async with connect_http(url, dialect=DIALECT_2025_11_25) as session:
                if scope == "session":
                    with pytest.raises(TaskNotFoundError) as unknown:
                        await resume(session, task_id)
                    # this library's server: the message names the opt-in that would let it through
                    assert "unauthenticated_2025_scope='task_id'" in str(unknown.value)
                    return
                result = await (await resume(session, task_id)).result()
    assert [block.text for block in result.content] == ["kept"]
