"""Section 10, the plain hand-off's cost to a quick tool: a plain client's calls with
``plain_handoff_s`` on, next to the same calls with it off (docs/any-host.md).

Target: the rate with the option on at least 0.97x the rate with it off (the tool ends well
within the deadline, so the answer is the tool's own; the hand-off only waits for it).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

from mcp_tasks_compat._client_api import negotiate
from mcp_tasks_compat._testkit import sessions as kit_sessions
from mcp_tasks_compat._testkit.processes import HttpServerProcess, child_environment
from mcp_tasks_compat.server import TaskServer

from ..harness import Bench, rotated
from ..section import Row, Section, find, spread, table, target
from ..stats import ratio_summary, summary

__all__ = ["SECTION", "HandoffProfile"]

DEADLINE_S = 45.0
"""The deadline of the "on" server: far longer than the tool, as a server author would set it."""


@dataclass(frozen=True)
class HandoffProfile:
    transports: tuple[str, ...]
    calls: int  # calls per variant per round
    rounds: int


PROFILES = {
    "smoke": HandoffProfile(transports=("memory",), calls=5, rounds=2),
    "full": HandoffProfile(transports=("memory", "http"), calls=200, rounds=15),
}

QUICK_CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "memory": ("quick", {"text": "x"}),
    "http": ("slow_echo", {"text": "x", "seconds": 0, "steps": 1}),  # the example server's
}
"""The quick task-capable tool called on each transport, with its arguments."""


def _server(plain_handoff_s: float | None) -> TaskServer:
    app = TaskServer("bench-handoff", plain_handoff_s=plain_handoff_s)

    @app.tool(task="optional")
    async def quick(text: str) -> str:
        return text

    return app


async def measure(bench: Bench, profile: HandoffProfile) -> None:
    if not bench.ours:
        return
    for transport in profile.transports:
        await bench.guarded(f"handoff/{transport}", lambda t=transport: handoff(bench, profile, t))


async def _session(stack: AsyncExitStack, transport: str, plain_handoff_s: float | None) -> Any:
    """A bare SDK session to a server with the option as given: in memory a ``TaskServer`` with
    the tool ``quick``; over HTTP ``example-server`` in a process of its own."""
    if transport == "memory":
        app = _server(plain_handoff_s)
        return await stack.enter_async_context(kit_sessions.connect_in_memory(app, bare=True))
    command = [sys.executable, "-m", "mcp_tasks_compat", "example-server", "--transport", "http"]
    command += ["--port", "0"]
    if plain_handoff_s is not None:
        command += ["--plain-handoff-s", f"{plain_handoff_s:g}"]
    url = stack.enter_context(HttpServerProcess(command, env=child_environment()))
    return await stack.enter_async_context(kit_sessions.connect_http(url, bare=True))


async def handoff(bench: Bench, profile: HandoffProfile, transport: str) -> None:
    """A bare SDK session (no task dialect) per server, a quick task-capable tool called plainly;
    the two variants take turns call by call, the order rotated every turn."""
    variants = ("off", "on")
    tool, arguments = QUICK_CALLS[transport]
    async with AsyncExitStack() as stack:
        sessions: dict[str, Any] = {}
        for variant in variants:
            sessions[variant] = await _session(stack, transport, DEADLINE_S if variant == "on" else None)
        for variant in variants:  # warm both paths
            for _ in range(3):
                await sessions[variant].call_tool(tool, arguments)
        per_call_us: dict[str, list[float]] = {variant: [] for variant in variants}
        turn = 0
        for _round in range(profile.rounds):
            spent = dict.fromkeys(variants, 0.0)
            for _ in range(profile.calls):
                for variant in rotated(variants, turn):
                    started = time.perf_counter()
                    await sessions[variant].call_tool(tool, arguments)
                    spent[variant] += time.perf_counter() - started
                turn += 1
            for variant, seconds in spent.items():
                per_call_us[variant].append(seconds / profile.calls * 1e6)
        version = (await negotiate(sessions["on"])).protocol_version
    for variant in variants:
        bench.add(
            "handoff",
            kind="ours",
            transport=transport,
            tool=tool,
            protocol_version=version,
            variant=variant,
            per_call_us=summary(per_call_us[variant], digits=1),
            # calls per second on ÷ off, per round: the off round's time over the on round's
            rate_to_off=ratio_summary(per_call_us["off"], per_call_us[variant]),
            calls_per_round=profile.calls,
        )


def targets(rows: Sequence[Row]) -> list[dict[str, Any]]:
    return [
        target(
            f"plain call of a quick tool, plain_handoff_s on ÷ off (mcp{row['major']}, {row['transport']})",
            row["rate_to_off"]["median"],
            0.97,
            at_most=False,
            detail=f"rate ratio p10-p90 {row['rate_to_off']['p10']}-{row['rate_to_off']['p90']}",
        )
        for row in find(rows, section="handoff", variant="on")
    ]


def tables(rows: Sequence[Row]) -> list[str]:
    return [
        "### 10. The plain hand-off's cost to a quick tool "
        "(a task-capable tool, a bare SDK client; µs per call; rate ratio to the option off)",
        table(
            [
                "mcp",
                "transport",
                "tool",
                "protocol",
                "plain_handoff_s",
                "µs/call median (p10-p90)",
                "rate ÷ off (p10-p90)",
            ],
            (
                (
                    r["major"],
                    r["transport"],
                    f"`{r['tool']}`",
                    r["protocol_version"],
                    f"{DEADLINE_S:g} s" if r["variant"] == "on" else "off",
                    spread(r["per_call_us"]),
                    spread(r["rate_to_off"]),
                )
                for r in find(rows, section="handoff")
            ),
        ),
    ]


DESCRIBED = """\
10. **The plain hand-off's cost to a quick tool**: a bare SDK `ClientSession` (no task dialect)
   calls a task-capable tool that returns at once plainly, on a server with
   `plain_handoff_s=45` and on one without it: in memory a `TaskServer` with the tool `quick`,
   over streamable HTTP `example-server` (`--plain-handoff-s 45` or not) in a process of its own
   with `slow_echo` (`seconds=0`). The two take turns call by call (the order rotated every
   turn); the ratio is the calls per second with the option on over those with it off, per round."""

SECTION = Section(
    name="handoff",
    profiles=PROFILES,
    measure=measure,
    targets=targets,
    tables=tables,
    described=DESCRIBED,
    measures_tasks=False,
)
