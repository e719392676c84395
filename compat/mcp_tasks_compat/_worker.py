"""A worker process: the task tools of a server's app, run from the store's queue, no MCP listener.

``mcp-tasks-compat worker MODULE:ATTR --store URL`` and :meth:`.server.TaskServer.run_worker` come
here. The worker imports the same :class:`~.server.TaskServer` the server serves (its tools, their
``reruns=``, the lease), opens an engine of its own on the shared store, and runs its background
(lease renewal, the notifier or, on SQLite, polling of the runs it holds, the sweeper) beside the
take loop (:class:`~._engine.workers.WorkerRuns`). A stop (SIGTERM, SIGINT, or ``stop`` set)
stops the taking, lets the runs finish within ``grace_s``, gives the rest back to the queue, and
returns once every outcome is written.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable, Generator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Final

import anyio

from ._adapters import get_adapter
from ._engine import TaskEngine, TaskPolicy
from ._engine.stores import TaskStore, store_from_url
from ._engine.workers import WorkerRuns

__all__ = [
    "DEFAULT_CONCURRENCY",
    "DEFAULT_GRACE_S",
    "ServesWhenImported",
    "importing_for_a_worker",
    "refuse_serving_on_import",
    "serve_worker",
    "worker_engine",
]

logger = logging.getLogger("mcp_tasks_compat.worker")

DEFAULT_CONCURRENCY: Final = 10
"""Runs one worker holds at once, unless told otherwise (``--concurrency``)."""

DEFAULT_GRACE_S: Final = 30.0
"""How long a stopping worker lets its runs finish before it gives the rest back to the queue."""


def worker_engine(policy: TaskPolicy, sdk_server: Any, store: TaskStore | str | None) -> TaskEngine:
    """An engine for a worker of a server (its task ``policy`` and SDK server): ``store`` (default:
    the server's own), the server's lease, TTLs, poll hint and re-run declarations; its tools
    called without a request."""
    served = policy.engine
    if isinstance(store, str):
        store = store_from_url(store)
    engine = (
        served
        if store is None
        else TaskEngine(
            store=store,
            ttl_floor_ms=served.ttl_floor_ms,
            default_ttl_ms=served.default_ttl_ms,
            poll_policy=served.poll_policy,
            lease_s=served.replicas.lease_s,
            limits=served.limits,
        )
    )
    engine.reruns.update(served.reruns)
    engine.rerun_work = get_adapter().builder.tool_runner(sdk_server)
    return engine


async def serve_worker(
    policy: TaskPolicy,
    sdk_server: Any,
    *,
    store: TaskStore | str | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    grace_s: float = DEFAULT_GRACE_S,
    stop: anyio.Event | None = None,
    on_ready: Callable[[WorkerRuns], None] | None = None,
) -> None:
    """Run a server's queued tasks (its task ``policy`` and SDK server: a ``TaskServer``'s
    ``tasks`` and ``sdk_server``) until ``stop`` is set (or SIGTERM/SIGINT when ``stop`` is
    ``None``), ``concurrency`` at a time; then stop gracefully (the module docstring)."""
    engine = worker_engine(policy, sdk_server, store)
    runner = engine.rerun_work
    assert runner is not None
    runs = WorkerRuns(
        engine.reader,
        engine.writer,
        engine.replicas,
        start=engine.start,
        work_for=runner,
        concurrency=concurrency,
    )
    await engine.open()
    await engine.recover()
    stopping = stop or anyio.Event()
    async with anyio.create_task_group() as signals:
        if stop is None:
            signals.start_soon(_stop_on_signal, stopping, name="mcp-tasks worker signals")
        if on_ready is not None:
            on_ready(runs)  # says it itself (the command line's line): not logged too
        else:
            where = engine.store.describe
            logger.info("worker %s: taking tasks from %s, %d at a time", runs.worker_id, where, concurrency)
        await runs.serve(engine.background, stopping, grace_s=grace_s)
        signals.cancel_scope.cancel()
    await engine.store.close()


async def _stop_on_signal(stopping: anyio.Event) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for _signal in signals:
            stopping.set()
            return


_IMPORTING: ContextVar[str | None] = ContextVar("mcp_tasks_compat_worker_importing", default=None)
"""The ``MODULE:ATTR`` a worker is importing, while it does."""


class ServesWhenImported(Exception):
    """The module a worker imports serves its app when imported (``app.run()`` at its top level)."""


@contextmanager
def importing_for_a_worker(target: str) -> Generator[None]:
    """While a worker imports ``target``'s module, a server run there is refused
    (:func:`refuse_serving_on_import`)."""
    token = _IMPORTING.set(target)
    try:
        yield
    finally:
        _IMPORTING.reset(token)


def refuse_serving_on_import(call: str) -> None:
    """Raise :class:`ServesWhenImported` if a worker is importing the module that makes ``call``
    (``app.run()``): served there, the app would block the worker on stdin, or end and close the
    event loop the worker then needs ("Event loop is closed"), instead of being handed over."""
    target = _IMPORTING.get()
    if target is not None:
        module = target.partition(":")[0]
        raise ServesWhenImported(
            f"{module} calls {call} when imported, so the worker cannot import its app without serving"
            f' it: guard that call with `if __name__ == "__main__":`'
        )
