"""The ``stores`` section: our server on each task store, everything else equal.

The store is the switch: the same server, tools, client, transport and dialect run on
``memory:``, on ``sqlite:///`` (a file in a temporary folder) and on ``redis://`` (a
``redis-server`` this module starts on a free loopback port and stops at the end). Every round
measures each store once, in a rotated order, and the ratios to the memory store are taken within
a round, so load that drifts over the run falls on all three alike.

* Throughput: tool ``job`` returning at once, ``call_tool(mode="task")`` to completion, one
  caller and ``stores_clients`` concurrent callers (on one session: the store, not the session
  count, is what differs).
* ``tasks/get`` latency: status reads of tasks that exist, on stores holding few and many tasks.
  The store is pre-filled through its own API (``TaskStore.create`` of completed tasks of another
  owner, so the reads go through the same owner check as any), then a few tasks are run through
  the client and read back; a store with few and one with many tasks are read in alternation.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

import anyio
from tools.redis_server import RedisServer

from . import clients, servers
from .stats import ratio_summary, summary

if TYPE_CHECKING:
    from .workloads import Bench

__all__ = ["STORES", "StoreSites", "run_stores", "store_sites"]

STORES = ("memory", "sqlite", "redis")
FILLER_OWNER = "bench-filler"  # no session is this owner: the filler tasks are only stored
REDIS_DATABASES = 16  # redis-server's default; each use of the Redis store gets a database of its own


# --- where the stores live --------------------------------------------------------------------------


def filesystem_of(path: str) -> str:
    """The filesystem type holding ``path`` (from /proc/mounts): SQLite's fsync cost depends on it."""
    best, kind = "", "unknown"
    try:
        with open("/proc/mounts", encoding="utf-8") as mounts:
            for line in mounts:
                parts = line.split()
                if len(parts) >= 3 and path.startswith(parts[1]) and len(parts[1]) > len(best):
                    best, kind = parts[1], parts[2]
    except OSError:
        pass
    return kind


@dataclass
class StoreSites:
    """The stores of one run: which can be measured, a fresh URL for each use, and why any cannot."""

    folder: str
    redis_port: int | None = None
    redis_version: str | None = None
    skipped: dict[str, str] = field(default_factory=dict)
    _uses: int = 0
    _redis_dbs: int = 0

    @property
    def names(self) -> list[str]:
        return [name for name in STORES if name not in self.skipped]

    def url(self, name: str) -> str:
        """A store nobody used yet: a new SQLite file, a new Redis database, a new memory store."""
        self._uses += 1
        if name == "memory":
            return "memory:"
        if name == "sqlite":
            return "sqlite:///" + os.path.join(self.folder, f"tasks-{self._uses}.db")
        if name == "redis":
            assert self.redis_port is not None
            if self._redis_dbs == REDIS_DATABASES:
                raise RuntimeError(f"a bench run uses at most {REDIS_DATABASES} Redis databases")
            self._redis_dbs += 1
            return f"redis://127.0.0.1:{self.redis_port}/{self._redis_dbs - 1}"
        raise ValueError(f"unknown store {name!r}")

    def where(self, name: str) -> str:
        if name == "sqlite":
            return f"a file in a temporary folder ({filesystem_of(self.folder)})"
        if name == "redis":
            return f"{self.redis_version} on 127.0.0.1"
        return "in process"


@contextmanager
def store_sites() -> Iterator[StoreSites]:
    """A temporary folder for SQLite and, when ``redis-server`` and redis-py exist, a Redis server."""
    folder = tempfile.mkdtemp(prefix="bench-stores-")
    sites = StoreSites(folder)
    try:
        executable = shutil.which("redis-server")
        if executable is None:
            sites.skipped["redis"] = "redis-server not on PATH (apt-get install redis-server)"
        elif importlib.util.find_spec("redis") is None:
            sites.skipped["redis"] = "redis-py not installed (pip install 'mcp-tasks-compat[redis]')"
        if "redis" in sites.skipped:
            yield sites
            return
        assert executable is not None
        server = RedisServer(executable)
        server.start()
        try:
            sites.redis_port, sites.redis_version = server.port, server.version()
            yield sites
        finally:
            server.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# --- servers on a store -------------------------------------------------------------------------


