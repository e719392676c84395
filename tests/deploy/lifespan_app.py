"""The one-host tests' app (issue 41): a ``TaskServer`` whose ``lifespan=`` opens a resource, and a
tool declared safe to run again that reads it; both sides of a deployment, as worker_app.py.

* a server: ``python -m tests.deploy.lifespan_app`` serves ``app`` over HTTP on a free loopback
  port and prints ``listening on <url>`` on stderr;
* a worker: ``mcp-tasks-compat worker tests.deploy.lifespan_app:app`` runs its queued task runs.

Settings from the environment: ``LIFESPAN_APP_STORE`` (store URL), ``LIFESPAN_APP_MARKS`` (the
marks file), ``LIFESPAN_APP_LEASE_S`` (default 1), ``LIFESPAN_APP_RUN_ON`` (``here`` or
``workers``, where ``tally`` runs). Every mark is one line ``WHAT LABEL PID`` appended with one
``os.write`` (``O_APPEND``), so the lines of several processes never interleave: ``open - PID`` and
``close - PID`` when the lifespan is entered and left, ``start LABEL PID`` when a run of ``tally``
starts, ``end LABEL PID`` when it returns. A run's first start waits until its process is killed
(the run is lost), or, for a label starting with ``wait``, until the file ``MARKS.go`` exists;
any later start finishes at once. The result says which process ran it and whether the resource
it read was still open.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final, Literal

import anyio

from mcp_tasks_compat._adapters import get_adapter
from mcp_tasks_compat.server import TaskServer, current_call, report_status

__all__ = ["Pool", "app", "mark", "marks"]

STORE: Final = os.environ["LIFESPAN_APP_STORE"]
MARKS: Final = Path(os.environ["LIFESPAN_APP_MARKS"])
LEASE_S: Final = float(os.environ.get("LIFESPAN_APP_LEASE_S", "1"))
RUN_ON: Final[Literal["here", "workers"]] = (
    "workers" if os.environ.get("LIFESPAN_APP_RUN_ON") == "workers" else "here"
)
PID: Final = os.getpid()


def mark(what: str, label: str = "-") -> None:
    fd = os.open(MARKS, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{what} {label} {PID}\n".encode())
    finally:
        os.close(fd)


def marks() -> list[tuple[str, str, int]]:
    """Every mark so far: ``(what, label, pid)``."""
    found: list[tuple[str, str, int]] = []
    for line in MARKS.read_text().splitlines():
        what, label, pid = line.split()
        found.append((what, label, int(pid)))
    return found


class Pool:
    """What a lifespan opens (a database pool, say): open until the lifespan is left."""

    def __init__(self) -> None:
        self.closed = False


@asynccontextmanager
async def lifespan(server: Any) -> AsyncGenerator[dict[str, Any]]:
    pool = Pool()
    mark("open")
    try:
        yield {"pool": pool}
    finally:
        pool.closed = True
        mark("close")


app = TaskServer(
    "lifespan-app",
    store=STORE,
    lease_s=LEASE_S,
    unauthenticated_2025_scope="task_id",
    inline_grace_s=0,
    lifespan=lifespan,
)


@app.tool(task="optional", reruns=1, run_on=RUN_ON)
async def tally(label: str) -> str:
    """Marks its start; its first run waits (see the module docstring); says who ran it."""
    first = not any(what == "start" and seen == label for what, seen, _pid in marks())
    mark("start", label)
    await report_status(f"{label} started in {PID}")
    if first and label.startswith("wait"):
        go = MARKS.with_suffix(".go")
        while not go.exists():  # noqa: ASYNC110 - a file from another process: nothing to wait on
            await anyio.sleep(0.05)
    elif first:
        await anyio.sleep_forever()  # lost: this process is killed
    pool: Pool = current_call().lifespan_context["pool"]
    mark("end", label)
    return f"{label} by {PID}, pool {'closed' if pool.closed else 'open'}"


def _listening(url: str) -> None:
    print(f"listening on {url}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    serve = get_adapter().app.serve_http
    anyio.run(lambda: serve(app.sdk_server, host="127.0.0.1", port=0, on_listening=_listening))
