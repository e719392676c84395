"""The server the framework recipes call: ``python render_server.py`` serves it over stdio.

``encode`` is task-required: a framework session without this library's plumbing cannot call it,
so its answer proves the call ran as a task.
"""

from __future__ import annotations

from mcp_tasks_compat.server import TaskServer, current_task, report_status

app = TaskServer("render-server")


@app.tool(task="required")
async def encode(frames: int) -> str:
    """Encode ``frames`` frames (only as a task)."""
    for frame in range(1, frames + 1):
        await report_status(f"frame {frame}/{frames}")
    task = current_task()
    return f"encoded {frames} frames in task {task.task_id if task else None}"


@app.tool(task="optional")
async def render(frames: int) -> str:
    """Render ``frames`` frames (a task where the client asks for one)."""
    for frame in range(1, frames + 1):
        await report_status(f"frame {frame}/{frames}")
    return f"rendered {frames} frames as {'a task' if current_task() else 'a plain call'}"


if __name__ == "__main__":
    app.run()
