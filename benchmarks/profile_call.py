"""CPU per call of a quick tool over stdio, variant by variant, and where it goes (cProfile).

A tool for finding hot spots, not a section of the bench: it prints, it asserts nothing.

    python -m benchmarks.profile_call raw auto task
    python -m benchmarks.profile_call --calls 40 --rounds 40 raw raw-ours auto
    python -m benchmarks.profile_call --profile-dir /tmp/prof raw auto   # + cProfile, both sides

Each variant gets its own server process of our kind (``python -m benchmarks.servers ours
--transport stdio``, as the bench starts it) and its own session; the variants take turns in
blocks of ``--calls`` calls, the order rotated every round, and each block's CPU is read from the
bench process's clock (the client) and from the serving process's CPU clock (the server,
:mod:`benchmarks.cpu`). Printed: per variant the medians of wall and CPU µs per call, and the
median of the per-round differences to the first variant (with their quartiles: differences
smaller than those are noise).

Variants: ``raw`` (the SDK's ``session.call_tool`` on a bare session: what any client pays),
``raw-ours`` (the SDK's call on a session built with our ``session_kwargs``: what the server pays
for a client that declares tasks), ``auto``, ``plain`` (our ``call_tool(mode=...)``) and ``task``
(``mode="task"`` with the task-at-once hint: a real task each call).

With ``--profile-dir``, after the rounds each variant runs ``--profile-calls`` more calls with
cProfile on in the client and (toggled by a signal, so start-up and warm-up are left out) in its
server; the ``.prof`` files are written there, and the functions of ``mcp_tasks_compat`` are listed
by their own time per call. cProfile's own cost inflates many small calls most: read its list as
a ranking, and the CPU clocks above as the measure.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import signal
import statistics
import sys
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio

from . import clients, cpu
from .harness import rotated

__all__ = ["main"]

VARIANTS = ("raw", "raw-ours", "auto", "plain", "task")
WARM_CALLS = 100


async def _one(conn: clients.Conn, variant: str) -> None:
    if variant in ("raw", "raw-ours"):
        await conn.raw("job", {})
    elif variant == "task":
        await conn.call("job", {}, mode="task", at_once=True)
    else:
        await conn.call("job", {}, mode=variant)


def _server(variant: str, off: Sequence[str], profile_dir: Path | None) -> clients.ServerProcess:
    """Our server over stdio, as the bench starts it (under the profiling entry with ``profile_dir``)."""
    argv = [sys.executable, "-m", "benchmarks.servers", "ours", "--transport", "stdio"]
    if profile_dir is not None:
        out = profile_dir / f"server-{variant}.prof"
        entry = [sys.executable, "-m", "benchmarks.profile_call", "--serve-profiled", str(out), "--"]
        argv = [*entry, *argv[3:]]
    if off:
        argv += ["--off", ",".join(off)]
    return clients.ServerProcess("ours", "stdio", argv)


def _quartiles(values: Sequence[float]) -> tuple[float, float, float]:
    ordered = sorted(values)
    size = len(ordered)
    return ordered[size // 4], statistics.median(ordered), ordered[(3 * size) // 4]


async def _measure(args: argparse.Namespace) -> None:
    variants: list[str] = args.variants
    off = tuple(name for name in args.off.split(",") if name)
    profile_dir = Path(args.profile_dir) if args.profile_dir else None
    if profile_dir is not None:
        profile_dir.mkdir(parents=True, exist_ok=True)
    async with AsyncExitStack() as stack:
        conns: dict[str, clients.Conn] = {}
        for variant in variants:
            process = _server(variant, off, profile_dir)
            conns[variant] = await stack.enter_async_context(
                clients.connect("stdio", kind="ours", process=process, ours=variant != "raw", off=off)
            )
        for _ in range(WARM_CALLS):
            for variant in variants:
                await _one(conns[variant], variant)
        clocks = {variant: cpu.cpu_clock(conn.server_pid) for variant, conn in conns.items()}
        figures = {variant: {"wall": list[float](), "client": [], "server": []} for variant in variants}
        for round_index in range(args.rounds):
            for variant in rotated(variants, round_index):
                clock = clocks[variant]
                before = clock.read()
                started = time.perf_counter()
                for _ in range(args.calls):
                    await _one(conns[variant], variant)
                wall = (time.perf_counter() - started) / args.calls * 1e6
                client_us, server_us = clock.since(before).per_call_us(args.calls)
                figures[variant]["wall"].append(wall)
                figures[variant]["client"].append(client_us)
                figures[variant]["server"].append(server_us if server_us is not None else float("nan"))
        _print_figures(variants, figures, args)
        if profile_dir is not None:
            for variant in variants:
                await _profile(conns[variant], variant, args.profile_calls, profile_dir)
    if profile_dir is not None:  # the servers wrote theirs as they were told to stop
        for variant in variants:
            _print_profile(profile_dir, variant, args.profile_calls)


def _print_figures(variants: Sequence[str], figures: dict[str, dict[str, list[float]]], args: Any) -> None:
    base = figures[variants[0]]
    print(
        f"{args.rounds} rounds of {args.calls} calls per variant; µs per call, median "
        f"(Δ: median of the per-round differences to {variants[0]!r} [quartiles])"
    )
    for variant in variants:
        mine = figures[variant]
        line = [f"{variant:9s} wall {statistics.median(mine['wall']):8.1f}"]
        for side in ("client", "server"):
            low, mid, high = _quartiles([a - b for a, b in zip(mine[side], base[side], strict=True)])
            line.append(
                f"{side} CPU {statistics.median(mine[side]):7.1f} Δ {mid:+7.1f} [{low:+.0f}, {high:+.0f}]"
            )
        print("  ".join(line))


async def _profile(conn: clients.Conn, variant: str, calls: int, profile_dir: Path) -> None:
    if conn.server_pid is not None:
        os.kill(conn.server_pid, signal.SIGUSR1)
    await anyio.sleep(0.2)
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(calls):
        await _one(conn, variant)
    profile.disable()
    profile.dump_stats(profile_dir / f"client-{variant}.prof")
    if conn.server_pid is not None:
        os.kill(conn.server_pid, signal.SIGUSR2)
    await anyio.sleep(0.5)


def _print_profile(profile_dir: Path, variant: str, calls: int, top: int = 15) -> None:
    for side in ("client", "server"):
        path = profile_dir / f"{side}-{variant}.prof"
        if not path.exists():
            print(f"\n{variant}, {side}: no profile ({path} missing)")
            continue
        stats: dict[Any, Any] = pstats.Stats(str(path)).stats  # type: ignore[attr-defined]
        ours = [
            (own / calls * 1e6, cumulative / calls * 1e6, f"{Path(where).name}:{line}({name})")
            for (where, line, name), (_, _, own, cumulative, _) in stats.items()
            if "mcp_tasks_compat" in where
        ]
        ours.sort(reverse=True)
        total = sum(own for own, _, _ in ours)
        print(f"\n{variant}, {side}: mcp_tasks_compat's own time under cProfile {total:.1f} µs per call")
        for own, cumulative, where in ours[:top]:
            print(f"  {own:7.2f} own  {cumulative:8.2f} cumulative  {where}")


def _serve_profiled(out: str, server_args: list[str]) -> None:
    """``benchmarks.servers`` with cProfile started on SIGUSR1 and dumped to ``out`` on SIGUSR2."""
    from . import servers

    profile = cProfile.Profile()

    def start(*_: object) -> None:
        profile.enable()

    def stop(*_: object) -> None:
        profile.disable()
        profile.dump_stats(out)

    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, stop)
    servers.main(server_args)


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--serve-profiled"]:
        _serve_profiled(argv[1], argv[3:])  # --serve-profiled OUT -- <benchmarks.servers arguments>
        return
    parser = argparse.ArgumentParser(prog="python -m benchmarks.profile_call")
    parser.add_argument("variants", nargs="+", choices=VARIANTS, help="the first is the baseline")
    parser.add_argument("--calls", type=int, default=30, help="calls per block")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--off", default="", help="mechanisms turned off (benchmarks/mechanisms.py)")
    parser.add_argument("--profile-dir", default=None, help="also cProfile both sides, files here")
    parser.add_argument("--profile-calls", type=int, default=2000)
    args = parser.parse_args(argv)
    anyio.run(_measure, args)


if __name__ == "__main__":
    main()
