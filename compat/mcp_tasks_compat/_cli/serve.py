"""``example-server``: the example tools served over stdio or streamable HTTP, until told to stop."""

from __future__ import annotations

import signal
import sys
from collections.abc import AsyncGenerator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any, Final

from .._adapters import get_adapter
from .._engine import DEFAULT_LEASE_S
from .._engine.limits import DEFAULT_MAX_ACTIVE_TASKS_PER_OWNER
from .._engine.stores.echo import redacted, shown_url
from .._examples import EXAMPLE_TASK_SUPPORT, EXAMPLE_TOOLS
from .._observe.prometheus import MissingExporterError, serve_prometheus
from .._version import __version__
from ..dialects import RunOn
from ..errors import CompatError
from ..server import TaskServer
from .common import EXIT_USAGE
from .failures import run_service

__all__ = [
    "EXAMPLE_SERVER_NAME",
    "ServeOptions",
    "build_example_server",
    "example_app",
    "run_example_server",
    "with_metrics",
]

EXAMPLE_SERVER_NAME: Final = "mcp-tasks-compat-example"
RERUNNABLE_EXAMPLES: Final = frozenset({"slow_echo"})
"""The example tools safe to run again (idempotent): ``--reruns`` applies to them."""


def build_example_server(
    *,
    host: str = "127.0.0.1",
    store: str = "memory:",
    lease_s: float = DEFAULT_LEASE_S,
    max_active_tasks: int = DEFAULT_MAX_ACTIVE_TASKS_PER_OWNER,
    unauthenticated_2025_scope: str = "session",
    run_on: RunOn = "here",
    max_queued: int | None = None,
) -> Any:
    """The example tools on a :class:`~mcp_tasks_compat.server.TaskServer`: its SDK server.

    ``host`` is where it will listen over HTTP (mcp 1.x derives DNS-rebinding protection from it);
    ``store`` where its tasks live (a URL: ``memory:``, ``sqlite:///tasks.db``, ``redis://...``);
    ``lease_s`` how long a run's claim on a shared store holds without renewal; ``run_on``
    ``"workers"`` queues the task runs for ``mcp-tasks-compat worker --example``.
    """
    return example_app(
        host=host,
        store=store,
        lease_s=lease_s,
        max_active_tasks=max_active_tasks,
        unauthenticated_2025_scope=unauthenticated_2025_scope,
        run_on=run_on,
        max_queued=max_queued,
    ).sdk_server


def example_app(
    *,
    host: str = "127.0.0.1",
    store: str = "memory:",
    lease_s: float = DEFAULT_LEASE_S,
    max_active_tasks: int = DEFAULT_MAX_ACTIVE_TASKS_PER_OWNER,
    unauthenticated_2025_scope: str = "session",
    run_on: RunOn = "here",
    max_queued: int | None = None,
    plain_handoff_s: float | None = None,
    reruns: int = 0,
) -> TaskServer:
    """The example tools' :class:`~mcp_tasks_compat.server.TaskServer` (what ``worker --example`` runs).

    ``reruns``: how many times a run of ``slow_echo`` (safe to run again) lost to a crash is
    started again (``--reruns``; needs a durable store)."""
    app = TaskServer(
        EXAMPLE_SERVER_NAME,
        store=store,
        lease_s=lease_s,
        max_active_tasks_per_owner=max_active_tasks,  # --max-active-tasks
        unauthenticated_2025_scope="task_id" if unauthenticated_2025_scope == "task_id" else "session",
        run_on=run_on,  # --run-on
        max_queued=max_queued,  # --max-queued
        plain_handoff_s=plain_handoff_s,  # --plain-handoff-s
        host=host,
        version=__version__,
    )
    for name, tool in EXAMPLE_TOOLS.items():
        rerun = reruns if name in RERUNNABLE_EXAMPLES else 0
        app.tool(name=name, task=EXAMPLE_TASK_SUPPORT.get(name, "forbidden"), reruns=rerun)(tool)
    return app


def store_refusal(url: str, message: str) -> str:
    """``cannot use the task store URL: WHY`` in one line, the URL said once: the store's own
    message names it too (it is said alone elsewhere: to a client, in a log, by ``worker`` and
    ``tasks``), so that naming is left out of ``WHY`` here."""
    shown = shown_url(url)
    why = message.splitlines()[0]
    namings = (
        (f"the Redis task store {shown} ", "it "),  # "... does not answer", "... is a replica of ..."
        (f"the PostgreSQL task store {shown} ", "it "),  # "... does not answer", "... is a read-only standby"
        (f"{shown}: ", ""),  # SQLite's "URL: PATH cannot be opened ..."
        (f"{url!r}: ", ""),  # "'URL': a sqlite URL is ..."
        (f"'{shown}': ", ""),
        (f": {redacted(url)!r};", ";"),  # "not a task store URL: 'URL'; accepted forms ..."
    )
    for naming, instead in namings:
        if naming in why:
            why = why.replace(naming, instead, 1)
            break
    return f"cannot use the task store {shown}: {why}"


