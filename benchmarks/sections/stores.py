"""Section 5, task stores: our server on each task store, everything else equal.

The store is the switch: the same server, tools, client, transport and dialect run on
``memory:``, on ``sqlite:///`` (a file in a temporary folder) and on ``redis://`` (a
``redis-server`` this module starts on a free loopback port and stops at the end). Every round
measures each store once, in a rotated order, and the ratios to the memory store are taken within
a round, so load that drifts over the run falls on all three alike.

* Throughput: tool ``job`` returning at once, ``call_tool(mode="task")`` to completion, one
  caller and ``stores_clients`` concurrent callers (50 in the full profile; on one session: the
  store, not the session count, is what differs).
* ``tasks/get`` latency: status reads of tasks that exist, on stores holding few and many tasks.
  The store is pre-filled through its own API (``TaskStore.create`` of completed tasks of another
  owner, so the reads go through the same owner check as any), then a few tasks are run through
  the client and read back; a store with few and one with many tasks are read in alternation.

Targets: SQLite and Redis task rate at least 0.5x memory with one caller (issue 12) and at least
0.8x with the concurrent callers (issue 27); ``tasks/get`` p50 with many tasks stored at most
1.2x with few. What a task costs each store, and what one Redis node or SQLite file carries, is
measured apart by ``python -m benchmarks.store_cost`` (docs/deploy.md, "What a task costs the
store").
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

import anyio
from tools.postgres_server import PostgresServer, postgres_bindir
from tools.redis_server import RedisServer

from .. import clients, servers
from ..harness import Bench, dialects_for, opt_ins_for, rotated
from ..section import Row, Section, find, spread, table, target
from ..stats import ratio_summary, summary

__all__ = ["SECTION", "STORES", "StoreSites", "StoresProfile", "store_sites"]

STORES = ("memory", "sqlite", "redis", "postgres")
FILLER_OWNER = "bench-filler"  # no session is this owner: the filler tasks are only stored
REDIS_DATABASES = 16  # redis-server's default; each use of the Redis store gets a database of its own


@dataclass(frozen=True)
class StoresProfile:
    transports: tuple[str, ...]
    seq_calls: int  # task calls per store per round, one caller
    rounds: int
    clients: int  # concurrent callers (one session)
    calls_per_client: int
    get_sizes: tuple[int, ...]  # tasks stored when tasks/get is read (few, many)
    get_targets: int  # of which run through the client, and read back
    get_reads: int  # reads per store and size per round
    get_rounds: int


PROFILES = {
    "smoke": StoresProfile(
        transports=("memory",),
        seq_calls=3,
        rounds=2,
        clients=3,
        calls_per_client=1,
        get_sizes=(5, 20),
        get_targets=3,
        get_reads=5,
        get_rounds=2,
    ),
    "full": StoresProfile(
        transports=("memory", "http"),
        seq_calls=15,
        rounds=5,
        clients=50,  # the callers DESCRIBED and the issue 27 target name
        calls_per_client=10,  # 500 tasks a round: a 0.1x difference stands out of the noise
        get_sizes=(100, 10_000),
        get_targets=20,
        get_reads=50,
        get_rounds=3,
    ),
}


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
    postgres: PostgresServer | None = None
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
        if name == "postgres":
            assert self.postgres is not None
            return new_postgres_database(self.postgres, f"bench_{self._uses}")
        raise ValueError(f"unknown store {name!r}")

    def where(self, name: str) -> str:
        if name == "sqlite":
            return f"a file in a temporary folder ({filesystem_of(self.folder)})"
        if name == "redis":
            return f"{self.redis_version} on 127.0.0.1; {redis_client()}"
        if name == "postgres" and self.postgres is not None:
            from importlib.metadata import version

            return f"{self.postgres.version()} on 127.0.0.1 (fsync off); psycopg {version('psycopg')}"
        return "in process"


def new_postgres_database(server: PostgresServer, name: str) -> str:
    """The URL of a new, empty database ``name`` on the bench's cluster."""
    import psycopg

    with psycopg.connect(server.url(database="postgres"), autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE {name}")  # pyright: ignore[reportArgumentType]
    return server.url(database=name)


@contextmanager
def postgres_site(sites: StoreSites) -> Iterator[None]:
    """A throwaway PostgreSQL cluster for the rows of the PostgreSQL store, when PostgreSQL and
    psycopg are installed (else those rows are skipped, with the reason)."""
    bindir = postgres_bindir()
    if bindir is None:
        sites.skipped["postgres"] = "PostgreSQL not installed (apt-get install postgresql)"
    elif importlib.util.find_spec("psycopg") is None:
        sites.skipped["postgres"] = "psycopg not installed (pip install 'mcp-tasks-compat[postgres]')"
    if bindir is None or "postgres" in sites.skipped:
        yield
        return
    server = PostgresServer(bindir)
    server.start()
    sites.postgres = server
    try:
        yield
    finally:
        server.remove()


def redis_client() -> str:
    """redis-py's version and which reply parser it uses: hiredis (the ``redis`` extra installs it)
    or its own in Python, a visible share of a task's cost in this process."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        client = f"redis-py {version('redis')}"
    except PackageNotFoundError:
        return "redis-py not installed"
    from redis.utils import HIREDIS_AVAILABLE

    if HIREDIS_AVAILABLE:
        return f"{client} with hiredis {version('hiredis')}"
    return f"{client}, its Python parser (no hiredis)"


@contextmanager
def store_sites() -> Iterator[StoreSites]:
    """A temporary folder for SQLite and, when ``redis-server`` and redis-py exist, a Redis server;
    when PostgreSQL and psycopg exist, a PostgreSQL cluster."""
    folder = tempfile.mkdtemp(prefix="bench-stores-")
    sites = StoreSites(folder)
    try:
        with postgres_site(sites):
            yield from _with_redis(sites)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _with_redis(sites: StoreSites) -> Iterator[StoreSites]:
    """``sites`` with a redis-server started for it (or its rows skipped, with the reason)."""
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
    from mcp_tasks_compat.core._model import Task, TaskStatus

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


# --- throughput ------------------------------------------------------------------------------------


async def store_throughput(
    bench: Bench, profile: StoresProfile, sites: StoreSites, transport: str, dialect: str | None
) -> None:
    """Sequential and concurrent task rate on each store, rounds interleaved across the stores."""
    names = sites.names
    async with AsyncExitStack() as stack:
        conns: dict[str, clients.Conn] = {}
        urls: dict[str, str] = {}
        for name in names:
            urls[name] = sites.url(name)
            target = await stack.enter_async_context(open_store_target(name, urls[name], transport))
            conns[name] = await stack.enter_async_context(
                target.connect(transport, opt_ins=opt_ins_for(dialect, bench.major))
            )
        for conn in conns.values():  # warm every path (imports, tools/list, the store's first writes)
            for _ in range(3):
                await conn.call("job", {}, mode="task", at_once=True)

        async def rates(callers: int, per_caller: int) -> dict[str, list[float]]:
            out: dict[str, list[float]] = {name: [] for name in names}
            for round_index in range(profile.rounds):
                for name in rotated(names, round_index):
                    conn = conns[name]

                    async def caller(conn: clients.Conn = conn) -> None:
                        for _ in range(per_caller):
                            await conn.call("job", {}, mode="task", at_once=True)

                    started = time.perf_counter()
                    async with anyio.create_task_group() as group:
                        for _ in range(callers):
                            group.start_soon(caller)
                    out[name].append(callers * per_caller / (time.perf_counter() - started))
            return out

        shapes = (
            ("sequential", 1, profile.seq_calls),
            ("concurrent", profile.clients, profile.calls_per_client),
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


async def store_get_latency(
    bench: Bench, profile: StoresProfile, sites: StoreSites, dialect: str | None
) -> None:
    """``tasks/get`` of existing tasks on each store holding few and many tasks, read in alternation."""
    transport = "memory"
    sizes = profile.get_sizes
    async with AsyncExitStack() as stack:
        handles: dict[tuple[str, int], list[Any]] = {}
        fill_s: dict[tuple[str, int], float] = {}
        conns: dict[tuple[str, int], clients.Conn] = {}
        for name in sites.names:
            for size in sizes:
                target = await stack.enter_async_context(open_store_target(name, sites.url(name), transport))
                read_targets = profile.get_targets
                fill_s[(name, size)] = await fill(target.tasks.engine.store, size - read_targets)
                conn = conns[(name, size)] = await stack.enter_async_context(
                    target.connect(transport, opt_ins=opt_ins_for(dialect, bench.major))
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
        for round_index in range(profile.get_rounds):
            for variant in rotated(variants, round_index):
                taken: list[float] = []
                targets = handles[variant]
                for index in range(profile.get_reads):
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
                "prefilled_via_store": size - profile.get_targets,  # TaskStore.create, other owner
                "run_via_client": profile.get_targets,  # the tasks read back
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


async def measure(bench: Bench, profile: StoresProfile) -> None:
    """Every measurement of the section, on every store this machine has, in one run."""
    if not bench.ours:
        bench.notes.append("stores: not measured (our server is not installed, or not in --kinds)")
        return
    dialects = dialects_for("ours", bench.major)
    with store_sites() as sites:
        for name, reason in sites.skipped.items():
            bench.notes.append(f"stores: {name} rows skipped: {reason}")
        for transport in profile.transports:
            for dialect in dialects:
                await bench.guarded(
                    f"stores/throughput/{transport}/{dialect or 'negotiated'}",
                    lambda t=transport, d=dialect: store_throughput(bench, profile, sites, t, d),
                )
        await bench.guarded(
            f"stores/tasks-get/memory/{dialects[0] or 'negotiated'}",
            lambda: store_get_latency(bench, profile, sites, dialects[0]),
        )


STORE_NAMES = {"memory": "memory", "sqlite": "SQLite", "redis": "Redis", "postgres": "PostgreSQL"}


SEQUENTIAL_TARGET = 0.5  # issue 12: a durable store's task rate, one caller, at least half memory's
CONCURRENT_TARGET = 0.8  # issue 27: with concurrent callers, at least 0.8x memory's


def targets(rows: Sequence[Row]) -> list[dict[str, Any]]:
    """SQLite and Redis task rate >= 0.5x memory with one caller, >= 0.8x with the concurrent callers;
    tasks/get p50 with many tasks <= 1.2x few."""
    out: list[dict[str, Any]] = []
    for row in find(rows, section="stores"):
        store = STORE_NAMES.get(row["store"], row["store"])
        where = f"mcp{row['major']}, {row['dialect']}, {row['transport']}"
        if row["variant"] in ("sequential", "concurrent") and row["store"] != "memory":
            ratio = row["ratio_to_memory"]
            out.append(
                target(
                    f"task throughput {store} ÷ memory, {row['variant']} ({row['callers']} caller"
                    f"{'s' if row['callers'] != 1 else ''}; {where})",
                    ratio["median"],
                    SEQUENTIAL_TARGET if row["variant"] == "sequential" else CONCURRENT_TARGET,
                    at_most=False,
                    detail=f"{row['task_per_s']['median']} tasks/s; per-round ratio p10-p90 "
                    f"{ratio['p10']}-{ratio['p90']}",
                )
            )
        if row["variant"] == "tasks/get" and row.get("p50_ratio_to_smallest"):
            ratio = row["p50_ratio_to_smallest"]
            out.append(
                target(
                    f"tasks/get p50, {row['stored']:,} ÷ {row['smallest']:,} stored tasks, {store} ({where})",
                    ratio["median"],
                    1.2,
                    at_most=True,
                    detail=f"p50 {row['tasks_get_ms']['median']} ms; per-round ratio p10-p90 "
                    f"{ratio['p10']}-{ratio['p90']}; pooled {row.get('pooled_p50_ratio_to_smallest')}",
                )
            )
    return out


def tables(rows: Sequence[Row]) -> list[str]:
    """Task stores: throughput per store side by side (ratio to memory), then tasks/get by stored tasks."""
    store_rows = find(rows, section="stores")
    heading = (
        "### 5. Task stores (our server on memory, SQLite, Redis and PostgreSQL, all else equal; tool `job` "
        'returning at once, `call_tool(mode="task")` to completion; median (p10-p90) of interleaved rounds)'
    )
    parts = [heading, _throughput_table(store_rows), _get_table(store_rows)]
    if store_rows:
        parts.append(_where(store_rows))
    return parts


def _throughput_table(store_rows: Sequence[Row]) -> str:
    shapes: dict[tuple[Any, ...], dict[str, Row]] = {}
    for row in store_rows:
        if row["variant"] in ("sequential", "concurrent"):
            key = (row["major"], row["dialect"], row["transport"], row["variant"], row["callers"])
            shapes.setdefault(key, {})[row["store"]] = row

    def rate(cells: Mapping[str, Row], store: str) -> str | None:
        row = cells.get(store)
        if row is None:
            return None
        text = spread(row["task_per_s"])
        if store != "memory":
            text += f" · **{row['ratio_to_memory']['median']}x**"
        return text

    return table(
        [
            "mcp",
            "dialect",
            "transport",
            "callers",
            "memory tasks/s",
            "SQLite tasks/s · ÷ memory",
            "Redis tasks/s · ÷ memory",
            "PostgreSQL tasks/s · ÷ memory",
        ],
        ((*key[:3], key[4], *(rate(cells, store) for store in STORES)) for key, cells in shapes.items()),
    )


def _get_table(store_rows: Sequence[Row]) -> str:
    return table(
        [
            "mcp",
            "dialect",
            "store",
            "stored tasks",
            "tasks/get p50 ms",
            "p95 ms",
            "p99 ms",
            "n",
            "p50 ÷ fewest stored (per round, p10-p90)",
            "stored via store API + via client (fill s)",
        ],
        (
            (
                r["major"],
                r["dialect"],
                STORE_NAMES.get(r["store"], r["store"]),
                f"{r['stored']:,}",
                r["tasks_get_ms"]["median"],
                r["tasks_get_ms"].get("p95"),
                r["tasks_get_ms"]["p99"],
                r["tasks_get_ms"]["n"],
                spread(r.get("p50_ratio_to_smallest")) if r.get("p50_ratio_to_smallest") else "-",
                f"{r['prefilled_via_store']:,} + {r['run_via_client']} ({r.get('prefill_s')} s)",
            )
            for r in store_rows
            if r["variant"] == "tasks/get"
        ),
    )


def _where(store_rows: Sequence[Row]) -> str:
    """Where each store lived (its filesystem, the Redis version), and how tasks/get was filled."""
    where = sorted(
        {(r["major"], STORE_NAMES.get(r["store"], r["store"]), r["store_where"]) for r in store_rows}
    )
    lines = [f"- mcp{major}, {store}: {text}" for major, store, text in where]
    if any(r["variant"] == "tasks/get" for r in store_rows):
        lines.append(
            "- tasks/get: the store is pre-filled through its own `TaskStore.create` (completed tasks of "
            "another owner), then tasks run through our client are read back with `tasks/get`"
        )
    return "\n".join(lines)


DESCRIBED = """\
5. **Task stores**: our server on `ServerTasks(store="memory:")`, on `"sqlite:///..."` (a file in a
   temporary folder; its filesystem is named under the table) and on `"redis://..."` (a
   `redis-server` the bench starts on a free 127.0.0.1 port and stops at the end; the Redis rows
   are skipped, with that reason in the notes, when `redis-server` is not on PATH: `nox -s bench`
   installs Debian's package as root, like the test sessions) and on `"postgresql://..."` (a
   throwaway PostgreSQL cluster the bench starts the same way, `fsync=off`, a new database per
   use; skipped, with the reason, without PostgreSQL or psycopg). The store is the only switch: same
   server, tools, client, transport and dialect, each store measured once per round in a rotated
   order, ratios to memory taken within a round. Task throughput with one caller and 50
   concurrent callers (one session), in memory and over streamable HTTP; `tasks/get` latency
   (status reads of completed tasks through our client) on stores holding 100 and 10,000 tasks,
   pre-filled through the store's own `create` (completed tasks of another owner) plus 20 tasks
   run through the client, the two sizes read in alternation."""

SECTION = Section(
    name="stores",
    profiles=PROFILES,
    measure=measure,
    targets=targets,
    tables=tables,
    described=DESCRIBED,
)
