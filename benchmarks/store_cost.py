"""What a task costs each task store, and what one Redis node or one SQLite file can carry.

``python -m benchmarks.store_cost`` prints the figures of docs/deploy.md ("What a task costs the
store"), measured in this environment (one SDK major), on this machine:

1. **Operations per task**, by kind, on ``memory:``, ``sqlite:///`` and ``redis://``: our server
   in this process (in-memory transport, tool ``job`` returning at once, ``call_tool(mode=
   "task")`` to completion), one caller and ``--callers`` concurrent callers, each dialect this
   major serves. Counted at the store's own methods (``create``, ``save``, ``get``,
   ``count_active``, the sweeps), and below them: SQLite's commits (one fsync each, WAL with
   ``synchronous=FULL``), Redis's round trips and the commands they carried, and redis-server's
   own CPU per task (``INFO cpu``). The tasks/s beside them is this process's, for scale.
2. **What the node itself sustains**:
   * Redis: the hot-path commands captured from the concurrent run on Redis (the real scripts and
     arguments, a subscriber on the events channel as a replica would be) replayed into an empty
     database, pipelined from a raw socket so the client is not the limit: tasks/s one
     redis-server runs them at, and its CPU per task.
   * SQLite: commits/s of a file in the same folder with the store's settings (WAL,
     ``synchronous=FULL``), one row per commit: the fsync rate of the disk, the ceiling of a
     file that commits once per write.

Each measurement is repeated (``--repeats``) and the median printed; the machine's load average
is printed before and after (figures on a shared machine are noisy).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sqlite3
import statistics
import sys
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, contextmanager, suppress
from typing import Any

import anyio

from . import servers
from .harness import dialects_for, opt_ins_for
from .report import loadavg
from .sections.stores import StoreSites, open_store_target, store_sites

__all__ = ["main", "measure"]

OPERATIONS = (
    "create",
    "save",
    "get",
    "count_active",
    "delete",
    "due_for_expiry",
    "next_expiry",
    "lease_expired",
)


# --- counting ----------------------------------------------------------------------------------------


def _counting(counter: Counter[str], name: str, method: Callable[..., Awaitable[Any]]) -> Callable[..., Any]:
    async def counted(*args: Any, **kwargs: Any) -> Any:
        counter[name] += 1
        return await method(*args, **kwargs)

    return counted


@contextmanager
def redis_wire(counter: Counter[str], captured: list[bytes] | None) -> Iterator[None]:
    """Count what this process sends Redis: ``round_trips`` (every send), ``commands`` on the hot
    path; keep the hot path's packed commands in ``captured``."""
    from redis.asyncio.connection import AbstractConnection

    from mcp_tasks_compat._engine.stores import redis_link

    original_send = AbstractConnection.send_packed_command
    original_packed = redis_link.packed

    async def send(self: Any, command: Any, check_health: bool = True) -> None:
        counter["round_trips"] += 1
        await original_send(self, command, check_health)

    def packed(command: Any) -> bytes:
        request = original_packed(command)
        counter["commands"] += 1
        if captured is not None:
            captured.append(request)
        return request

    AbstractConnection.send_packed_command = send  # type: ignore[method-assign]
    redis_link.packed = packed
    try:
        yield
    finally:
        AbstractConnection.send_packed_command = original_send  # type: ignore[method-assign]
        redis_link.packed = original_packed


def redis_info(port: int, section: str) -> dict[str, str]:
    """``INFO section`` of the server on ``port``, as key/value pairs."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        conn.sendall(f"INFO {section}\r\n".encode())
        data = b""
        while not data.startswith(b"$") or b"\r\n" not in data:
            data += conn.recv(65536)
        length = int(data[1 : data.index(b"\r\n")])
        body_start = data.index(b"\r\n") + 2
        while len(data) < body_start + length:
            data += conn.recv(65536)
    text = data[body_start : body_start + length].decode()
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line and not line.startswith("#"))


def redis_cpu_s(port: int) -> float:
    """redis-server's main thread CPU seconds (user + system) so far."""
    info = redis_info(port, "cpu")
    user = info.get("used_cpu_user_main_thread", info["used_cpu_user"])
    system = info.get("used_cpu_sys_main_thread", info["used_cpu_sys"])
    return float(user) + float(system)


# --- 1. operations per task ----------------------------------------------------------------------------


