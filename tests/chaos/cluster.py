"""Replicas of the chaos server on one store (a real redis-server, or a SQLite file), and what a
client does with them: start tasks through one replica, read every task's end through another."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread
from tools.redis_server import RedisServer

from mcp_tasks_compat import TaskCancelledError, TaskError, TaskFailedError, TaskNotFoundError
from mcp_tasks_compat._testkit.processes import child_environment
from mcp_tasks_compat._testkit.sessions import connect_http
from mcp_tasks_compat.client import resume, start_tool
from mcp_tasks_compat.testing import HttpServerProcess, dialects

from .faults import redis_server_executable
from .marks import MarksFile, Outcome

__all__ = ["NEWEST_DIALECT", "REDIS_MISSING", "Cluster", "Replica", "cluster"]

SERVER = str(Path(__file__).with_name("server.py"))
START_BOUND_S = 60.0
"""A bound, not a wait: each replica is a fresh interpreter importing ``mcp`` on a busy machine."""
NEWEST_DIALECT = max(dialects())
"""2026-07-28 on mcp 2.x (task ids are handles any replica serves), 2025-11-25 on mcp 1.x (the
chaos server lets any session read a task by its id)."""
REDIS_MISSING = "redis-server not installed (apt-get install redis-server)"
SKEW_TOLERANCE_S = 3.0
"""How far a replica's clock, read at its start, may be from the skew asked for (start-up time)."""


