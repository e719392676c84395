"""docs/deploy.md's PostgreSQL recipe, run as written: two servers (one queueing for workers), a
worker and the operator's list on one database, as a user with a password who may create the
store's schema there (real processes, a real cluster, real HTTP on 127.0.0.1)."""

from __future__ import annotations

import uuid

import anyio
import psycopg
import pytest
from tests.postgres_server import RECIPE_PASSWORD, RECIPE_USER, PostgresServer

from mcp_tasks_compat._testkit.sessions import connect_http
from mcp_tasks_compat.client import start_tool
from mcp_tasks_compat.core._model import TaskStatus
from mcp_tasks_compat.testing import HttpServerProcess

from ._procs import NEWEST_DIALECT, START_BOUND_S
from .test_workers import BOUND_S, CLI, QUEUED, WorkerProcess, as_here, doc_commands, start, text_of

pytestmark = pytest.mark.anyio

PAGE_URL = f"postgresql://{RECIPE_USER}:{RECIPE_PASSWORD}@127.0.0.1:5432/tasks"


def _database_for_the_recipe(cluster: PostgresServer) -> str:
    """A new database the recipe's user may create a schema in (the page's GRANT), by name."""
    name = f"recipe_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(cluster.url(database="postgres"), autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE {name}")  # pyright: ignore[reportArgumentType]
        connection.execute(f"GRANT CREATE ON DATABASE {name} TO {RECIPE_USER}")  # pyright: ignore[reportArgumentType]
    return name


async def test_the_postgres_recipe_runs_as_written(postgres_cluster: PostgresServer) -> None:
    recipe = doc_commands("postgres-recipe")
    assert [command[1] for command in recipe] == ["example-server", "example-server", "worker", "tasks"]
    assert all(PAGE_URL in command for command in recipe), recipe
    database = _database_for_the_recipe(postgres_cluster)
    here = postgres_cluster.url(RECIPE_USER, RECIPE_PASSWORD, database=database)
    swaps = {PAGE_URL: here, "8001": "0", "8002": "0"}
    plain = HttpServerProcess(as_here(recipe[0], swaps), start_timeout=START_BOUND_S)
    queueing = HttpServerProcess(as_here(recipe[1], swaps), start_timeout=START_BOUND_S)
    worker = WorkerProcess(as_here(recipe[2], swaps)[len(CLI) + 1 :], env=None)
    statuses: list[tuple[TaskStatus, str | None]] = []
    texts: list[str] = []
    task_ids: list[str] = []
    try:
        await start(plain, queueing, worker)
        for server, text in ((plain, "on a replica"), (queueing, "on a worker")):
            assert server.url is not None
            with anyio.fail_after(BOUND_S):
                async with connect_http(server.url, dialect=NEWEST_DIALECT) as session:
                    run = await start_tool(session, "slow_echo", {"text": text, "seconds": 0.2, "steps": 1})
                    first = await run.status()
                    texts.append(text_of(await run.result()))
                    assert first is not None
                    assert run.task_id is not None
                    statuses.append((first.status, first.status_message))
                    task_ids.append(run.task_id)
        with anyio.fail_after(START_BOUND_S):
            listed = await anyio.run_process(as_here(recipe[3], swaps), check=False)
    finally:
        worker.stop()
        for server in (plain, queueing):
            server.kill()
            server.stop()
    assert texts == ["on a replica", "on a worker"]
    # The queueing server runs nothing itself: its task was queued, then a worker's (or already ended).
    status, message = statuses[1]
    assert (
        status is TaskStatus.COMPLETED or message == QUEUED or str(message).startswith("running on worker")
    ), statuses
    assert listed.returncode == 0, listed.stderr.decode()
    rows = {
        line.split()[0]: line.split()[1:3] for line in listed.stdout.decode().splitlines() if line.strip()
    }
    assert [rows.get(task_id) for task_id in task_ids] == [["completed", "slow_echo"]] * 2, rows
    assert RECIPE_PASSWORD not in listed.stdout.decode() + listed.stderr.decode()
