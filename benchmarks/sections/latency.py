"""Section 2, completion-to-result latency: the tool returns, then how long until the caller holds it.

Target: p50 at most 10 ms on 2025-11-25, 50 ms on 2026-07-28 (our server's default poll hints).
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from .. import clients
from ..harness import PEERS, Bench, dialects_for, open_target, opt_ins_for
from ..section import Row, Section, find, server_name, table, target
from ..stats import summary

__all__ = ["SECTION", "LatencyProfile"]


@dataclass(frozen=True)
class LatencyProfile:
    transport: str
    samples: int
    samples_peer: int
    peer_concurrency: int
    delay_ms: tuple[float, float]  # the tool sleeps a random delay in this range first


PROFILES = {
    "smoke": LatencyProfile(
        transport="memory", samples=3, samples_peer=2, peer_concurrency=2, delay_ms=(1.0, 5.0)
    ),
    "full": LatencyProfile(
        transport="http", samples=60, samples_peer=10, peer_concurrency=10, delay_ms=(20.0, 300.0)
    ),
}


async def measure(bench: Bench, profile: LatencyProfile) -> None:
    for kind in bench.task_kinds():
        for dialect in dialects_for(kind, bench.major):
            await bench.guarded(
                f"latency/{kind}/{dialect or 'negotiated'}",
                lambda k=kind, d=dialect: latency(bench, profile, k, d),
            )


async def latency(bench: Bench, profile: LatencyProfile, kind: str, dialect: str | None) -> None:
    """Tool returns (its own CLOCK_MONOTONIC stamp) -> the caller holds the CallToolResult."""
    peer = kind in PEERS
    samples_wanted = profile.samples_peer if peer else profile.samples
    concurrency = profile.peer_concurrency if peer else 1
    rng = random.Random(1234)
    low, high = profile.delay_ms
    delays = [rng.uniform(low, high) for _ in range(samples_wanted)]
    latencies_ms: list[float] = []
    totals_ms: list[float] = []
    async with (
        open_target(kind, profile.transport) as connect,
        connect(opt_ins=opt_ins_for(dialect, bench.major)) as conn,
    ):
        await conn.call("job", {"delay_ms": 1}, mode="task")  # warm the task path

        async def worker(my_delays: list[float]) -> None:
            for delay in my_delays:
                started = time.monotonic()
                result = await conn.call("job", {"delay_ms": delay}, mode="task")
                held = time.monotonic()
                done_at = float(clients.text_of(result))
                latencies_ms.append((held - done_at) * 1000)
                totals_ms.append((held - started) * 1000)

        async with anyio.create_task_group() as group:
            for index in range(concurrency):
                group.start_soon(worker, delays[index::concurrency])
        # One plain round trip on the same session, for scale (the floor any result delivery pays).
        round_trips_ms: list[float] = []
        for _ in range(20):
            began = time.perf_counter()
            await conn.raw("echo", {"text": "x"})
            round_trips_ms.append((time.perf_counter() - began) * 1000)
        bench.add(
            "latency",
            kind=kind,
            transport=profile.transport,
            dialect=conn.dialect,
            protocol_version=conn.protocol_version,
            variant="task",
            completion_to_result_ms=summary(latencies_ms, digits=2),
            plain_round_trip_ms=summary(round_trips_ms, digits=2),
            call_total_ms=summary(totals_ms, digits=1),
            tool_delay_ms=[low, high],
            concurrency=concurrency,
            poll_hint=poll_hint_note(kind),
        )


def poll_hint_note(kind: str) -> str:
    if kind == "ours":
        try:
            from mcp_tasks_compat.server import PollPolicy

            policy = PollPolicy()
            return (
                f"default PollPolicy: clamp(age*{policy.ratio}, {policy.minimum_ms}, {policy.maximum_ms}) ms"
            )
        except ImportError:
            return "n/a"
    if kind == "fastmcp4":
        return "TaskConfig default poll_interval 5000 ms"
    if kind == "fastmcp3":
        return "TaskConfig default poll_interval 5000 ms"
    return "n/a"


def targets(rows: Sequence[Row]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for row in find(rows, section="latency", kind="ours"):
        latency = row["completion_to_result_ms"]
        limit = 50.0 if row["dialect"] == "2026-07-28" else 10.0
        out.append(
            target(
                f"completion-to-result p50 ms (mcp{row['major']}, {row['dialect']}, {row['transport']})",
                row["completion_to_result_ms"]["median"],
                limit,
                at_most=True,
                detail=f"p90 {latency['p90']}, p99 {latency['p99']} ms",
            )
        )
    return out


def tables(rows: Sequence[Row]) -> list[str]:
    return [
        "### 2. Completion-to-result latency "
        "(tool returns → caller holds the result, ms; the tool first sleeps a random delay)",
        table(
            [
                "mcp",
                "server",
                "dialect",
                "transport",
                "p50",
                "p90",
                "p99",
                "n",
                "callers",
                "plain round trip p50 ms",
                "poll hint (server default)",
            ],
            (
                (
                    r["major"],
                    server_name(r["kind"]),
                    r["dialect"],
                    r["transport"],
                    r["completion_to_result_ms"]["median"],
                    r["completion_to_result_ms"]["p90"],
                    r["completion_to_result_ms"]["p99"],
                    r["completion_to_result_ms"]["n"],
                    r["concurrency"],
                    (r.get("plain_round_trip_ms") or {}).get("median"),
                    r["poll_hint"],
                )
                for r in find(rows, section="latency")
            ),
        ),
    ]


DESCRIBED = """\
2. **Completion-to-result latency**: the tool stamps `time.monotonic()` (CLOCK_MONOTONIC, shared
   by every process on Linux) as it returns; the caller subtracts it from its clock when
   `call_tool(mode="task")` returns. The tool sleeps a random 20-300 ms first, so completions fall
   at random points of the poll schedule. Our server's default poll hint; the peers' defaults."""

SECTION = Section(
    name="latency",
    profiles=PROFILES,
    measure=measure,
    targets=targets,
    tables=tables,
    described=DESCRIBED,
)
