"""Section 1, plain-call overhead: our ``call_tool(mode="plain"|"auto")`` next to the raw SDK call.

Target: each of ours at most 1.05x the raw SDK ``session.call_tool`` on the same session.

The quick path as users feel it (issue 44): a quick task-optional tool (``job``) called with
``call_tool(mode="auto")`` on a ``TaskClientSession``, next to the bare SDK ``ClientSession``
calling the same tool on the same server (stdio, each session its own server process). Target on
2026-07-28: at least 0.9x the bare session's calls/s (on 2025-11-25 the tool is a task: shown only).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

from .. import clients, cpu
from ..harness import Bench, open_target, rotated
from ..section import Row, Section, find, server_name, spread, table, target
from ..stats import ratio_summary, summary

__all__ = ["SECTION", "OverheadProfile"]


@dataclass(frozen=True)
class OverheadProfile:
    transports: tuple[str, ...]
    calls: int  # calls per variant per round
    rounds: int
    quick_calls: int = 100  # the quick path: turns per round (each variant once per turn)
    quick_rounds: int = 15


PROFILES = {
    "smoke": OverheadProfile(transports=("memory",), calls=5, rounds=2, quick_calls=5, quick_rounds=2),
    # enough rounds for the p10-p90 of the ratio to settle within ~5 %
    "full": OverheadProfile(transports=("memory", "http"), calls=100, rounds=15),
}

QUICK_TARGET = 0.9
"""Issue 44: ``call_tool(mode="auto")`` on a ``TaskClientSession`` >= 0.9x the bare session's calls/s."""

QUICK_VARIANTS = ("bare", "auto", "plain")
"""The bare SDK ``ClientSession``'s ``call_tool``; a ``TaskClientSession``'s with ``mode="auto"``
and with ``mode="plain"``: each on its own session and server process."""


async def measure(bench: Bench, profile: OverheadProfile) -> None:
    for transport in profile.transports:
        await bench.guarded(f"overhead/{transport}", lambda t=transport: overhead(bench, profile, t))
    if bench.ours:
        await bench.guarded("overhead/quick-path/stdio", lambda: quick_path(bench, profile))


