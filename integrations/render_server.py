"""The server the framework recipes call: ``python render_server.py [--records DIR]`` serves it over stdio.

``encode`` is task-required: a framework session without this library's plumbing cannot call it,
so its answer alone already says the call ran as a task. With ``--records DIR`` the server also
writes down, on its own side, what happened (``records.py`` reads it back):

* ``DIR/tools.jsonl``: each tool run as this server saw it (started, each frame, finished or
  cancelled, each with the task id it ran in at that moment, or none: a plain call, or a
  2026-07-28 call still in its inline grace);
* ``DIR/wire.jsonl``: every JSON-RPC request the client sent (``tasks/get``, ``tasks/cancel``...),
  logged by a relay in front of the real server process, so reads are counted on the wire.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

import anyio

from mcp_tasks_compat.server import TaskServer, current_task, report_progress

app = TaskServer("render-server")
RECORDS_ENV = "RENDER_SERVER_RECORDS"  # set by the relay for the real server process only


def record(event: str, **fields: Any) -> None:
    """Append one line to ``tools.jsonl`` when the server records (a no-op otherwise)."""
    folder = os.environ.get(RECORDS_ENV)
    if folder:
        line = json.dumps({"event": event, "at": time.time(), **fields})
        with open(Path(folder) / "tools.jsonl", "a", encoding="utf-8") as out:
            out.write(line + "\n")


def task_id() -> str | None:
    task = current_task()
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


def _pump(source: IO[bytes], sink: IO[bytes], log: Path | None) -> None:
    """Copy newline-delimited JSON-RPC from ``source`` to ``sink``, logging each request's method."""
    for line in iter(source.readline, b""):
        if log is not None:
            try:
                message = json.loads(line)
            except ValueError:
                message = None
            if isinstance(message, dict) and "method" in message:
                entry = {"method": message["method"], "id": message.get("id"), "at": time.time()}
                with open(log, "a", encoding="utf-8") as out:
                    out.write(json.dumps(entry) + "\n")
        sink.write(line)
        sink.flush()
    sink.close()


def relay(records: Path) -> int:
    """Run the real server as a child, logging the client's requests on the way in."""
    import subprocess

    records.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, RECORDS_ENV: str(records)}
    child = subprocess.Popen(
        [sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
    )
    assert child.stdin is not None
    assert child.stdout is not None
    inbound = threading.Thread(
        target=_pump, args=(sys.stdin.buffer, child.stdin, records / "wire.jsonl"), daemon=True
    )
    inbound.start()
    _pump(child.stdout, sys.stdout.buffer, None)
    return child.wait()


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--records":
        sys.exit(relay(Path(sys.argv[2])))
    app.run()
