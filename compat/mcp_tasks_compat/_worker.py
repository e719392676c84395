"""A worker process: the task tools of a server's app, run from the store's queue, no MCP listener.

``mcp-tasks-compat worker MODULE:ATTR --store URL`` and :meth:`.server.TaskServer.run_worker` come
here. The worker imports the same :class:`~.server.TaskServer` the server serves (its tools, their
``reruns=``, its settings and its ``lifespan=``), builds an engine from the server's settings on
the shared store and hosts it as a server does (the lifespan entered once, the background: lease
renewal, the notifier or, on SQLite, polling of the runs it holds, the sweeper) beside the take
loop (:class:`~._engine.workers.WorkerRuns`). A stop (SIGTERM, SIGINT, or ``stop`` set)
stops the taking, lets the runs finish within ``grace_s``, gives the rest back to the queue, and
returns once every outcome is written.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable, Generator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from functools import partial
from typing import Any, Final

import anyio

from ._adapters import get_adapter
from ._engine import EngineHost, TaskPolicy, Work
from ._engine.hosting import Lifespan
from ._engine.stores import TaskStore
from ._engine.workers import WorkerRuns

__all__ = [
    "DEFAULT_CONCURRENCY",
    "DEFAULT_GRACE_S",
    "ServesWhenImported",
    "importing_for_a_worker",
    "refuse_serving_on_import",
    "serve_worker",
]

logger = logging.getLogger("mcp_tasks_compat.worker")

DEFAULT_CONCURRENCY: Final = 10
"""Runs one worker holds at once, unless told otherwise (``--concurrency``)."""

DEFAULT_GRACE_S: Final = 30.0
"""How long a stopping worker lets its runs finish before it gives the rest back to the queue."""


async def serve_worker(
    policy: TaskPolicy,
    sdk_server: Any,
    *,
    lifespan: Lifespan | None = None,
    store: TaskStore | str | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    grace_s: float = DEFAULT_GRACE_S,
    stop: anyio.Event | None = None,
    on_ready: Callable[[WorkerRuns], None] | None = None,
) -> None:
    """Run a server's queued tasks (its task ``policy``, SDK server and ``lifespan``: a
    ``TaskServer``'s) until ``stop`` is set (or SIGTERM/SIGINT when ``stop`` is ``None``),
    ``concurrency`` at a time; then stop gracefully (the module docstring).

    The worker is one host of an engine built from the server's settings (on ``store``, default
    the server's own): the server's ``lifespan`` is entered once at start and left at stop, and
    every run here (a queued task, a re-run) calls its tool seeing that lifespan's value.
    """
    engine = policy.engine_on(store)
    runner = get_adapter().builder.tool_runner(sdk_server)
    entered = None if lifespan is None else partial(lifespan, sdk_server)
    stopping = stop or anyio.Event()
    hosts: list[EngineHost] = []

    def work_for(tool_name: str, arguments: Mapping[str, Any]) -> Work | None:
        return hosts[0].run_tool(tool_name, arguments)  # taking starts inside the host

    runs = WorkerRuns(  # a store without a queue is refused here, before the lifespan is entered
        engine.reader,
        engine.writer,
        engine.replicas,
        start=engine.start,
        work_for=work_for,
        concurrency=concurrency,
    )
    try:
        async with (
            engine.hosted(tools=runner, lifespan=entered, process=True) as host,
            anyio.create_task_group() as signals,
        ):
            hosts.append(host)
            if stop is None:
                signals.start_soon(_stop_on_signal, stopping, name="mcp-tasks worker signals")
            if on_ready is not None:
                on_ready(runs)  # says it itself (the command line's line): not logged too
            else:
                where = engine.store.describe
                logger.info(
                    "worker %s: taking tasks from %s, %d at a time", runs.worker_id, where, concurrency
                )
            await runs.serve(stopping, grace_s=grace_s)
            signals.cancel_scope.cancel()
    finally:
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
