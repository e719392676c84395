"""``example-server``: the example tools served over stdio or streamable HTTP, until told to stop."""

from __future__ import annotations

import sys
from dataclasses import dataclass

import anyio

from .common import EXIT_OK, EXIT_USAGE
from .failures import describe_failure, leaves

__all__ = ["ServeOptions", "run_example_server"]


@dataclass(frozen=True)
class ServeOptions:
    transport: str
    host: str
    port: int


def run_example_server(options: ServeOptions) -> int:
    """``example-server``: serve the example tools until stdin closes (stdio) or SIGINT/SIGTERM (http)."""
    from .._adapters import example_server

    def listening(url: str) -> None:
        print(f"listening on {url}", file=sys.stderr, flush=True)

    async def serve() -> None:
        server = example_server.build_example_server(host=options.host)
        if options.transport == "stdio":
            await example_server.serve_stdio(server)
        else:
            await example_server.serve_http(
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
