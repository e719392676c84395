"""Create while following, on its own: the creation section's issue 43 row without the rest.

Run in an mcp 2.x environment with FastMCP 4 (benchmarks/requirements-mcp2.txt), from the
repository root: ``python -m benchmarks.following_rate [--tasks 200] [--rounds 5]``. One session of
our client creates held tasks one after the other, each followed from its creation, on a fresh
server per round, ours and FastMCP 4's rounds interleaved (the order alternating) so a shared
machine's load falls on both alike. Each round prints its rate, create latencies and requests per
task while creating; then the medians, their ratio and the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
from dataclasses import replace

import anyio

from .sections.creation import PROFILES, create_following

__all__ = ["main"]


async def run(tasks: int, rounds: int, transport: str) -> None:
    profile = replace(PROFILES["full"], following_tasks=tasks, transport=transport)
    rates: dict[str, list[float]] = {"ours": [], "fastmcp4": []}
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    for round_index in range(rounds):
        kinds = ["ours", "fastmcp4"] if round_index % 2 == 0 else ["fastmcp4", "ours"]
        for kind in kinds:
            measured = await create_following(profile, kind)
            ms = sorted(measured["create_ms"])
            print(
                f"{kind:<9} {measured['created_per_s']:6.1f} tasks/s  create ms p50 {ms[len(ms) // 2]:.1f}"
                f" p90 {ms[int(len(ms) * 0.9)]:.1f} max {ms[-1]:.1f}",
                f"per task {measured['requests_per_task']}",
                flush=True,
            )
            rates[kind].append(measured["created_per_s"])
    ours, peer = statistics.median(rates["ours"]), statistics.median(rates["fastmcp4"])
    print(f"median tasks/s: ours {ours:.1f}, FastMCP 4 {peer:.1f}, ratio {ours / peer:.2f}")
    print(f"load average after: {' '.join(f'{load:.1f}' for load in os.getloadavg())}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--transport", default="http")
    args = parser.parse_args()
    anyio.run(run, args.tasks, args.rounds, args.transport)


if __name__ == "__main__":
    main()