@dataclass
class StoreTarget:
    """Our server on one store, and how to connect to it."""

    store: str
    url: str
    tasks: Any = None  # ServerTasks, for a server in this process
    server: Any = None
    process: clients.ServerProcess | None = None

    def connect(self, transport: str, **kwargs: Any) -> Any:
        if transport == "memory":
            return clients.connect("memory", kind="ours", server=self.server, **kwargs)
        return clients.connect(transport, kind="ours", process=self.process, **kwargs)


@asynccontextmanager
async def open_store_target(store: str, url: str, transport: str) -> AsyncIterator[StoreTarget]:
    """Our server on ``url``: in this process (memory transport), or its own process (HTTP)."""
    if transport == "memory":
        server, tasks = servers.build_with_tasks(
            "ours", store=url, off=("grace",)
        )  # held tasks, even quick ones
        servers.quiet_logs()
        await tasks.engine.open()
        try:
            yield StoreTarget(store, url, tasks=tasks, server=server)
        finally:
            with anyio.CancelScope(shield=True):
                await tasks.engine.store.close()
        return
    with clients.server_process("ours", transport, store=url) as process:
        yield StoreTarget(store, url, process=process)


async def fill(store: Any, count: int) -> float:
    """``count`` completed tasks of :data:`FILLER_OWNER` written through ``store.create``; seconds taken."""
    from mcp_tasks_compat._engine import TaskState, new_task_id
    from mcp_tasks_compat.core.model import Task, TaskStatus

    result = {"content": [{"type": "text", "text": "filler"}], "isError": False}
    started = time.perf_counter()
    for _ in range(count):
        now = datetime.now(timezone.utc)
        task = Task(
            task_id=new_task_id(),
            status=TaskStatus.COMPLETED,
            created_at=now,
            last_updated_at=now,
            ttl_ms=7_200_000,
            poll_interval_ms=100,
            result=result,
        )
        state = TaskState(task, "2026-07-28", FILLER_OWNER, "job", expires_at=now + timedelta(hours=2))
        await store.create(state)
    return time.perf_counter() - started


def _rotated(items: Sequence[Any], round_index: int) -> list[Any]:
    shift = round_index % len(items)
    return list(items[shift:]) + list(items[:shift])


def _opt_ins(dialect: str | None, major: int) -> dict[str, Any]:
    if dialect is None or (major == 1 and dialect == "2025-11-25"):
        return {}
    return {"dialect": dialect}


# --- throughput ------------------------------------------------------------------------------------


async def store_throughput(bench: Bench, sites: StoreSites, transport: str, dialect: str | None) -> None:
    """Sequential and concurrent task rate on each store, rounds interleaved across the stores."""
    profile = bench.profile
    names = sites.names
    async with AsyncExitStack() as stack:
        conns: dict[str, clients.Conn] = {}
        urls: dict[str, str] = {}
        for name in names:
            urls[name] = sites.url(name)
            target = await stack.enter_async_context(open_store_target(name, urls[name], transport))
            conns[name] = await stack.enter_async_context(
                target.connect(transport, opt_ins=_opt_ins(dialect, bench.major))
            )
        for conn in conns.values():  # warm every path (imports, tools/list, the store's first writes)
            for _ in range(3):
                await conn.call("job", {}, mode="task")

        async def rates(callers: int, per_caller: int) -> dict[str, list[float]]:
            out: dict[str, list[float]] = {name: [] for name in names}
            for round_index in range(profile.stores_rounds):
                for name in _rotated(names, round_index):
                    conn = conns[name]

                    async def caller(conn: clients.Conn = conn) -> None:
                        for _ in range(per_caller):
                            await conn.call("job", {}, mode="task")

                    started = time.perf_counter()
                    async with anyio.create_task_group() as group:
                        for _ in range(callers):
                            group.start_soon(caller)
                    out[name].append(callers * per_caller / (time.perf_counter() - started))
            return out

        shapes = (
            ("sequential", 1, profile.stores_seq_calls),
            ("concurrent", profile.stores_clients, profile.stores_calls_per_client),
        )
        for shape, callers, per_caller in shapes:
            measured = await rates(callers, per_caller)
            for name in names:
                conn = conns[name]
                bench.add(
                    "stores",
                    kind="ours",
                    store=name,
                    store_url=urls[name],
                    store_where=sites.where(name),
                    transport=transport,
                    dialect=conn.dialect,
                    protocol_version=conn.protocol_version,
                    variant=shape,
                    callers=callers,
                    sessions=1,
                    tasks_per_round=callers * per_caller,
                    task_per_s=summary(measured[name], digits=2),
                    ratio_to_memory=ratio_summary(measured[name], measured["memory"]),
                )


