"""The apps of the workers section: one sleep tool, queued by a server and run by worker processes.

Both sides serve the same tool body (:func:`.sleep_tool.sleep_job`), on one Redis:

* ours (:mod:`.ours_app`): a :class:`~mcp_tasks_compat.server.TaskServer` with
  ``run_on="workers"``, served over streamable HTTP (``python -m benchmarks.worker_apps ours``);
  its workers are ``mcp-tasks-compat worker benchmarks.worker_apps.ours_app:app --store URL``.
* FastMCP 4 (:mod:`.fastmcp4_app`): FastMCP 4 with fastmcp-tasks' ``TasksExtension()``, its
  Docket configured from ``FASTMCP_DOCKET_URL`` / ``FASTMCP_DOCKET_NAME`` /
  ``FASTMCP_DOCKET_CONCURRENCY`` (``python -m benchmarks.worker_apps fastmcp4``); its workers are
  ``python -m fastmcp_tasks.worker_cli worker benchmarks/worker_apps/fastmcp4_app.py:mcp``.

The modules import nothing of the benchmarks' own (the FastMCP worker loads its app by file path).
"""