async def quick_path(bench: Bench, profile: OverheadProfile) -> None:
    """The quick task-optional tool ``job`` through a ``TaskClientSession`` (``auto``, ``plain``)
    and through the bare SDK ``ClientSession``, on our server over stdio; interleaved call by call
    (the order rotated every turn). Per variant: wall µs per call, calls/s ÷ the bare session's
    (per round), and the CPU per call of the bench process and of the server process serving it."""
    transport = "stdio"
    async with AsyncExitStack() as stack:
        connect = await stack.enter_async_context(open_target("ours", transport))
        conns = {
            "bare": await stack.enter_async_context(connect(ours=False)),
            "auto": await stack.enter_async_context(connect(task_session=True)),
            "plain": await stack.enter_async_context(connect(task_session=True)),
        }
        clocks = {variant: cpu.cpu_clock(conn.server_pid) for variant, conn in conns.items()}

        async def one_call(variant: str) -> None:
            if variant == "bare":
                await conns[variant].raw("job", {})
            else:
                await conns[variant].session_call("job", {}, mode=variant)

        for variant in QUICK_VARIANTS:  # warm (a fresh process's first calls run slower)
            for _ in range(max(3, profile.quick_calls // 5)):
                await one_call(variant)
        wall: dict[str, list[float]] = {variant: [] for variant in QUICK_VARIANTS}
        client_cpu: dict[str, list[float]] = {variant: [] for variant in QUICK_VARIANTS}
        server_cpu: dict[str, list[float]] = {variant: [] for variant in QUICK_VARIANTS}
        turn = 0
        for _round in range(profile.quick_rounds):
            spent = dict.fromkeys(QUICK_VARIANTS, 0.0)
            used = {variant: [0, 0] for variant in QUICK_VARIANTS}
            for _ in range(profile.quick_calls):
                for variant in rotated(QUICK_VARIANTS, turn):
                    before = clocks[variant].read()
                    started = time.perf_counter()
                    await one_call(variant)
                    spent[variant] += time.perf_counter() - started
                    cost = clocks[variant].since(before)
                    used[variant][0] += cost.client_ns
                    used[variant][1] += cost.server_ns or 0
                turn += 1
            for variant in QUICK_VARIANTS:
                wall[variant].append(spent[variant] / profile.quick_calls * 1e6)
                client_cpu[variant].append(used[variant][0] / profile.quick_calls / 1000)
                server_cpu[variant].append(used[variant][1] / profile.quick_calls / 1000)
        for variant in QUICK_VARIANTS:
            conn = conns["auto"] if variant == "bare" else conns[variant]
            bench.add(
                "overhead",
                kind="ours",
                transport=transport,
                dialect=conn.dialect,
                protocol_version=conn.protocol_version,
                variant=f"quick-path/{variant}",
                tool="job",
                per_call_us=summary(wall[variant], digits=1),
                # calls/s of the variant ÷ calls/s of the bare session = bare µs ÷ variant µs, per round
                rate_to_bare=ratio_summary(wall["bare"], wall[variant]),
                client_cpu_us=round(statistics.median(client_cpu[variant]), 1),
                server_cpu_us=round(statistics.median(server_cpu[variant]), 1),
                calls_per_round=profile.quick_calls,
            )


async def overhead(bench: Bench, profile: OverheadProfile, transport: str) -> None:
    """Our call_tool(mode="plain"|"auto") vs the raw SDK session.call_tool, on the same session.

    Variants: ``sdk-server/raw`` (the SDK's own server, no tasks), ``raw``, ``plain`` and ``auto``
    on our server, and ``raw``/``plain``/``auto`` on each peer; all on the plain tool ``echo``.
    """
    kinds = ["sdk", *bench.task_kinds()] if bench.ours else ["sdk", *bench.peers()]
    async with AsyncExitStack() as stack:
        conns: dict[str, clients.Conn] = {}
        for kind in kinds:
            connect = await stack.enter_async_context(open_target(kind, transport))
            conns[kind] = await stack.enter_async_context(connect())
        variants: list[tuple[str, str]] = [("sdk", "raw")]
        for kind in kinds[1:]:
            variants += [(kind, "raw"), (kind, "plain"), (kind, "auto")] if bench.ours else [(kind, "raw")]

        async def one_call(kind: str, variant: str) -> None:
            conn = conns[kind]
            if variant == "raw":
                await conn.raw("echo", {"text": "x"})
            else:
                await conn.call("echo", {"text": "x"}, mode=variant)

        for kind, variant in variants:  # warm every path (imports, caches, tools/list)
            for _ in range(3):
                await one_call(kind, variant)
        # Interleaved call by call (each variant once per turn, the order rotated every turn), so
        # whatever drifts over a round (a GC pass, the CPU clock, another process) lands on every
        # variant alike and the per-round ratios compare calls made microseconds apart. Blocks of
        # 100 calls per variant, as measured before, let drift within a round into the ratio
        # (p10-p90 0.67-1.69 on an idle machine).
        per_call_us: dict[tuple[str, str], list[float]] = {v: [] for v in variants}
        turn = 0
        for _round in range(profile.rounds):
            spent = dict.fromkeys(variants, 0.0)
            for _ in range(profile.calls):
                for kind, variant in rotated(variants, turn):
                    started = time.perf_counter()
                    await one_call(kind, variant)
                    spent[(kind, variant)] += time.perf_counter() - started
                turn += 1
            for key, seconds in spent.items():
                per_call_us[key].append(seconds / profile.calls * 1e6)
        _add_rows(bench, profile, transport, conns, per_call_us)


def _add_rows(
    bench: Bench,
    profile: OverheadProfile,
    transport: str,
    conns: dict[str, clients.Conn],
    per_call_us: dict[tuple[str, str], list[float]],
) -> None:
    for (kind, variant), samples in per_call_us.items():
        baseline = per_call_us[(kind, "raw")] if kind != "sdk" else per_call_us[("sdk", "raw")]
        row: dict[str, Any] = {
            "kind": kind,
            "transport": transport,
            "dialect": conns[kind].dialect,
            "protocol_version": conns[kind].protocol_version,
            "variant": variant,
            "per_call_us": summary(samples, digits=1),
            "ratio_to_raw": ratio_summary(samples, baseline),
            "calls_per_round": profile.calls,
        }
        if kind != "sdk" and variant == "raw":
            row["ratio_to_sdk_server"] = ratio_summary(samples, per_call_us[("sdk", "raw")])
        bench.add("overhead", **row)


def targets(rows: Sequence[Row]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for row in find(rows, section="overhead", kind="ours"):
        if row["variant"] == "quick-path/auto" and row["dialect"] == "2026-07-28":
            out.append(
                target(
                    f'quick path, `call_tool(mode="auto")` on a TaskClientSession ÷ the bare SDK '
                    f"ClientSession, calls/s (mcp{row['major']}, {row['transport']})",
                    row["rate_to_bare"]["median"],
                    QUICK_TARGET,
                    at_most=False,
                    detail=f"ratio p10-p90 {row['rate_to_bare']['p10']}-{row['rate_to_bare']['p90']}; "
                    f"{row['per_call_us']['median']} µs per call",
                )
            )
        if row["variant"] in ("plain", "auto"):
            out.append(
                target(
                    f"plain-call overhead, mode={row['variant']!r} vs raw SDK "
                    f"(mcp{row['major']}, {row['transport']})",
                    row["ratio_to_raw"]["median"],
                    1.05,
                    at_most=True,
                    detail=f"ratio p10-p90 {row['ratio_to_raw']['p10']}-{row['ratio_to_raw']['p90']}",
                )
            )
    return out


def tables(rows: Sequence[Row]) -> list[str]:
    return [
        "### 1. Plain-call overhead "
        "(tool `echo`, µs per call; ratio to the raw SDK call on the same session)",
        table(
            ["mcp", "transport", "server", "call", "µs/call median (p10-p90)", "ratio to raw (p10-p90)"],
            (
                (
                    r["major"],
                    r["transport"],
                    server_name(r["kind"]),
                    {"raw": "raw `session.call_tool`"}.get(
                        r["variant"], f"`call_tool(mode={r['variant']!r})`"
                    ),
                    spread(r["per_call_us"]),
                    spread(r["ratio_to_raw"]),
                )
                for r in find(rows, section="overhead")
                if not r["variant"].startswith("quick-path/")
            ),
        ),
        *_quick_path_table(rows),
    ]


QUICK_CALLS = {
    "bare": "bare SDK `ClientSession.call_tool`",
    "auto": '`TaskClientSession.call_tool(mode="auto")`',
    "plain": '`TaskClientSession.call_tool(mode="plain")`',
}


def _quick_path_table(rows: Sequence[Row]) -> list[str]:
    quick = [r for r in find(rows, section="overhead") if r["variant"].startswith("quick-path/")]
    if not quick:
        return []
    return [
        "The quick path as users feel it (task-optional tool `job` returning at once, stdio, each "
        "session on its own server process; interleaved call by call; CPU µs per call, median of rounds):",
        table(
            [
                "mcp",
                "dialect",
                "call",
                "µs/call median (p10-p90)",
                "calls/s ÷ bare session (p10-p90)",
                "CPU µs client",
                "CPU µs server",
            ],
            (
                (
                    r["major"],
                    r["dialect"],
                    QUICK_CALLS[r["variant"].split("/", 1)[1]],
                    spread(r["per_call_us"]),
                    spread(r["rate_to_bare"]),
                    r["client_cpu_us"],
                    r["server_cpu_us"],
                )
                for r in quick
            ),
        ),
    ]


DESCRIBED = """\
1. **Plain-call overhead**: `call_tool(mode="plain")` and `mode="auto"` against the raw SDK
   `session.call_tool` on the same session and server (tool `echo`, not task-capable), in memory
   and over streamable HTTP (uvicorn, 127.0.0.1, server in its own process). The SDK's own
   server without tasks is shown as the baseline for our server's cost. The variants take turns
   call by call (the order rotated every turn), so each round's ratio compares calls made
   microseconds apart; the spread is over rounds of 100 turns. The quick path as users feel it:
   the task-optional tool `job` through `TaskClientSession.call_tool(mode="auto")` (and
   `mode="plain"`) next to the bare SDK `ClientSession.call_tool`, over stdio, each session on its
   own server process, interleaved call by call, with each side's CPU per call."""

SECTION = Section(
    name="overhead",
    profiles=PROFILES,
    measure=measure,
    targets=targets,
    tables=tables,
    described=DESCRIBED,
    measures_tasks=False,
)
