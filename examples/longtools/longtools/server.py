"""The longtools MCP server: ``python -m longtools`` serves it over stdio.

One code path on both SDK majors: ``TaskServer`` is ``FastMCP`` on mcp 1.x and ``MCPServer`` on
mcp 2.x, with tasks installed. The tool reports progress once per frame; the client sees it as
``notifications/progress`` in a plain call and as the task's status message in a task.
"""

from __future__ import annotations

import anyio
import anyio.lowlevel

from mcp_tasks_compat.server import TaskServer, report_progress

__all__ = ["app", "build_app", "main"]


def build_app(*, store: str | None = None) -> TaskServer:
    """A fresh server (tests build one each; ``store`` is where its tasks live, memory by default)."""
    app = TaskServer("longtools", store=store, instructions="render(frames) renders frames, slowly")

    @app.tool(task="optional")
    async def render(frames: int) -> str:
        """Render ``frames`` frames (long: clients may run it as a task)."""
        for frame in range(1, frames + 1):
            await anyio.lowlevel.checkpoint()  # the real per-frame work goes here
            await report_progress(frame, frames, f"frame {frame}/{frames}")
        return f"rendered {frames} frames"

    return app


app = build_app()


def main() -> None:
    app.run()


if __name__ == "__main__":
    main()
