"""``worker``: run a server app's queued task runs (``run_on="workers"``) from the store's queue."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from dataclasses import dataclass
from functools import partial
from types import ModuleType

from .._engine import DEFAULT_LEASE_S
from .._engine.stores.echo import printable, shown_url
from .._engine.workers import WorkerRuns
from .._worker import (
    DEFAULT_CONCURRENCY,
    DEFAULT_GRACE_S,
    ServesWhenImported,
    importing_for_a_worker,
    serve_worker,
)
from ..errors import CompatError, TaskStoreError
from ..server import TaskServer
from .common import EXIT_USAGE
from .failures import run_service
from .serve import example_app, with_metrics

__all__ = ["WorkerOptions", "load_app", "run_worker"]


@dataclass(frozen=True)
class WorkerOptions:
    target: str | None
    """``MODULE:ATTR`` (or ``path/to/server.py:ATTR``); ``None`` with ``example``."""
    store: str | None
    example: bool = False
    concurrency: int = DEFAULT_CONCURRENCY
    grace_s: float = DEFAULT_GRACE_S
    lease_s: float = DEFAULT_LEASE_S
    """The example app's lease (``--example`` only: an app of yours says its own)."""
    metrics_port: int | None = None
    """Serve the metrics in Prometheus text form on ``metrics_host:metrics_port``."""
    metrics_host: str = "127.0.0.1"


class AppNotFound(Exception):
    """``MODULE:ATTR`` names no :class:`TaskServer`: said in one line, with what was found."""


def _module(name: str) -> ModuleType:
    if name.endswith(".py") or os.sep in name:
        path = os.path.abspath(name)
        spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
        if spec is None or spec.loader is None or not os.path.isfile(path):
            raise AppNotFound(f"no Python file {printable(name)}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        return module
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # `worker server:app` from the project folder, as uvicorn does
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        raise AppNotFound(f"cannot import {printable(name)}: {exc}") from None


def load_app(target: str) -> TaskServer:
    """The :class:`TaskServer` named by ``MODULE:ATTR`` (``ATTR`` defaults to ``app``)."""
    module_name, _, attribute = target.partition(":")
    with importing_for_a_worker(target):  # an app.run() there is refused, with the fix
        module = _module(module_name)
    found = getattr(module, attribute or "app", None)
    if not isinstance(found, TaskServer):
        what = "nothing" if found is None else f"a {type(found).__name__}"
        raise AppNotFound(
            f"{printable(target)} is {what}, not a mcp_tasks_compat.server.TaskServer: point the worker "
            "at the TaskServer your server serves (MODULE:ATTR)"
        )
    return found


def run_worker(options: WorkerOptions) -> int:
    """``worker``: until SIGTERM/SIGINT; then the runs get ``grace_s`` and the rest go back to the queue."""
    return with_metrics(
        options.metrics_port, options.metrics_host, partial(_work, options), prefix="worker: "
    )


def _work(options: WorkerOptions) -> int:
    try:
        if options.example:
            app = example_app(store=options.store or "memory:", lease_s=options.lease_s, run_on="here")
        elif options.target is not None:
            app = load_app(options.target)
        else:
            print("mcp-tasks-compat: worker needs MODULE:ATTR or --example", file=sys.stderr)
            return EXIT_USAGE
    except (AppNotFound, ServesWhenImported, ValueError, CompatError) as error:
        message = error.message if isinstance(error, CompatError) else str(error)
        print(f"mcp-tasks-compat: worker: {message.splitlines()[0]}", file=sys.stderr)
        return EXIT_USAGE

    def ready(runs: WorkerRuns) -> None:
        where = shown_url(options.store) if options.store else "the app's store"
        print(
            f"worker {runs.worker_id} taking tasks from {where}, {runs.concurrency} at a time",
            file=sys.stderr,
            flush=True,
        )

    serve = partial(
        serve_worker,
        app.tasks,
        app.sdk_server,
        lifespan=app._lifespan,  # pyright: ignore[reportPrivateUsage]
        store=options.store,
        concurrency=options.concurrency,
        grace_s=options.grace_s,
        on_ready=ready,
    )

    def refusal(leaf: BaseException) -> str | None:
        return str(leaf).splitlines()[0] if isinstance(leaf, (TaskStoreError, ValueError)) else None

    return run_service(serve, refusal=refusal, prefix="worker: ")