async def operations_per_task(
    sites: StoreSites, store: str, dialect: str | None, callers: int, tasks: int, captured: list[bytes] | None
) -> dict[str, Any]:
    """Our server on ``store``: ``tasks`` tasks by ``callers`` concurrent callers; counts per task."""
    major = servers.mcp_major()
    url = sites.url(store)
    counts: Counter[str] = Counter()
    async with AsyncExitStack() as stack:
        target = await stack.enter_async_context(open_store_target(store, url, "memory"))
        conn = await stack.enter_async_context(target.connect("memory", opt_ins=opt_ins_for(dialect, major)))
        for _ in range(3):  # warm: imports, scripts, connections
            await conn.call("job", {}, mode="task")
        engine_store = target.tasks.engine.store
        for name in OPERATIONS:
            setattr(engine_store, name, _counting(counts, name, getattr(engine_store, name)))
        worker = getattr(engine_store, "_worker", None)
        commits_before = worker.commits if worker is not None else 0
        cpu_before = redis_cpu_s(sites.redis_port) if store == "redis" and sites.redis_port else 0.0
        per_caller = max(1, tasks // callers)

        async def caller() -> None:
            for _ in range(per_caller):
                await conn.call("job", {}, mode="task")

        with redis_wire(counts, captured) if store == "redis" else _nothing():
            started = time.perf_counter()
            async with anyio.create_task_group() as group:
                for _ in range(callers):
                    group.start_soon(caller)
            taken = time.perf_counter() - started
        done = per_caller * callers
        row: dict[str, Any] = {
            "store": store,
            "dialect": conn.dialect,
            "callers": callers,
            "tasks": done,
            "task_per_s": round(done / taken, 1),
            "per_task": {name: round(counts[name] / done, 2) for name in OPERATIONS if counts[name]},
        }
        if worker is not None:
            row["commits_per_task"] = round((worker.commits - commits_before) / done, 3)
        if store == "redis" and sites.redis_port:
            row["round_trips_per_task"] = round(counts["round_trips"] / done, 2)
            row["commands_per_task"] = round(counts["commands"] / done, 2)
            row["redis_cpu_us_per_task"] = round((redis_cpu_s(sites.redis_port) - cpu_before) / done * 1e6, 1)
        return row


@contextmanager
def _nothing() -> Iterator[None]:
    yield


# --- 2. what the node sustains -------------------------------------------------------------------------


def replay_on_redis(port: int, database: int, commands: list[bytes], channel: str) -> dict[str, float]:
    """``commands`` (packed) into the empty ``database``, pipelined from one raw socket, with a
    subscriber on ``channel``: seconds taken and redis-server CPU seconds used."""
    subscriber = socket.create_connection(("127.0.0.1", port), timeout=10)
    subscriber.sendall(f"SUBSCRIBE {channel}\r\n".encode())
    subscriber.recv(4096)  # the confirmation

    def drain() -> None:
        try:
            while subscriber.recv(1 << 16):
                pass
        except OSError:
            pass

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    marker = f"replayed-{time.monotonic_ns()}".encode()
    tail = b"*2\r\n$4\r\nECHO\r\n$%d\r\n%s\r\n" % (len(marker), marker)
    expected = b"$%d\r\n%s\r\n" % (len(marker), marker)
    with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
        conn.sendall(b"SELECT %d\r\nFLUSHDB\r\n" % database)
        seen = b""
        while seen.count(b"+OK\r\n") < 2:
            seen += conn.recv(4096)
        cpu_before = redis_cpu_s(port)
        started = time.perf_counter()
        sender = threading.Thread(target=conn.sendall, args=(b"".join(commands) + tail,))
        sender.start()
        window = b""
        while not window.endswith(expected):
            window = (window + conn.recv(1 << 16))[-len(expected) - 64 :]
        taken = time.perf_counter() - started
        sender.join()
        cpu = redis_cpu_s(port) - cpu_before
    subscriber.close()
    return {"seconds": taken, "cpu_s": cpu}


def sqlite_commits_per_s(folder: str, seconds: float) -> float:
    """Commits/s of a fresh file in ``folder`` in WAL with ``synchronous=FULL``, one row each."""
    path = os.path.join(folder, f"commits-{time.monotonic_ns()}.db")
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute("PRAGMA synchronous = FULL")
        connection.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, data TEXT)")
        payload = "x" * 700  # about a task state's JSON
        count, started = 0, time.perf_counter()
        while time.perf_counter() - started < seconds:
            connection.execute("INSERT INTO t (data) VALUES (?)", (payload,))
            count += 1
        return count / (time.perf_counter() - started)
    finally:
        connection.close()
        for suffix in ("", "-wal", "-shm"):
            with suppress(OSError):
                os.unlink(path + suffix)


# --- the run --------------------------------------------------------------------------------------------


