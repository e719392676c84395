"""The chaos scenarios' replica: one tool, ``work``, declared safe to run again, that leaves marks.

``python tests/chaos/server.py --store URL --marks PATH --lease-s S --reruns N``: serves over HTTP
on a free port; once it listens, prints ``clock <time.time()>`` (so the harness can check a clock
skew it asked for) and ``listening on <url>`` on stderr.

``work(label, seconds, rerun_seconds, step_s)`` runs as a task (always: ``task="required"``, no
inline grace) for ``seconds`` (``rerun_seconds`` when it is a re-run), in steps of ``step_s``,
and appends marks to the marks file, one JSON line each, with ``O_APPEND`` (one ``write`` per
line, so lines from several processes never interleave): ``start`` when it begins, ``beat``
after every step, ``end`` when it returns, ``stop`` when it is cancelled. A mark carries the task
id, the label, this run's id, the process id, the attempt (from the re-run's status message,
"attempt N of M: ..."; 1 otherwise) and the wall time (``time.time()`` minus
``CHAOS_CLOCK_OFFSET_S``, the skew the harness put on this process, so every process's marks are
on one clock; or, with ``CHAOS_MONOTONIC_ANCHOR_S``, the monotonic clock plus that anchor, for a
clock stepped while the process runs). Steps are counted, not timed: a paused process does not
use up its run while it is stopped. The result names the run, so the harness can tell whose
outcome a task kept.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import secrets
import sys
import time
from typing import Any

import anyio

from mcp_tasks_compat._adapters import get_adapter
from mcp_tasks_compat.server import TaskServer, current_call, report_status

CLOCK_OFFSET_ENV = "CHAOS_CLOCK_OFFSET_S"
"""Seconds this process's wall clock is ahead of the real one (set with the faketime offset)."""
MONOTONIC_ANCHOR_ENV = "CHAOS_MONOTONIC_ANCHOR_S"
"""Set (the harness's ``time.time() - time.monotonic()``): marks take their time from the monotonic
clock, which libfaketime leaves true, so a clock stepped while the process runs moves no mark."""
LOG_ENV = "CHAOS_LOG"
"""Set (to anything): the replica logs the engine's INFO lines on stderr (which runs it starts again)."""
RESULT_FORMAT = "{label} done by run {run} (pid {pid}, attempt {attempt})"
"""The tool's result; :mod:`tests.chaos.marks` reads the run back out of it."""
_ATTEMPT = re.compile(r"attempt (\d+) of \d+")

PID = os.getpid()
OFFSET_S = float(os.environ.get(CLOCK_OFFSET_ENV, "0") or 0)
ANCHOR_S = os.environ.get(MONOTONIC_ANCHOR_ENV)


def real_time() -> float:
    if ANCHOR_S is not None:
        return time.monotonic() + float(ANCHOR_S)
    return time.time() - OFFSET_S


class Marks:
    """The marks file, opened once for appending."""

    def __init__(self, path: str) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def write(self, kind: str, **fields: Any) -> None:
        line = json.dumps({"k": kind, "t": real_time(), "pid": PID, **fields}, separators=(",", ":"))
        os.write(self._fd, (line + "\n").encode())


def _attempt(status_message: str | None) -> int:
    found = _ATTEMPT.search(status_message or "")
    return int(found.group(1)) if found else 1


def build(args: argparse.Namespace) -> TaskServer:
    marks = Marks(args.marks)
    app = TaskServer(
        "chaos",
        store=args.store,
        lease_s=args.lease_s,
        inline_grace_s=0,
        unauthenticated_2025_scope="task_id",
    )

    @app.tool(task="required", reruns=args.reruns)
    async def work(label: str, seconds: float, rerun_seconds: float, step_s: float) -> str:
        """Run for ``seconds`` (a re-run: ``rerun_seconds``) in steps of ``step_s``, leaving marks."""
        task = current_call().task
        attempt = _attempt(task.status_message if task is not None else None)
        me = {
            "task": task.task_id if task is not None else None,
            "label": label,
            "run": f"{PID}-{secrets.token_hex(3)}",
            "attempt": attempt,
        }
        marks.write("start", **me)
        steps = max(1, round((seconds if attempt == 1 else rerun_seconds) / step_s))
        try:
            await report_status(f"{label}: run {me['run']} started (attempt {attempt})")
            for _ in range(steps):
                await anyio.sleep(step_s)
                marks.write("beat", **me)
        except anyio.get_cancelled_exc_class():
            marks.write("stop", **me)
            raise
        marks.write("end", **me)
        return RESULT_FORMAT.format(pid=PID, **me)

    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True)
    parser.add_argument("--marks", required=True)
    parser.add_argument("--lease-s", type=float, required=True)
    parser.add_argument("--reruns", type=int, default=3)
    args = parser.parse_args()
    if os.environ.get(LOG_ENV):
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s {PID} %(name)s %(message)s")
    app = build(args)

    def listening(url: str) -> None:
        print(f"clock {time.time()!r}", file=sys.stderr, flush=True)
        print(f"listening on {url}", file=sys.stderr, flush=True)

    serve = get_adapter().app.serve_http
    anyio.run(lambda: serve(app.sdk_server, host="127.0.0.1", port=0, on_listening=listening))


if __name__ == "__main__":
    main()
