"""The serve command: ``python -m mcp_tasks_compat.testing serve [MODULE:ATTRIBUTE]`` (a tool set
named there, or the example one), and :func:`server_command`, its command line."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence
from typing import Final, Literal

import anyio

from .._adapters import get_adapter
from .._cli.common import quiet_sdk_logs
from .toolsets import EXAMPLE_TOOLSET, build_task_server, load_toolset

__all__ = ["LISTENING_PREFIX", "SERVE_MODULE", "Transport", "main", "server_command"]

SERVE_MODULE: Final = "mcp_tasks_compat.testing"
LISTENING_PREFIX: Final = "listening on "

Transport = Literal["stdio", "http"]


def server_command(
    toolset_spec: str | None = None,
    *,
    transport: Transport = "stdio",
    host: str = "127.0.0.1",
    port: int = 0,
    python: str | os.PathLike[str] | None = None,
) -> list[str]:
    """The command line of a kit server: ``python -m mcp_tasks_compat.testing serve [SPEC] ...``.

    ``python`` is the interpreter (default: this one); another virtual environment's python runs
    the server on that environment's mcp. Over HTTP, ``port=0`` picks a free port and the server
    prints ``listening on <url>`` on stderr (:class:`HttpServerProcess` reads it).

    Example (the kit's server on another environment's mcp, over stdio)::

        command = server_command("mylib_tools:TOOLS", python="/envs/mcp1/bin/python")
        async with connect_stdio(command[0], command[1:]) as session:
            result = await call_tool(session, "build", {"target": "docs"})
    """
    argv = [os.fspath(python) if python is not None else sys.executable, "-m", SERVE_MODULE, "serve"]
    if toolset_spec is not None:
        argv.append(toolset_spec)
    argv += ["--transport", transport]
    if transport == "http":
        argv += ["--host", host, "--port", str(port)]
    return argv


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m mcp_tasks_compat.testing serve [MODULE:ATTRIBUTE] [--transport stdio|http] ...``."""
    parser = argparse.ArgumentParser(
        prog=f"python -m {SERVE_MODULE}", description="Serve a tool set with tasks, for tests."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve = commands.add_parser("serve", help="serve a ToolSet (default: the example tool set)")
    serve.add_argument("toolset", nargs="?", metavar="MODULE:ATTRIBUTE", help="a ToolSet (or a function)")
    serve.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=0, help="HTTP port; 0 picks a free one (default)")
    serve.add_argument("-v", "--verbose", action="store_true", help="show the SDK's logs")
    args = parser.parse_args(argv)
    quiet_sdk_logs(args.verbose)
    toolset = EXAMPLE_TOOLSET if args.toolset is None else load_toolset(args.toolset)
    app = get_adapter().app
    server = build_task_server(toolset, host=args.host)

    def listening(url: str) -> None:
        print(f"{LISTENING_PREFIX}{url}", file=sys.stderr, flush=True)

    async def run() -> None:
        if args.transport == "stdio":
            await app.serve_stdio(server)
        else:
            await app.serve_http(server, host=args.host, port=args.port, on_listening=listening)

    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(run)
    return 0
