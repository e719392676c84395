"""The workers' tests' app: a ``TaskServer`` whose runs are queued for workers; its tools leave marks.

The same module is both sides of a deployment, as an application's would be:

* the server: ``python -m tests.deploy.worker_app`` (from the repository root) serves ``app`` over
  HTTP on a free loopback port and prints ``listening on <url>`` on stderr;
* a worker: ``mcp-tasks-compat worker tests.deploy.worker_app:app --store URL`` imports ``app`` and
  runs its queued task runs.

Both read their settings from the environment (a worker's command line belongs to the worker):
``WORKER_APP_STORE`` (the store URL, required), ``WORKER_APP_MARKS`` (the marks file, required),
``WORKER_APP_LEASE_S`` (the lease of a run's claim; default 30) and ``WORKER_APP_METRICS_PORT``
(if set: the process serves its metrics in Prometheus text form on ``127.0.0.1:PORT``, through a
meter provider set before the app is built, as docs/deploy.md tells a worker's module to do).

``work`` (never run again) and ``redo`` (declared safe to run again, ``reruns=2``) both take
``(label, seconds, rerun_seconds, step_s)``: they run ``seconds`` (``rerun_seconds`` when an
earlier run of the same task left a ``start`` mark: a re-run, or a run given back by a stopping
worker) in steps of ``step_s``, reporting ``report_progress(step, steps, "LABEL: step i/n")``
after each. Every run appends marks to the marks file in the format of ``tests/chaos/server.py``
(one JSON line per ``os.write`` with ``O_APPEND``, so lines of several processes never
interleave; :class:`tests.chaos.marks.MarksFile` reads them): ``start``, ``beat`` after each step,
``end`` when it returns, ``stop`` when it is cancelled. ``attempt`` in a mark is the run's number
for its task as counted from the marks (1 for the first run), and the result names the run
(``tests.chaos.server.RESULT_FORMAT``).
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import time
from pathlib import Path
from typing import Any, Final

import anyio

from mcp_tasks_compat._adapters import get_adapter
from mcp_tasks_compat.server import TaskServer, current_call, report_progress

__all__ = ["LEASE_ENV", "MARKS_ENV", "METRICS_ENV", "RESULT_FORMAT", "STORE_ENV", "app"]

STORE_ENV: Final = "WORKER_APP_STORE"
MARKS_ENV: Final = "WORKER_APP_MARKS"
LEASE_ENV: Final = "WORKER_APP_LEASE_S"
METRICS_ENV: Final = "WORKER_APP_METRICS_PORT"
RESULT_FORMAT: Final = "{label} done by run {run} (pid {pid}, attempt {attempt})"
"""As ``tests.chaos.server.RESULT_FORMAT``: ``tests.chaos.marks.result_run`` reads the run back."""

PID: Final = os.getpid()
MONOTONIC_ANCHOR_ENV: Final = "CHAOS_MONOTONIC_ANCHOR_S"
"""As ``tests.chaos.server``: set (the harness's ``time.time() - time.monotonic()``), marks take
their time from the monotonic clock, true under libfaketime, so a worker whose wall clock is
skewed or stepped leaves marks on the harness's clock."""
_ANCHOR_S: Final = os.environ.get(MONOTONIC_ANCHOR_ENV)


def _now() -> float:
    return time.time() if _ANCHOR_S is None else time.monotonic() + float(_ANCHOR_S)


class Marks:
    """The marks file, opened once for appending (and read back to count a task's earlier runs)."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def write(self, kind: str, **fields: Any) -> None:
        line = json.dumps({"k": kind, "t": _now(), "pid": PID, **fields}, separators=(",", ":"))
        os.write(self._fd, (line + "\n").encode())

    def starts(self, task_id: str | None) -> int:
        """How many runs of ``task_id`` started before (in any process)."""
        lines = self.path.read_text(encoding="utf-8").splitlines()
        return sum(
            1
            for line in lines
            if line and (mark := json.loads(line))["k"] == "start" and mark["task"] == task_id
        )


def _serve_metrics(port: int) -> None:
    from opentelemetry import metrics
    from opentelemetry.exporter.prometheus import PrometheusMetricReader
    from opentelemetry.sdk.metrics import MeterProvider
    from prometheus_client import start_http_server

    metrics.set_meter_provider(MeterProvider(metric_readers=[PrometheusMetricReader()]))
    start_http_server(port, addr="127.0.0.1")


if os.environ.get(METRICS_ENV):
    _serve_metrics(int(os.environ[METRICS_ENV]))

MARKS = Marks(os.environ[MARKS_ENV])

app = TaskServer(
    "workers-test",
    store=os.environ[STORE_ENV],
    lease_s=float(os.environ.get(LEASE_ENV, "30")),
    run_on="workers",
    unauthenticated_2025_scope="task_id",
)


async def _run(label: str, seconds: float, rerun_seconds: float, step_s: float) -> str:
    task = current_call().task
    task_id = task.task_id if task is not None else None
    attempt = MARKS.starts(task_id) + 1
    me = {"task": task_id, "label": label, "run": f"{PID}-{secrets.token_hex(3)}", "attempt": attempt}
    MARKS.write("start", **me)
    steps = max(1, round((seconds if attempt == 1 else rerun_seconds) / step_s))
    try:
        for step in range(1, steps + 1):
            await anyio.sleep(step_s)
            MARKS.write("beat", **me)
            await report_progress(step, steps, f"{label}: step {step}/{steps}")
    except anyio.get_cancelled_exc_class():
        MARKS.write("stop", **me)
        raise
    MARKS.write("end", **me)
    return RESULT_FORMAT.format(pid=PID, **me)


@app.tool(task="required")
async def work(label: str, seconds: float, rerun_seconds: float, step_s: float) -> str:
    """Run, leaving marks; a lost run is failed (not declared safe to run again)."""
    return await _run(label, seconds, rerun_seconds, step_s)


@app.tool(task="required", reruns=2)
async def redo(label: str, seconds: float, rerun_seconds: float, step_s: float) -> str:
    """Run, leaving marks; a lost run is queued again, up to twice."""
    return await _run(label, seconds, rerun_seconds, step_s)


def _listening(url: str) -> None:
    print(f"listening on {url}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    serve = get_adapter().app.serve_http
    anyio.run(lambda: serve(app.sdk_server, host="127.0.0.1", port=0, on_listening=_listening))
