"""The servers under test: the same trivial tools on the raw SDK, on ours, and on the peers.

Every kind serves the same three tools:

* ``job(delay_ms=0, hold=False)``: the task-capable tool. It sleeps ``delay_ms``, then (with
  ``hold``) waits until ``release`` is called, and returns ``time.monotonic()`` at the moment it
  finished, as text (CLOCK_MONOTONIC is system-wide on Linux, so the caller can subtract it from
  its own clock even across processes).
* ``echo(text="")``: a plain tool, never a task.
* ``stats(collect=False)`` / ``release()``: bench control, plain: VmRSS of this process from
  ``/proc/self/status``, how many ``job`` runs are in flight, and (ours only) how many tasks the
  store still holds.

Kinds: ``sdk`` (the installed SDK's own high-level server, no tasks), ``ours`` (the same server with
``ServerTasks``), ``fastmcp4`` (FastMCP 4 + fastmcp-tasks, Docket ``memory://``, mcp 2.x) and
``fastmcp3`` (FastMCP 3 tasks, Docket ``memory://``, mcp 1.x).

Run as a process: ``python -m benchmarks.servers KIND --transport stdio|http [--port N]``.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import importlib.metadata
import importlib.util
import json
import logging
import os
import sys
import time
import tracemalloc
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

import anyio

__all__ = [
    "KINDS",
    "READY_MARKER",
    "BenchState",
    "available_kinds",
    "build",
    "build_with_tasks",
    "mcp_major",
    "memory_streams",
    "ready_pid",
    "serve",
]

KINDS = ("sdk", "ours", "fastmcp4", "fastmcp3")
READY_MARKER = "bench-server-ready"  # then " pid=<the server's pid>"


def ready_pid(log: str) -> int | None:
    """The pid a stdio server's ready line carries (its CPU time is read by it), if it does."""
    _, found, rest = log.partition(f"{READY_MARKER} pid=")
    digits = rest.split(maxsplit=1)[0] if found and rest.strip() else ""
    return int(digits) if digits.isdigit() else None


def quiet_logs() -> None:
    """Per-request INFO logs (the 1.x FastMCP default, httpx, Docket) would be what we measure."""
    for name in ("mcp", "httpx", "httpx2", "fastmcp", "docket", "uvicorn", "FastMCP", "sse_starlette"):
        logging.getLogger(name).setLevel(logging.WARNING)


def mcp_major() -> int:
    return int(importlib.metadata.version("mcp").split(".")[0])


