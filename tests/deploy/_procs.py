"""Server processes for the deployment tests: ``example-server --store URL`` started, killed, restarted.

Each server is a real ``python -m mcp_tasks_compat example-server --transport http --port 0``
(the kit's :class:`~mcp_tasks_compat.testing.HttpServerProcess`, via ``tests.cli.harness``); the
operator's ``tasks`` command runs as a subprocess too.
"""

from __future__ import annotations

import itertools
import json
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any, Final

import anyio
import anyio.to_thread
from tests.cli.harness import CLI, http_example_server
from tests.conftest import MCP_MAJOR
from tests.postgres_server import PostgresServer

from mcp_tasks_compat.core._model import Task, TaskStatus
from mcp_tasks_compat.dialects import DIALECT_2025_11_25, DIALECT_2026_07_28, Dialect
from mcp_tasks_compat.testing import HttpServerProcess

__all__ = [
    "LOST_RUN",
    "NEWEST_DIALECT",
    "START_BOUND_S",
    "Servers",
    "Watch",
    "following",
    "fresh_redis_db",
    "is_",
    "kill",
    "operator",
    "servers",
    "until_status",
]

LOST_RUN: Final = "the server stopped while this task ran"
"""The status message of a task whose server died while it ran (docs/deploy.md)."""
START_BOUND_S: Final = 60.0
"""A bound, not a wait: each server is a fresh interpreter importing ``mcp`` on a possibly busy machine."""
NEWEST_DIALECT: Final[Dialect] = DIALECT_2026_07_28 if MCP_MAJOR == 2 else DIALECT_2025_11_25
"""mcp 1.x serves 2025-11-25 only."""

_databases = itertools.count(1)


def fresh_postgres_db(cluster: PostgresServer) -> str:
    """A URL of a new, empty database on the session's PostgreSQL cluster (one per test)."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(cluster.url(database="postgres"), autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE {name}")  # pyright: ignore[reportArgumentType]
    return cluster.url(database=name)


def fresh_redis_db(redis_url: str) -> str:
    """``redis_url`` on a database number no other test of this session used (the server has 16)."""
    number = next(_databases)
    assert number < 16, "more Redis-backed tests than databases: flush one instead"
    base, _slash, _db = redis_url.rpartition("/")
    return f"{base}/{number}"


@dataclass
class Servers:
    """``example-server`` processes started by one test; every one is stopped when the test ends."""

    started: list[HttpServerProcess] = field(default_factory=lambda: list[HttpServerProcess]())

    def start_now(self, *options: str, count: int = 1) -> list[tuple[HttpServerProcess, str]]:
        """``count`` servers with the same options, each with its URL (blocking; each start is
        bounded by the harness's process timeout)."""
        batch = [http_example_server(*options) for _ in range(count)]
        self.started.extend(batch)
        return [(server, server.start()) for server in batch]

    async def start(self, *options: str, count: int = 1) -> list[tuple[HttpServerProcess, str]]:
        with anyio.fail_after(START_BOUND_S * count):  # they start one after the other
            return await anyio.to_thread.run_sync(
                lambda: self.start_now(*options, count=count), abandon_on_cancel=True
            )

    async def start_one(self, *options: str) -> tuple[HttpServerProcess, str]:
        [(server, url)] = await self.start(*options)
        return server, url


@contextmanager
def servers() -> Iterator[Servers]:
    started = Servers()
    try:
        yield started
    finally:
        for server in started.started:
            server.kill()
            server.stop()


def kill(server: HttpServerProcess) -> None:
    """SIGKILL, as a crash or an OOM kill would: the process gets no chance to tidy up."""
    server.kill()


async def operator(*args: str) -> Any:
    """``mcp-tasks-compat tasks ARGS... --json``: its JSON document (the command must succeed)."""
    with anyio.fail_after(START_BOUND_S):
        done = await anyio.run_process([*CLI, "tasks", *args, "--json"], check=False)
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 0, f"tasks {' '.join(args)}: exit {done.returncode}\n{out}\n{err}"
    return json.loads(out)


class Watch:
    """An ``on_status`` callback that keeps every status it hears and wakes whoever waits on one."""

    def __init__(self) -> None:
        self.seen: list[Task] = []
        self._waiting: list[tuple[Callable[[Task], bool], anyio.Event]] = []

    def __call__(self, task: Task) -> None:
        self.seen.append(task)
        for wanted, event in self._waiting:
            if wanted(task):
                event.set()

    async def until(self, wanted: Callable[[Task], bool], *, within: float) -> Task:
        """The first status heard (or already heard) that is ``wanted``, within ``within`` seconds."""
        event = anyio.Event()
        entry = (wanted, event)
        self._waiting.append(entry)
        try:
            if not any(wanted(task) for task in self.seen):
                with anyio.fail_after(within):
                    await event.wait()
        finally:
            self._waiting.remove(entry)
        return next(task for task in self.seen if wanted(task))

    @property
    def messages(self) -> list[str]:
        return [task.status_message or "" for task in self.seen]


async def until_status(run: Any, wanted: Callable[[Task], bool], *, within: float) -> Task:
    """Ask ``run.status()`` every 0.1 s until it is ``wanted``, failing after ``within`` seconds.

    Only for what another process decides on its own clock and announces to nobody (a dead
    replica's lease running out, swept by a live one): there is no event to wait for.
    """
    with anyio.fail_after(within):
        while True:
            task = await run.status()
            if task is not None and wanted(task):
                return task
            await anyio.sleep(0.1)


def is_(status: TaskStatus) -> Callable[[Task], bool]:
    return lambda task: task.status is status


@asynccontextmanager
async def following(run: Any) -> AsyncIterator[None]:
    """Follow ``run`` to its end in the background (its ``on_status`` hears every change)."""

    async def follow() -> None:
        with suppress(Exception):
            await run.result()

    async with anyio.create_task_group() as group:
        group.start_soon(follow)
        try:
            yield
        finally:
            group.cancel_scope.cancel()