# --- tasks/get latency ----------------------------------------------------------------------------


async def store_get_latency(bench: Bench, sites: StoreSites, dialect: str | None) -> None:
    """``tasks/get`` of existing tasks on each store holding few and many tasks, read in alternation."""
    profile = bench.profile
    transport = "memory"
    sizes = profile.stores_get_sizes
    async with AsyncExitStack() as stack:
        handles: dict[tuple[str, int], list[Any]] = {}
        fill_s: dict[tuple[str, int], float] = {}
        conns: dict[tuple[str, int], clients.Conn] = {}
        for name in sites.names:
            for size in sizes:
                target = await stack.enter_async_context(open_store_target(name, sites.url(name), transport))
                read_targets = profile.stores_get_targets
                fill_s[(name, size)] = await fill(target.tasks.engine.store, size - read_targets)
                conn = conns[(name, size)] = await stack.enter_async_context(
                    target.connect(transport, opt_ins=_opt_ins(dialect, bench.major))
                )
                started = [await conn.start("job", {}) for _ in range(read_targets)]
                for handle in started:
                    await handle.result()
                handles[(name, size)] = [handle for handle in started if handle.task_id is not None]
                if not handles[(name, size)]:
                    raise RuntimeError(f"{name}: the server answered every job directly, no task to read")
        variants = list(handles)
        samples: dict[tuple[str, int], list[float]] = {variant: [] for variant in variants}
        round_medians: dict[tuple[str, int], list[float]] = {variant: [] for variant in variants}
        for variant in variants:  # warm
            for handle in handles[variant]:
                await handle.status()
        for round_index in range(profile.stores_get_rounds):
            for variant in _rotated(variants, round_index):
                taken: list[float] = []
                targets = handles[variant]
                for index in range(profile.stores_get_reads):
                    handle = targets[index % len(targets)]
                    began = time.perf_counter()
                    await handle.status()
                    taken.append((time.perf_counter() - began) * 1000)
                samples[variant] += taken
                round_medians[variant].append(summary(taken)["median"] or 0.0)
        smallest = sizes[0]
        for name, size in variants:
            conn = conns[(name, size)]
            stats = summary(samples[(name, size)], digits=3)
            row: dict[str, Any] = {
                "kind": "ours",
                "store": name,
                "store_where": sites.where(name),
                "transport": transport,
                "dialect": conn.dialect,
                "protocol_version": conn.protocol_version,
                "variant": "tasks/get",
                "stored": size,
                "prefilled_via_store": size - profile.stores_get_targets,  # TaskStore.create, other owner
                "run_via_client": profile.stores_get_targets,  # the tasks read back
                "prefill_s": round(fill_s[(name, size)], 2),
                "tasks_get_ms": stats,
            }
            if size != smallest:
                row["p50_ratio_to_smallest"] = ratio_summary(
                    round_medians[(name, size)], round_medians[(name, smallest)]
                )
                base = summary(samples[(name, smallest)])["median"]
                row["pooled_p50_ratio_to_smallest"] = (
                    round((stats["median"] or 0) / base, 4) if base else None
                )
                row["smallest"] = smallest
            bench.add("stores", **row)


# --- the section ------------------------------------------------------------------------------------


async def run_stores(bench: Bench, dialects: Sequence[str | None]) -> None:
    """Every measurement of the section, on every store this machine has, in one run."""
    profile = bench.profile
    with store_sites() as sites:
        for name, reason in sites.skipped.items():
            bench.notes.append(f"stores: {name} rows skipped: {reason}")
        for transport in profile.stores_transports:
            for dialect in dialects:
                await bench.guarded(
                    f"stores/throughput/{transport}/{dialect or 'negotiated'}",
                    lambda t=transport, d=dialect: store_throughput(bench, sites, t, d),
                )
        await bench.guarded(
            f"stores/tasks-get/memory/{dialects[0] or 'negotiated'}",
            lambda: store_get_latency(bench, sites, dialects[0]),
        )
