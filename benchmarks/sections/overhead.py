"""Section 1, plain-call overhead: our ``call_tool(mode="plain"|"auto")`` next to the raw SDK call.

Target: each of ours at most 1.05x the raw SDK ``session.call_tool`` on the same session.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

from .. import clients
from ..harness import Bench, open_target, rotated
from ..section import Row, Section, find, server_name, spread, table, target
from ..stats import ratio_summary, summary

__all__ = ["SECTION", "OverheadProfile"]


@dataclass(frozen=True)
class OverheadProfile:
    transports: tuple[str, ...]
    calls: int  # calls per variant per round
    rounds: int


PROFILES = {
    "smoke": OverheadProfile(transports=("memory",), calls=5, rounds=2),
    # enough rounds for the p10-p90 of the ratio to settle within ~5 %
    "full": OverheadProfile(transports=("memory", "http"), calls=100, rounds=15),
}


async def measure(bench: Bench, profile: OverheadProfile) -> None:
    for transport in profile.transports:
        await bench.guarded(f"overhead/{transport}", lambda t=transport: overhead(bench, profile, t))


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
            ),
        ),
    ]


DESCRIBED = """\
1. **Plain-call overhead**: `call_tool(mode="plain")` and `mode="auto"` against the raw SDK
   `session.call_tool` on the same session and server (tool `echo`, not task-capable), in memory
   and over streamable HTTP (uvicorn, 127.0.0.1, server in its own process). The SDK's own
   server without tasks is shown as the baseline for our server's cost. The variants take turns
   call by call (the order rotated every turn), so each round's ratio compares calls made
   microseconds apart; the spread is over rounds of 100 turns."""

SECTION = Section(
    name="overhead",
    profiles=PROFILES,
    measure=measure,
    targets=targets,
    tables=tables,
    described=DESCRIBED,
    measures_tasks=False,
)
