"""A ``TaskServer`` run by its own ``run()`` in a subprocess: ``python task_server_app.py stdio|http``.

Over HTTP it listens on a free port (``port=0``); uvicorn names it on stderr once it listens
(``log_level="INFO"``), which the test reads.
"""

from __future__ import annotations

import sys

from mcp_tasks_compat.server import TaskServer, report_progress, report_status

app = TaskServer("task-server-app", instructions="render frames", log_level="INFO")


@app.tool(task="optional")
async def render(frames: int) -> str:
    """Render ``frames`` frames, reporting each."""
    for frame in range(1, frames + 1):
        await report_status(f"frame {frame}/{frames}")
    await report_progress(frames, frames, "rendered")
    return f"rendered {frames}"


@app.tool()  # task="forbidden", the default: never a task
def version() -> str:
    """The renderer's version."""
    return "1.0"


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        app.run()
    else:
        app.run(transport="streamable-http", host="127.0.0.1", port=0)
