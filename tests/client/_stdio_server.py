"""A test server over stdio, for the client's stdio tests: ``python -m client._stdio_server KIND GETS``.

Run from the ``tests`` directory. ``KIND`` is ``v1`` (needs mcp 1.x: the SDK's own task server)
or ``ext`` (needs mcp 2.x: the dual-dialect test server); ``GETS`` is how many ``tasks/get`` the
``count_gets`` tool waits for.
"""

from __future__ import annotations

import sys

import anyio

from ._script import Knobs, Script


async def main(kind: str, gets_needed: int) -> None:
    script = Script(gets_needed=gets_needed)
    if kind == "v1":
        from mcp.server.stdio import stdio_server

        from ._servers_v1 import build_v1_server

        server = build_v1_server(script, Knobs())
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
        return
    from mcp.server.stdio import stdio_server

    from ._servers import DualDialectServer

    async with anyio.create_task_group() as group:
        low = DualDialectServer(script, Knobs(), group).server._lowlevel_server  # pyright: ignore[reportPrivateUsage]
        async with stdio_server() as (read, write):
            await low.run(read, write, low.create_initialization_options())
        group.cancel_scope.cancel()


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], int(sys.argv[2]))