async def measure(tasks: int, callers: int, repeats: int) -> dict[str, Any]:
    """Every figure, in this environment: a JSON-able document."""
    major = servers.mcp_major()
    document: dict[str, Any] = {"major": major, "loadavg_start": loadavg(), "operations": [], "nodes": {}}
    with store_sites() as sites:
        document["skipped"] = dict(sites.skipped)
        captured: list[bytes] = []
        for dialect in dialects_for("ours", major):
            for store in sites.names:
                for shape_callers in (1, callers):
                    keep = (
                        captured if store == "redis" and shape_callers == callers and not captured else None
                    )
                    count = tasks if shape_callers > 1 else max(1, tasks // 5)
                    document["operations"].append(
                        await operations_per_task(sites, store, dialect, shape_callers, count, keep)
                    )
        if "redis" in sites.names and sites.redis_port is not None and captured:
            redis_tasks = next(
                row["tasks"]
                for row in document["operations"]
                if row["store"] == "redis" and row["callers"] > 1
            )
            replay_url = sites.url("redis")
            database = int(replay_url.rsplit("/", 1)[1])
            runs = [
                replay_on_redis(sites.redis_port, database, captured, "mcp-tasks:events")
                for _ in range(repeats)
            ]
            seconds = statistics.median(run["seconds"] for run in runs)
            cpu = statistics.median(run["cpu_s"] for run in runs)
            document["nodes"]["redis"] = {
                "version": sites.redis_version,
                "tasks_replayed": redis_tasks,
                "commands_replayed": len(captured),
                "task_per_s": round(redis_tasks / seconds),
                "command_per_s": round(len(captured) / seconds),
                "cpu_us_per_task": round(cpu / redis_tasks * 1e6, 1),
                "task_per_cpu_s": round(redis_tasks / cpu) if cpu else None,
            }
        rates = [sqlite_commits_per_s(sites.folder, 2.0) for _ in range(repeats)]
        document["nodes"]["sqlite"] = {
            "where": sites.where("sqlite"),
            "commits_per_s": round(statistics.median(rates)),
            "runs": [round(rate) for rate in rates],
        }
    document["loadavg_end"] = loadavg()
    return document


def render(document: dict[str, Any]) -> str:
    """The document as the markdown tables docs/deploy.md quotes."""
    lines = [
        f"mcp{document['major']}; load average at start {document['loadavg_start']}, "
        f"at end {document['loadavg_end']}",
        "",
        "| store | dialect | callers | tasks/s (this process) | store calls per task | "
        "commits / round trips per task | redis-server CPU per task |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in document["operations"]:
        calls = ", ".join(f"{name} {count:g}" for name, count in row["per_task"].items())
        below = "-"
        if "commits_per_task" in row:
            below = f"{row['commits_per_task']:g} commits"
        if "round_trips_per_task" in row:
            below = f"{row['round_trips_per_task']:g} round trips ({row['commands_per_task']:g} commands)"
        cpu = f"{row['redis_cpu_us_per_task']:g} µs" if "redis_cpu_us_per_task" in row else "-"
        lines.append(
            f"| {row['store']} | {row['dialect']} | {row['callers']} | {row['task_per_s']:g} | {calls} | "
            f"{below} | {cpu} |"
        )
    nodes = document["nodes"]
    lines.append("")
    if "redis" in nodes:
        redis = nodes["redis"]
        lines.append(
            f"- Redis {redis['version']}: {redis['commands_replayed']:,} hot-path commands of "
            f"{redis['tasks_replayed']:,} tasks replayed pipelined: {redis['task_per_s']:,} tasks/s "
            f"({redis['command_per_s']:,} commands/s); redis-server CPU {redis['cpu_us_per_task']:g} µs "
            f"per task, {redis['task_per_cpu_s']:,} tasks per CPU-second"
        )
    sqlite = nodes["sqlite"]
    lines.append(
        f"- SQLite ({sqlite['where']}): {sqlite['commits_per_s']:,} commits/s with WAL and "
        f"synchronous=FULL, one row each (runs {sqlite['runs']})"
    )
    for name, reason in document.get("skipped", {}).items():
        lines.append(f"- {name}: skipped ({reason})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.store_cost", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--tasks", type=int, default=600, help="tasks per concurrent measurement")
    parser.add_argument("--callers", type=int, default=50, help="concurrent callers")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each node measurement (median)")
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args(argv)
    servers.quiet_logs()
    document = anyio.run(measure, args.tasks, args.callers, args.repeats)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(document, out, indent=2)
    print(render(document))
    return 0


if __name__ == "__main__":
    sys.exit(main())
