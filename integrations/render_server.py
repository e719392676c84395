"""The server the framework recipes call: ``python render_server.py`` serves it over stdio.

``encode`` is task-required: a framework session without this library's plumbing cannot call it,
so its answer alone already says the call ran as a task. Started by ``wire_relay.py DIR``, it also
writes down, on its own side, what happened (``records.py`` reads it back):

* ``DIR/tools.jsonl``: each tool run as this server saw it (started, each frame, finished or
  cancelled, each with the task id it ran in at that moment, or none: a plain call, or a
  2026-07-28 call still in its inline grace);
* ``DIR/wire.jsonl``: every JSON-RPC request the client sent (``tasks/get``, ``tasks/cancel``...),
  logged by ``wire_relay.py`` in front of this server's process, so reads are counted on the wire.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import anyio

from mcp_tasks_compat.server import TaskServer, current_call, report_progress

app = TaskServer("render-server")
RECORDS_ENV = "RENDER_SERVER_RECORDS"  # the records folder, set by wire_relay.py


def record(event: str, **fields: Any) -> None:
    """Append one line to ``tools.jsonl`` when the server records (a no-op otherwise)."""
    folder = os.environ.get(RECORDS_ENV)
    if folder:
        line = json.dumps({"event": event, "at": time.time(), **fields})
        with open(Path(folder) / "tools.jsonl", "a", encoding="utf-8") as out:
            out.write(line + "\n")


def task_id() -> str | None:
    task = current_call().task
    return task.task_id if task else None


async def frames_of(tool: str, frames: int, seconds: float) -> str | None:
    """Report each frame as progress over ``seconds``; the task id the run ended in (or None)."""
    record("started", tool=tool, task_id=task_id())
    try:
        for frame in range(1, frames + 1):
            await anyio.sleep(seconds / frames)
            await report_progress(frame, frames, f"frame {frame}/{frames}")
            record("frame", tool=tool, frame=frame, task_id=task_id())
    except anyio.get_cancelled_exc_class():
        record("cancelled", tool=tool, task_id=task_id())
        raise
    ended_in = task_id()
    record("finished", tool=tool, task_id=ended_in)
    return ended_in


@app.tool(task="required")
async def encode(frames: int, seconds: float = 0.0) -> str:
    """Encode ``frames`` frames over ``seconds`` (only as a task)."""
    ended_in = await frames_of("encode", frames, seconds)
    return f"encoded {frames} frames in task {ended_in}"


@app.tool(task="optional")
async def render(frames: int, seconds: float = 0.0) -> str:
    """Render ``frames`` frames over ``seconds`` (a task where the client asks for one)."""
    ended_in = await frames_of("render", frames, seconds)
    return f"rendered {frames} frames as {'a task' if ended_in else 'a plain call'}"


if __name__ == "__main__":
    app.run()
