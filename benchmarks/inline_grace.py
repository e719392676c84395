"""How long the inline grace should be: the cost of a call, plain vs. task, by tool length (mcp 2.x).

Run in an mcp 2.x environment: ``python benchmarks/inline_grace.py [--rounds N]``. One in-memory
MCPServer with the library's tasks, and the library's own client (``call_tool(mode="auto")``) on
2026-07-28. For each grace and each tool length it prints the median wall time of a call and its
extra time over the tool's own run, next to a raw ``session.call_tool`` of a task-forbidden tool.
The default grace (``DEFAULT_INLINE_GRACE_S``) was picked from these figures: a tool done within
the grace costs about what a plain call costs; one that outlives it costs the task path anyway.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import anyio
from mcp.client._memory import InMemoryTransport
from mcp.client.session import ClientSession
from mcp.server.mcpserver import MCPServer

from mcp_tasks_compat._client_api import session_kwargs
from mcp_tasks_compat.client import call_tool
from mcp_tasks_compat.server import ServerTasks

__all__ = ["main"]

LENGTHS_S = (0.0, 0.005, 0.02, 0.04, 0.08)
GRACES_S = (0.0, 0.01, 0.05, 0.1)


def build(grace_s: float) -> MCPServer:
    tasks = ServerTasks(tools={"work": "optional", "raw": "forbidden"}, inline_grace_s=grace_s)
    server = MCPServer("grace-bench", **tasks.mcpserver_kwargs())

    @server.tool()
    async def work(seconds: float) -> str:
        if seconds:
            await anyio.sleep(seconds)
        return "done"

    @server.tool()
    async def raw(seconds: float) -> str:
        return "done"

    return server


async def _median_ms(session: Any, tool: str, seconds: float, rounds: int, *, ours: bool) -> float:
    times: list[float] = []
    for _ in range(rounds):
        start = time.perf_counter()
        if ours:
            await call_tool(session, tool, {"seconds": seconds})
        else:
            await session.call_tool(tool, {"seconds": seconds})
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


async def run(rounds: int) -> None:
    print(f"median ms per call ({rounds} rounds); extra = median - tool length")
    async with InMemoryTransport(build(0.0)) as (read, write), ClientSession(read, write) as session:
        await session.discover()
        raw_ms = await _median_ms(session, "raw", 0.0, rounds, ours=False)
    print(f"raw session.call_tool, forbidden tool: {raw_ms:.2f} ms")
    print("grace_s  " + "  ".join(f"tool {length * 1000:>4.0f} ms" for length in LENGTHS_S))
    for grace_s in GRACES_S:
        cells: list[str] = []
        server = build(grace_s)
        async with (
            InMemoryTransport(server) as (read, write),
            ClientSession(read, write, **session_kwargs()) as session,
        ):
            await session.discover()
            for length in LENGTHS_S:
                median = await _median_ms(session, "work", length, rounds, ours=True)
                cells.append(f"{median - length * 1000:>+12.2f}")
        print(f"{grace_s:<7}  " + "  ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    anyio.run(run, parser.parse_args().rounds)


if __name__ == "__main__":
    main()