class StoreRefused(Exception):
    """The ``--store`` cannot be used: said in one line, before anything listens."""


@asynccontextmanager
async def _hosted(app: TaskServer, url: str) -> AsyncGenerator[None, None]:
    """The server's engine hosted for the whole process (its lifespan, the store opened and
    recovered, the background) before anything listens: an unusable store is refused at start,
    not at the first client, and a replica that serves no session still sweeps and re-runs."""
    async with AsyncExitStack() as stack:
        try:
            await stack.enter_async_context(app._hosted())  # pyright: ignore[reportPrivateUsage]
        except (CompatError, OSError, ValueError) as error:
            message = error.message if isinstance(error, CompatError) else str(error)
            raise StoreRefused(store_refusal(url, message)) from None
        yield


@dataclass(frozen=True)
class ServeOptions:
    transport: str
    host: str
    port: int
    store: str = "memory:"
    lease_s: float = DEFAULT_LEASE_S
    max_active_tasks: int = DEFAULT_MAX_ACTIVE_TASKS_PER_OWNER
    unauthenticated_2025_scope: str = "session"
    run_on: RunOn = "here"
    max_queued: int | None = None
    plain_handoff_s: float | None = None
    """Hand a plain call of a task-capable tool off to a task after this long (``None``: never)."""
    reruns: int = 0
    """Start a run of ``slow_echo`` lost to a crash again, up to this many times."""
    metrics_port: int | None = None
    """Serve the metrics in Prometheus text form on ``host:metrics_port`` (``None``: not at all)."""


def run_example_server(options: ServeOptions) -> int:
    """``example-server``: serve the example tools until stdin closes (stdio) or SIGINT/SIGTERM (http)."""

    def listening(url: str) -> None:
        print(f"listening on {url}", file=sys.stderr, flush=True)

    return with_metrics(options.metrics_port, options.host, partial(_serve, options, listening))


def with_metrics(port: int | None, host: str, run: Callable[[], int], *, prefix: str = "") -> int:
    """``run()``'s exit code, with the metrics served in Prometheus text form on ``host:port``
    meanwhile (from before ``run`` builds anything: its engine is measured from birth); none
    when ``port`` is ``None``. A port that cannot be served is one line, exit 2."""
    if port is None:
        return run()
    try:
        metrics_server = serve_prometheus(port, host=host)
    except (MissingExporterError, OSError) as error:
        print(f"mcp-tasks-compat: {prefix}--metrics-port: {error}", file=sys.stderr)
        return EXIT_USAGE
    print(f"metrics on http://{host}:{port}/metrics", file=sys.stderr, flush=True)
    try:
        return run()
    finally:
        metrics_server.shutdown()


def _serve(options: ServeOptions, listening: Callable[[str], None]) -> int:
    try:
        app = example_app(
            host=options.host,
            store=options.store,
            lease_s=options.lease_s,
            max_active_tasks=options.max_active_tasks,
            unauthenticated_2025_scope=options.unauthenticated_2025_scope,
            run_on=options.run_on,
            max_queued=options.max_queued,
            plain_handoff_s=options.plain_handoff_s,
            reruns=options.reruns,
        )
    except (CompatError, ValueError) as error:
        message = error.message if isinstance(error, CompatError) else str(error)
        print(f"mcp-tasks-compat: {store_refusal(options.store, message)}", file=sys.stderr)
        return EXIT_USAGE

    async def serve() -> None:
        async with _hosted(app, options.store):
            server = app.sdk_server
            if options.transport == "stdio":
                await get_adapter().app.serve_stdio(server)
            else:
                await get_adapter().app.serve_http(
                    server, host=options.host, port=options.port, on_listening=listening
                )

    def refusal(leaf: BaseException) -> str | None:
        if isinstance(leaf, StoreRefused):
            return str(leaf)
        if isinstance(leaf, OSError) and not isinstance(leaf, FileNotFoundError):
            if options.transport == "stdio":  # nothing listens: the client's end of the pipes went away
                return f"the client closed stdio: {leaf}"
            return f"cannot listen on {options.host}:{options.port}: {leaf}"
        return None

    # SIGTERM ends the service as SIGINT does (KeyboardInterrupt where it lands): uvicorn raises the
    # signal again once it has stopped, and the process's host (outside the app) must still stop
    # the runs, writing their end, rather than the process die at that moment.
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        return run_service(serve, refusal=refusal)
    finally:
        signal.signal(signal.SIGTERM, previous)
