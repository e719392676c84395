"""Section 3, throughput: task calls per second next to plain calls of the same tool and server.

Targets (over HTTP, one caller): at least 1.5x fastmcp-tasks' task rate (FastMCP 3 for reference),
and at least 0.8 of half the plain rate (a task needs two round trips at least).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

import anyio

from .. import clients
from ..harness import PEERS, Bench, open_target, rotated
from ..section import Row, Section, find, server_name, spread, table, target
from ..stats import ratio_summary, summary

__all__ = ["SECTION", "ThroughputProfile"]

Pair = tuple[clients.Conn, clients.Conn]  # (our client, for tasks; a bare session, for plain calls)


@dataclass(frozen=True)
class ThroughputProfile:
    transports: tuple[str, ...]
    seq_calls: int
    rounds: int
    clients: int
    calls_per_client: int
    peer_cap_s: float  # a peer's task batch stops after this long (slow poll hints)


PROFILES = {
    "smoke": ThroughputProfile(
        transports=("memory",), seq_calls=3, rounds=2, clients=3, calls_per_client=1, peer_cap_s=2.0
    ),
    "full": ThroughputProfile(
        transports=("http", "stdio"), seq_calls=30, rounds=3, clients=20, calls_per_client=3, peer_cap_s=8.0
    ),
}


async def measure(bench: Bench, profile: ThroughputProfile) -> None:
    for transport in profile.transports:
        for kind in bench.task_kinds():
            await bench.guarded(
                f"throughput/{kind}/{transport}", lambda k=kind, t=transport: throughput(bench, profile, k, t)
            )


async def throughput(bench: Bench, profile: ThroughputProfile, kind: str, transport: str) -> None:
    """Sequential and concurrent task rate next to the plain-call rate of the same server and tool.

    Tasks go through our ``call_tool(mode="task")``; plain calls are the raw SDK call on a bare
    session (no task capability declared), which every server runs inline.
    """
    cap_s = profile.peer_cap_s if kind in PEERS else math.inf
    async with open_target(kind, transport) as connect, AsyncExitStack() as stack:
        tasker = await stack.enter_async_context(connect())
        plainer = await stack.enter_async_context(connect(ours=False))
        await tasker.call("job", {}, mode="task")
        await plainer.raw("job", {})

        rates = await _rates(profile, [(tasker, plainer)], profile.seq_calls, cap_s)
        _add_row(bench, kind, transport, tasker, "sequential", 1, rates)

        # Concurrent: over HTTP each caller has its own sessions; over stdio/memory they share them.
        callers = profile.clients
        pairs = [(tasker, plainer)]
        for _ in range(callers - 1):
            if transport == "http":
                pairs.append(
                    (
                        await stack.enter_async_context(connect()),
                        await stack.enter_async_context(connect(ours=False)),
                    )
                )
            else:
                pairs.append((tasker, plainer))
        rates = await _rates(profile, pairs, profile.calls_per_client, cap_s)
        _add_row(bench, kind, transport, tasker, "concurrent", callers, rates)


async def _batch(pair: Pair, mode: str, count: int, deadline: float) -> int:
    done = 0
    while done < count and (done == 0 or time.perf_counter() < deadline):
        if mode == "task":
            await pair[0].call("job", {}, mode="task")
        else:
            await pair[1].raw("job", {})
        done += 1
    return done


async def _rates(
    profile: ThroughputProfile, pairs: list[Pair], per_caller: int, cap_s: float
) -> dict[str, list[float]]:
    """Calls per second of each mode, once per round, the modes' order rotated every round."""
    rates: dict[str, list[float]] = {"plain": [], "task": []}
    for round_index in range(profile.rounds):
        for mode in rotated(["plain", "task"], round_index):
            counts: list[int] = []
            started = time.perf_counter()
            limit = started + (cap_s if mode == "task" else math.inf)

            async def caller(pair: Pair, mode: str, limit: float, counts: list[int]) -> None:
                counts.append(await _batch(pair, mode, per_caller, limit))

            async with anyio.create_task_group() as group:
                for pair in pairs:
                    group.start_soon(caller, pair, mode, limit, counts)
            rates[mode].append(sum(counts) / (time.perf_counter() - started))
    return rates


def _add_row(
    bench: Bench,
    kind: str,
    transport: str,
    conn: clients.Conn,
    shape: str,
    callers: int,
    rates: dict[str, list[float]],
) -> None:
    half_plain = [rate / 2 for rate in rates["plain"]]
    bench.add(
        "throughput",
        kind=kind,
        transport=transport,
        dialect=conn.dialect,
        protocol_version=conn.protocol_version,
        variant=shape,
        callers=callers,
        task_per_s=summary(rates["task"], digits=2),
        plain_per_s=summary(rates["plain"], digits=2),
        task_to_half_plain=ratio_summary(rates["task"], half_plain),
    )


def targets(rows: Sequence[Row]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for row in find(rows, section="throughput", kind="ours", transport="http", variant="sequential"):
        for peer in ("fastmcp4", "fastmcp3"):  # the target names fastmcp-tasks; FastMCP 3 is for reference
            for other in find(
                rows,
                section="throughput",
                kind=peer,
                transport="http",
                variant="sequential",
                major=row["major"],
            ):
                ours_rate, peer_rate = row["task_per_s"]["median"], other["task_per_s"]["median"]
                if row["dialect"] != other["dialect"] or not ours_rate or not peer_rate:
                    continue
                versus = target(
                    f"sequential task throughput over HTTP vs {peer} (mcp{row['major']}, {row['dialect']})",
                    round(ours_rate / peer_rate, 2),
                    1.5,
                    at_most=False,
                    detail=f"{ours_rate} vs {peer_rate} tasks/s",
                )
                if peer != "fastmcp4":
                    versus.update(limit="(reference)", met=None)
                out.append(versus)
        out.append(
            target(
                f"sequential task throughput over HTTP vs half the plain rate "
                f"(mcp{row['major']}, {row['dialect']})",
                row["task_to_half_plain"]["median"],
                0.8,
                at_most=False,
                detail=f"{row['task_per_s']['median']} tasks/s, {row['plain_per_s']['median']} plain calls/s",
            )
        )
    return out


def tables(rows: Sequence[Row]) -> list[str]:
    return [
        "### 3. Throughput (tool `job` returning at once; calls per second, median (p10-p90) of rounds)",
        table(
            [
                "mcp",
                "server",
                "dialect",
                "transport",
                "callers",
                "tasks/s",
                "plain calls/s",
                "tasks ÷ (plain/2)",
            ],
            (
                (
                    r["major"],
                    server_name(r["kind"]),
                    r["dialect"],
                    r["transport"],
                    r["callers"],
                    spread(r["task_per_s"]),
                    spread(r["plain_per_s"]),
                    spread(r["task_to_half_plain"]),
                )
                for r in find(rows, section="throughput")
            ),
        ),
    ]


DESCRIBED = """\
3. **Throughput**: tool `job` returning at once, sequential (one caller) and concurrent (20
   callers: 20 sessions over HTTP, 20 concurrent calls on the one session over stdio), task calls
   next to plain calls of the same tool on the same server. A task needs at least two round trips,
   so the ratio to half the plain rate is the practical ceiling."""

SECTION = Section(
    name="throughput",
    profiles=PROFILES,
    measure=measure,
    targets=targets,
    tables=tables,
    described=DESCRIBED,
)
