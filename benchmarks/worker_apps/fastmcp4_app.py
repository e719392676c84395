"""FastMCP 4's side: the sleep tool as a ``task=True`` tool of ``TasksExtension()`` (Docket).

Docket is configured by the environment (``FASTMCP_DOCKET_URL``, ``FASTMCP_DOCKET_NAME``,
``FASTMCP_DOCKET_CONCURRENCY``): the server process runs with a concurrency of 0 (its embedded
Docket worker then takes nothing; fastmcp-tasks 4.1.4 has no switch to leave it out), the worker
processes (``python -m fastmcp_tasks.worker_cli worker benchmarks/worker_apps/fastmcp4_app.py:mcp``)
with theirs.
"""

from __future__ import annotations

from fastmcp import FastMCP
from fastmcp_tasks import TasksExtension

from benchmarks.worker_apps.sleep_tool import sleep_job

__all__ = ["mcp"]

mcp = FastMCP("bench-workers")
mcp.add_extension(TasksExtension())
mcp.tool(task=True)(sleep_job)