@dataclass
class Replica:
    """One chaos server process."""

    name: str
    process: HttpServerProcess
    url: str
    skew_s: float = 0.0
    paused: bool = False
    killed_at: float | None = None

    @property
    def pid(self) -> int:
        pid = self.process.pid
        assert pid is not None
        return pid

    def pause(self) -> None:
        os.kill(self.pid, signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        os.kill(self.pid, signal.SIGCONT)
        self.paused = False

    def kill(self) -> float:
        """SIGKILL (a crash, an OOM kill); the wall time it was sent."""
        self.killed_at = time.time()
        with suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        return self.killed_at


@dataclass
class Cluster:
    """A store, the replicas on it, the marks file they share."""

    store_kind: str
    """``redis`` or ``sqlite``."""
    store_url: str
    folder: Path
    lease_s: float
    marks: MarksFile
    group: anyio.abc.TaskGroup
    """Where each replica's idle client session lives (see :meth:`start`)."""
    redis: RedisServer | None = None
    replicas: list[Replica] = field(default_factory=lambda: list[Replica]())
    reruns: int = 3

    @property
    def sqlite_path(self) -> Path:
        return Path(self.store_url.removeprefix("sqlite:///"))

    def _process(self, store_url: str, env: Mapping[str, str]) -> HttpServerProcess:
        command = [sys.executable, SERVER, "--store", store_url, "--marks", str(self.marks.path)]
        command += ["--lease-s", repr(self.lease_s), "--reruns", str(self.reruns)]
        environment = {**os.environ, **child_environment(), **env}
        return HttpServerProcess(command, env=environment, start_timeout=START_BOUND_S)

    async def start(
        self,
        *names: str,
        store_url: str | None = None,
        env: Mapping[str, str] | None = None,
        skew_s: float = 0.0,
    ) -> list[Replica]:
        """Replicas ``names``, started side by side (``store_url``: another way to the same store,
        e.g. through a relay; ``env``: e.g. a clock skew), each with an idle client session open
        for as long as it lives.

        The session is what a replica in service has anyway, and on mcp 1.x what makes it sweep
        and renew: the 1.x server has no lifespan of its own, so a replica's background (the
        sweeper, the lease renewal, the notifier, the re-runs) runs inside its client sessions
        (one at a time), and a replica that serves none starts nothing again.
        """
        started = [
            Replica(name, self._process(store_url or self.store_url, env or {}), "", skew_s) for name in names
        ]
        self.replicas.extend(started)  # stopped with the cluster, whether they started or not

        async def start_one(replica: Replica) -> None:
            replica.url = await anyio.to_thread.run_sync(replica.process.start, abandon_on_cancel=True)
            _check_clock(replica, time.time())

        with anyio.fail_after(START_BOUND_S):
            async with anyio.create_task_group() as group:
                for replica in started:
                    group.start_soon(start_one, replica)
            for replica in started:
                await self.group.start(_idle_session, replica.url)
        return started

    def by_pid(self, pid: int) -> Replica | None:
        return next((replica for replica in self.replicas if replica.pid == pid), None)

    def stop(self) -> None:
        """Stop every replica; each one's stderr is kept in the folder (``NAME.log``, with
        ``CHAOS_LOG=1`` the engine's INFO lines: which runs were started again, and why)."""
        for replica in self.replicas:
            if replica.paused:
                with suppress(ProcessLookupError):
                    replica.resume()
            replica.process.kill()
            replica.process.stop()
            log = "\n".join(replica.process.stderr_lines)
            with suppress(OSError):
                (self.folder / f"{replica.name}.log").write_text(log + "\n", encoding="utf-8")


async def _idle_session(url: str, *, task_status: anyio.abc.TaskStatus[None]) -> None:
    """A client session on the replica at ``url``, open until the cluster ends or the replica dies."""
    with suppress(Exception):  # the replica was killed: its session ends with it
        async with connect_http(url, dialect=NEWEST_DIALECT):
            task_status.started()
            await anyio.sleep_forever()


def _check_clock(replica: Replica, now: float) -> None:
    """The replica's ``time.time()`` as it started listening is the skew asked for: libfaketime
    took, and the event loop (on the true monotonic clock) runs, since it listens."""
    said = next((line for line in replica.process.stderr_lines if line.startswith("clock ")), None)
    if said is None:
        raise RuntimeError(f"replica {replica.name} did not say its clock: {replica.process.stderr_lines}")
    ahead_s = float(said.split()[1]) - now
    if abs(ahead_s - replica.skew_s) > SKEW_TOLERANCE_S:
        raise RuntimeError(
            f"replica {replica.name}'s clock is {ahead_s:+.1f} s off, not {replica.skew_s:+g} s "
            "(is libfaketime working here?)"
        )


@asynccontextmanager
async def cluster(
    store_kind: str, folder: Path, *, lease_s: float, reruns: int = 3
) -> AsyncIterator[Cluster]:
    """A fresh store of ``store_kind`` in ``folder`` (Redis keeps its data on disk, an append-only
    file synced on every write, so it survives a stop), with no replica yet."""
    await anyio.Path(folder).mkdir(parents=True, exist_ok=True)
    marks = MarksFile(folder / "marks.jsonl")
    async with AsyncExitStack() as stack:
        group = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(group.cancel_scope.cancel)
        redis: RedisServer | None = None
        if store_kind == "redis":
            executable = redis_server_executable()
            if executable is None:
                raise RuntimeError(REDIS_MISSING)
            redis = RedisServer(executable, data_dir=str(folder))
            await anyio.to_thread.run_sync(redis.start)
            stack.push_async_callback(anyio.to_thread.run_sync, redis.stop)
            url = redis.url
        elif store_kind == "sqlite":
            url = f"sqlite:///{folder / 'tasks.db'}"
        else:
            raise ValueError(f"store must be redis or sqlite, not {store_kind!r}")
        made = Cluster(store_kind, url, folder, lease_s, marks, group, redis=redis, reruns=reruns)
        stack.callback(made.stop)
        yield made


# --- the client's side ------------------------------------------------------------------------


@dataclass(frozen=True)
class Work:
    """The tool's arguments, apart from the label."""

    seconds: float
    rerun_seconds: float
    step_s: float

    def arguments(self, label: str) -> dict[str, Any]:
        return {
            "label": label,
            "seconds": self.seconds,
            "rerun_seconds": self.rerun_seconds,
            "step_s": self.step_s,
        }


async def start_tasks(url: str, labels: Sequence[str], work: Work) -> list[str]:
    """Start ``work`` once per label through the replica at ``url``: the acknowledged task ids."""
    ids: list[str] = []
    async with connect_http(url, dialect=NEWEST_DIALECT) as session:
        for label in labels:
            run = await start_tool(session, "work", work.arguments(label))
            assert run.task_id is not None, "start_tool acknowledged no task"
            ids.append(run.task_id)
    return ids


async def outcomes(url: str, task_ids: Sequence[str], *, within: float) -> dict[str, Outcome]:
    """Each task's end as read through the replica at ``url``: waited for (each task's result) for
    up to ``within`` seconds in all, then read once more; a task still running then is stuck."""
    found: dict[str, Outcome] = {}
    deadline = anyio.current_time() + within
    async with connect_http(url, dialect=NEWEST_DIALECT) as session:

        async def read(task_id: str) -> None:
            try:
                run = await resume(session, task_id)
            except TaskNotFoundError as gone:
                found[task_id] = Outcome(task_id, "unknown", message=str(gone))
                return
            text: str | None = None
            with anyio.move_on_after(max(0.0, deadline - anyio.current_time())):
                try:
                    result = await run.result()
                    blocks = [getattr(block, "text", "") for block in result.content]
                    text = "\n".join(blocks)
                except (TaskFailedError, TaskCancelledError):
                    pass
            try:
                task = await run.status()
            except TaskNotFoundError as gone:
                found[task_id] = Outcome(task_id, "unknown", message=str(gone))
                return
            except TaskError as error:
                found[task_id] = Outcome(task_id, "unknown", message=str(error))
                return
            status = task.status.value if task is not None else "unknown"
            message = task.status_message if task is not None else None
            found[task_id] = Outcome(task_id, status, text if status == "completed" else None, message)

        async with anyio.create_task_group() as group:
            for task_id in task_ids:
                group.start_soon(read, task_id)
    return found
