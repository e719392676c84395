"""``example-server``: the example tools served over stdio or streamable HTTP, until told to stop."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Final

import anyio

from .._adapters import get_adapter
from .._engine import DEFAULT_LEASE_S
from .._engine.limits import DEFAULT_MAX_ACTIVE_TASKS_PER_OWNER
from .._version import __version__
from ..examples import EXAMPLE_TASK_SUPPORT, EXAMPLE_TOOLS
from ..server import TaskServer
from .common import EXIT_OK, EXIT_USAGE
from .failures import describe_failure, leaves

__all__ = ["EXAMPLE_SERVER_NAME", "ServeOptions", "build_example_server", "run_example_server"]

EXAMPLE_SERVER_NAME: Final = "mcp-tasks-compat-example"


def build_example_server(
    *,
    host: str = "127.0.0.1",
    store: str = "memory:",
    lease_s: float = DEFAULT_LEASE_S,
    max_active_tasks: int = DEFAULT_MAX_ACTIVE_TASKS_PER_OWNER,
) -> Any:
    """The example tools on a :class:`~mcp_tasks_compat.server.TaskServer`: its SDK server.

    ``host`` is where it will listen over HTTP (mcp 1.x derives DNS-rebinding protection from it);
    ``store`` where its tasks live (a URL: ``memory:``, ``sqlite:///tasks.db``, ``redis://...``);
    ``lease_s`` how long a run's claim on a shared store holds without renewal.
    """
    app = TaskServer(
        EXAMPLE_SERVER_NAME,
        store=store,
        lease_s=lease_s,
        max_active_tasks_per_owner=max_active_tasks,  # --max-active-tasks
        host=host,
        version=__version__,
    )
    for name, tool in EXAMPLE_TOOLS.items():
        app.tool(name=name, task=EXAMPLE_TASK_SUPPORT.get(name, "forbidden"))(tool)
    return app.sdk_server


@dataclass(frozen=True)
class ServeOptions:
    transport: str
    host: str
    port: int
    store: str = "memory:"
    lease_s: float = DEFAULT_LEASE_S
    max_active_tasks: int = DEFAULT_MAX_ACTIVE_TASKS_PER_OWNER


def run_example_server(options: ServeOptions) -> int:
    """``example-server``: serve the example tools until stdin closes (stdio) or SIGINT/SIGTERM (http)."""

    def listening(url: str) -> None:
        print(f"listening on {url}", file=sys.stderr, flush=True)

    async def serve() -> None:
        server = build_example_server(
            host=options.host,
            store=options.store,
            lease_s=options.lease_s,
            max_active_tasks=options.max_active_tasks,
        )
        if options.transport == "stdio":
            await get_adapter().app.serve_stdio(server)
        else:
            await get_adapter().app.serve_http(
                server, host=options.host, port=options.port, on_listening=listening
            )

    try:
        anyio.run(serve)
    except KeyboardInterrupt:
        return EXIT_OK
    except BaseException as error:
        if isinstance(error, (SystemExit, GeneratorExit)):
            raise
        inner = leaves(error)
        if inner and all(isinstance(leaf, KeyboardInterrupt) for leaf in inner):
            return EXIT_OK
        if inner and isinstance(inner[0], OSError) and not isinstance(inner[0], FileNotFoundError):
            print(
                f"mcp-tasks-compat: cannot listen on {options.host}:{options.port}: {inner[0]}",
                file=sys.stderr,
            )
            return EXIT_USAGE
        code, message = describe_failure(error)
        print(f"mcp-tasks-compat: {message}", file=sys.stderr)
        return code
    return EXIT_OK
