"""A server whose ``tally`` tool is declared safe to run again (``reruns=2``) and whose ``once`` is not.

``python rerun_server.py SQLITE_PATH MARKS_PATH [LEASE_S]``: serves over HTTP on a free port and
prints ``listening on <url>``. Each tool appends its label to ``MARKS_PATH`` when it starts (the
test's proof, on the server side, of how many times the work really ran), says so in its status,
and on its first start waits until the process is stopped; a later start finishes at once.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import anyio.to_thread

from mcp_tasks_compat._adapters import get_adapter
from mcp_tasks_compat.server import TaskServer, current_call, report_status

STORE, MARKS = sys.argv[1], Path(sys.argv[2])
LEASE_S = float(sys.argv[3]) if len(sys.argv) > 3 else 2.0


def _mark(label: str) -> int:
    with MARKS.open("a") as marks:
        marks.write(label + "\n")
    return MARKS.read_text().splitlines().count(label)


async def _started(label: str) -> tuple[int, str | None]:
    task = current_call().task
    status = task.status_message if task is not None else None  # before this run says anything
    starts = await anyio.to_thread.run_sync(_mark, label)
    await report_status(f"{label} started ({starts})")
    if starts == 1:
        await anyio.sleep_forever()  # the first run is lost: its server is killed or stopped
    return starts, status


app = TaskServer("rerun", store=f"sqlite:///{STORE}", lease_s=LEASE_S, unauthenticated_2025_scope="task_id")


@app.tool(task="optional", reruns=2)
async def tally(label: str) -> str:
    starts, status = await _started(label)
    return f"{label} finished at start {starts}; status was {status!r}"


@app.tool(task="optional")
async def once(label: str) -> str:
    starts, _status = await _started(label)
    return f"{label} finished at start {starts}"


def _listening(url: str) -> None:
    print(f"listening on {url}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    serve = get_adapter().app.serve_http
    anyio.run(lambda: serve(app.sdk_server, host="127.0.0.1", port=0, on_listening=_listening))
