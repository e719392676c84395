"""Where the workers section runs: one ``redis-server``, and a server with its worker processes.

:func:`redis_site` starts a Redis on a free loopback port (a database of its own for each use);
:func:`deployment` runs a server of one kind queueing its tasks in a Redis database and worker
processes taking them (:mod:`benchmarks.worker_apps`), each in its own process, until the block
ends; :func:`read_rss_kib` reads another process's VmRSS.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools.redis_server import RedisServer

from . import clients
from .mechanisms import RequestCounter

__all__ = ["Deployment", "RedisSite", "deployment", "read_rss_kib", "redis_site"]

REDIS_DATABASES = 16  # redis-server's default; each use gets a database of its own
FASTMCP4_APP = Path(__file__).resolve().parent / "worker_apps" / "fastmcp4_app.py"
OURS_APP = "benchmarks.worker_apps.ours_app:app"
OURS_READY = "taking tasks from"  # mcp-tasks-compat worker's ready line (stderr)
FASTMCP4_READY = "Starting worker for"  # fastmcp_tasks.worker_cli's (stdout, once its Docket worker runs)
DOCKET_NAME = "bench-workers"


@dataclass
class RedisSite:
    port: int
    version: str
    _used: int = 0

    def url(self) -> str:
        """A database nobody used yet."""
        if self._used == REDIS_DATABASES:
            raise RuntimeError(f"one Redis gives at most {REDIS_DATABASES} databases")
        self._used += 1
        return f"redis://127.0.0.1:{self.port}/{self._used - 1}"


@contextmanager
def redis_site() -> Iterator[RedisSite | str]:
    """A redis-server for the section, or why there is none (a note)."""
    executable = shutil.which("redis-server")
    if executable is None:
        yield "redis-server not on PATH (apt-get install redis-server)"
        return
    if importlib.util.find_spec("redis") is None:
        yield "redis-py not installed (pip install 'mcp-tasks-compat[redis]')"
        return
    server = RedisServer(executable)
    server.start()
    try:
        yield RedisSite(server.port, server.version())
    finally:
        server.stop()


@dataclass
class Deployment:
    """A server and its workers, running on one Redis database."""

    kind: str
    store: str
    process: clients.ServerProcess
    workers: list[Any]  # subprocess.Popen
    worker_pids: set[int] = field(default_factory=set)

    def connect(self, counter: RequestCounter | None = None) -> Any:
        return clients.connect("http", kind=self.kind, process=self.process, counter=counter)

    def worker_rss_kib(self) -> list[int]:
        return [read_rss_kib(worker.pid) for worker in self.workers]


@asynccontextmanager
async def deployment(
    kind: str, store: str, workers: int, concurrency: int, start_bound_s: float
) -> AsyncIterator[Deployment]:
    """A ``kind`` server queueing in ``store`` and ``workers`` worker processes of ``concurrency``."""
    port = clients.free_port()
    python = sys.executable
    if kind == "ours":
        server_argv = [python, "-m", "benchmarks.worker_apps", "ours", "--port", str(port), "--store", store]
        server_env = {"BENCH_WORKERS_STORE": store}
        worker_argv = [python, "-m", "mcp_tasks_compat", "worker", OURS_APP, "--store", store]
        worker_argv += ["--concurrency", str(concurrency)]
        worker_env = server_env
        ready = OURS_READY
    elif kind == "fastmcp4":
        docket = {"FASTMCP_DOCKET_URL": store, "FASTMCP_DOCKET_NAME": DOCKET_NAME}
        server_argv = [python, "-m", "benchmarks.worker_apps", "fastmcp4", "--port", str(port)]
        server_env = {**docket, "FASTMCP_DOCKET_CONCURRENCY": "0"}
        worker_argv = [python, "-m", "fastmcp_tasks.worker_cli", "worker", f"{FASTMCP4_APP}:mcp"]
        worker_env = {**docket, "FASTMCP_DOCKET_CONCURRENCY": str(concurrency)}
        ready = FASTMCP4_READY
    else:
        raise ValueError(f"the workers section runs ours and fastmcp4, not {kind!r}")
    with (
        clients.http_process(kind, server_argv, port, env=server_env, start_timeout=start_bound_s) as process,
        clients.ready_processes(
            f"{kind}-worker", worker_argv, workers, ready, env=worker_env, start_timeout=start_bound_s
        ) as started,
    ):
        yield Deployment(kind, store, process, started, {worker.pid for worker in started})


def read_rss_kib(pid: int) -> int:
    """VmRSS of process ``pid``, in KiB, from /proc/PID/status."""
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS in /proc/{pid}/status")