def _has(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def available_kinds() -> list[str]:
    """The kinds this environment can build (peers only where their package is installed)."""
    kinds = ["sdk"]
    try:
        from mcp_tasks_compat import server as _ours

        if hasattr(_ours, "ServerTasks") and _ours_adapter_present():
            kinds.append("ours")
    except ImportError:
        pass
    major = mcp_major()
    if major == 2 and _has("fastmcp") and _has("fastmcp_tasks"):
        kinds.append("fastmcp4")
    if major == 1 and _has("fastmcp") and _has("docket"):
        kinds.append("fastmcp3")
    return kinds


def _ours_adapter_present() -> bool:
    name = "v1.server" if mcp_major() == 1 else "v2.server"
    return importlib.util.find_spec(f"mcp_tasks_compat._adapters.{name}") is not None


def read_rss_kib() -> int:
    """VmRSS of this process, in KiB, from /proc/self/status."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


@dataclass
class BenchState:
    """Process-wide counters the bench tools share (one server per process)."""

    running: int = 0
    peak: int = 0
    finished: int = 0
    release_event: Any = None
    store_size: Any = None  # () -> int | None, set by the ``ours`` builder
    extra: dict[str, Any] = field(default_factory=dict)

    def gate(self) -> Any:
        if self.release_event is None:
            self.release_event = anyio.Event()
        return self.release_event


STATE = BenchState()


async def job(delay_ms: float = 0.0, hold: bool = False) -> str:
    """The task-capable tool: optional sleep, optional hold, returns its completion clock."""
    STATE.running += 1
    STATE.peak = max(STATE.peak, STATE.running)
    try:
        if delay_ms > 0:
            await anyio.sleep(delay_ms / 1000)
        if hold:
            await STATE.gate().wait()
    finally:
        STATE.running -= 1
        STATE.finished += 1
    return repr(time.monotonic())


async def echo(text: str = "") -> str:
    """A plain tool."""
    return text


async def stats(collect: bool = False, trim: bool = False, snapshot: str = "") -> str:
    """Bench control: RSS, runs in flight, tasks still stored (and live objects after a collect).

    ``trim`` also hands free heap pages back to the OS (glibc ``malloc_trim``), which separates
    memory still in use from memory the allocator merely keeps.
    """
    if collect or trim:
        gc.collect()
    if trim:
        _malloc_trim()
    if snapshot and tracemalloc.is_tracing():  # the server run with PYTHONTRACEMALLOC=N
        tracemalloc.take_snapshot().dump(snapshot)
    stored = STATE.store_size() if STATE.store_size is not None else None
    return json.dumps(
        {
            "rss_kib": read_rss_kib(),
            "running": STATE.running,
            "peak": STATE.peak,
            "finished": STATE.finished,
            "stored": stored,
            "gc_objects": len(gc.get_objects()) if collect or trim else None,
        }
    )


def _malloc_trim() -> None:
    if sys.platform == "linux":
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)


async def release() -> str:
    """Bench control: let every held ``job`` finish; later holds wait for the next release."""
    event, STATE.release_event = STATE.gate(), anyio.Event()
    event.set()
    STATE.peak = STATE.running
    return "released"


def build(
    kind: str,
    *,
    ttl_ms: int | None = None,
    concurrency: int | None = None,
    store: str | None = None,
    off: Sequence[str] = (),
) -> Any:
    """Build a server of ``kind`` with the bench tools.

    ``ttl_ms``: ours: the TTL floor (and default TTL) of every task. ``concurrency``: peers: the
    Docket worker's concurrency (their default is 10; a capacity run needs one slot per task).
    ``store``: ours: the task store URL (``memory:`` by default). ``off``: ours: the mechanisms
    of :mod:`.mechanisms` turned off (their ``ServerTasks`` keywords; internal switches are set by
    the server process, :func:`main`).
    """
    return build_with_tasks(kind, ttl_ms=ttl_ms, concurrency=concurrency, store=store, off=off)[0]


def build_with_tasks(
    kind: str,
    *,
    ttl_ms: int | None = None,
    concurrency: int | None = None,
    store: str | None = None,
    off: Sequence[str] = (),
) -> tuple[Any, Any]:
    """:func:`build`, and the ``ServerTasks`` of an ``ours`` server (``None`` for the others)."""
    major = mcp_major()
    STATE.store_size = None  # one server per process, but the smoke run builds several in one
    if kind in ("sdk", "ours"):
        tasks = _ours_tasks(ttl_ms, store, off) if kind == "ours" else None
        return _build_sdk(major, tasks), tasks
    if off:
        raise ValueError(f"off= is for our server only, not {kind!r}")
    if store is not None:
        raise ValueError(f"store= is for our server only, not {kind!r}")
    if kind == "fastmcp4":
        return _build_fastmcp4(concurrency=concurrency), None
    if kind == "fastmcp3":
        return _build_fastmcp3(concurrency=concurrency), None
    raise ValueError(f"unknown server kind {kind!r}; expected one of {KINDS}")


def _ours_tasks(ttl_ms: int | None, store: str | None, off: Sequence[str] = ()) -> Any:
    from mcp_tasks_compat.server import ServerTasks

    from .mechanisms import server_kwargs

    # The capacity section holds 10,000 tasks of one owner (unauthenticated 2026-07-28 callers
    # share one), ten times the default per-owner limit: raised, since the limit is not measured.
    kwargs: dict[str, Any] = {
        "tools": {"job": "optional"},
        "max_active_tasks_per_owner": 1_000_000,
        **server_kwargs(off),
    }
    if ttl_ms is not None:
        kwargs["ttl_floor_ms"] = ttl_ms
    if store is not None:
        kwargs["store"] = store
    tasks = ServerTasks(**kwargs)
    store = tasks.engine.store
    if hasattr(store, "__len__"):
        STATE.store_size = lambda: len(store)
    return tasks


def _build_sdk(major: int, tasks: Any) -> Any:
    if major == 1:
        from mcp.server.fastmcp import FastMCP

        server: Any = FastMCP("bench", log_level="WARNING")
    else:
        from mcp.server.mcpserver import MCPServer

        kwargs: dict[str, Any] = {"log_level": "WARNING"}
        server = MCPServer("bench", **(tasks.mcpserver_kwargs(**kwargs) if tasks is not None else kwargs))
    for tool in (job, echo, stats, release):
        server.tool()(tool)
    if tasks is not None and major == 1:
        tasks.install(server)
    return server


def _build_fastmcp4(*, concurrency: int | None) -> Any:
    from fastmcp import FastMCP
    from fastmcp_tasks import TasksExtension

    server = FastMCP("bench")
    extension_kwargs: dict[str, Any] = {"url": "memory://"}
    if concurrency is not None:
        extension_kwargs["concurrency"] = concurrency
    server.add_extension(TasksExtension(**extension_kwargs))
    server.tool(task=True)(job)
    for tool in (echo, stats, release):
        server.tool()(tool)
    return server


def _build_fastmcp3(*, concurrency: int | None) -> Any:
    import fastmcp
    from fastmcp import FastMCP

    fastmcp.settings.docket.url = "memory://"
    if concurrency is not None:
        fastmcp.settings.docket.concurrency = concurrency
    server = FastMCP("bench")
    server.tool(task=True)(job)
    for tool in (echo, stats, release):
        server.tool()(tool)
    return server


# --- in-process (memory) connection -------------------------------------------------------------


@asynccontextmanager
async def memory_streams(kind: str, server: Any) -> AsyncIterator[tuple[Any, Any]]:
    """Client (read, write) streams to ``server`` running in this process over JSON-RPC streams."""
    from mcp.shared.memory import create_client_server_memory_streams

    if kind in ("fastmcp4", "fastmcp3"):
        lowlevel = server._mcp_server
        lifespan: Any = server._lifespan_manager()
    elif mcp_major() == 1:
        lowlevel = server._mcp_server
        lifespan = _null_lifespan()
    else:
        lowlevel = server._lowlevel_server
        lifespan = _null_lifespan()
    async with (
        lifespan,
        create_client_server_memory_streams() as (client_streams, server_streams),
        anyio.create_task_group() as group,
    ):
        options = lowlevel.create_initialization_options()
        group.start_soon(lambda: lowlevel.run(server_streams[0], server_streams[1], options))
        try:
            yield client_streams
        finally:
            group.cancel_scope.cancel()


@asynccontextmanager
async def _null_lifespan() -> AsyncIterator[None]:
    yield


# --- as a process -------------------------------------------------------------------------------


def http_app(kind: str, server: Any) -> Any:
    if kind in ("fastmcp4", "fastmcp3"):
        return server.http_app()
    return server.streamable_http_app()


async def serve(
    kind: str,
    transport: str,
    port: int,
    *,
    ttl_ms: int | None,
    concurrency: int | None,
    store: str | None = None,
    off: Sequence[str] = (),
) -> None:
    if off:
        from .mechanisms import apply_internal

        apply_internal(off, mcp_major())
    server = build(kind, ttl_ms=ttl_ms, concurrency=concurrency, store=store, off=off)
    quiet_logs()
    if transport == "stdio":
        # The client waits for this line before it negotiates: a slow import must not eat the
        # negotiation's time bound.
        print(f"{READY_MARKER} pid={os.getpid()}", file=sys.stderr, flush=True)
        if kind in ("fastmcp4", "fastmcp3"):
            await server.run_stdio_async(show_banner=False)
        else:
            await server.run_stdio_async()
        return
    import uvicorn

    config = uvicorn.Config(
        http_app(kind, server),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=2,  # the bench is stopping it: do not wait on open sessions
    )
    await uvicorn.Server(config).serve()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.servers")
    parser.add_argument("kind", choices=KINDS)
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--ttl-ms", type=int, default=None)
    parser.add_argument("--concurrency", type=int, default=None)
    parser.add_argument("--store", default=None, help="ours: the task store URL (memory: by default)")
    parser.add_argument(
        "--off", default="", help="ours: mechanisms turned off, comma-separated (grace,hints,...)"
    )
    args = parser.parse_args(argv)
    if args.kind.startswith("fastmcp"):
        os.environ.setdefault("FASTMCP_SHOW_SERVER_BANNER", "false")
        os.environ.setdefault("FASTMCP_LOG_LEVEL", "WARNING")
    with suppress(KeyboardInterrupt):
        anyio.run(
            lambda: serve(
                args.kind,
                args.transport,
                args.port,
                ttl_ms=args.ttl_ms,
                concurrency=args.concurrency,
                store=args.store,
                off=tuple(name for name in args.off.split(",") if name),
            )
        )
    sys.exit(0)


if __name__ == "__main__":
    main()
