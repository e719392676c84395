"""Our side: the sleep tool on a ``TaskServer`` whose task runs are queued for workers.

``app`` (for ``mcp-tasks-compat worker benchmarks.worker_apps.ours_app:app``) is built on the
store named by ``BENCH_WORKERS_STORE`` (the worker's ``--store`` names it as well).
"""

from __future__ import annotations

import os

from benchmarks.worker_apps.sleep_tool import sleep_job
from mcp_tasks_compat.server import TaskServer

__all__ = ["STORE_ENV", "app", "build"]

STORE_ENV = "BENCH_WORKERS_STORE"


def build(store: str) -> TaskServer:
    """The sleep tool, task-optional, its runs queued in ``store`` (``run_on="workers"``)."""
    server = TaskServer("bench-workers", store=store, run_on="workers")
    server.tool(task="optional")(sleep_job)
    return server


app = build(os.environ.get(STORE_ENV, "redis://127.0.0.1:6379/0"))
