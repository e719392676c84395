"""What a task costs the PostgreSQL store, beside the other stores: statements per task and task rate.

``python -m benchmarks.postgres_store_cost`` (the environment's mcp major, each dialect it serves):

1. **Statements per task** on PostgreSQL: our server in this process (in-memory transport, tool
   ``job`` returning at once, ``call_tool(mode="task")`` to completion, one caller), every
   statement the store sends counted at :meth:`PostgresLink.fetch` (each one round trip), by kind.
2. **Task rate** on memory, SQLite, Redis and PostgreSQL with one caller and ``--callers``
   concurrent callers, rounds interleaved, the ratio to memory taken within each round
   (``benchmarks/sections/stores.py``'s measurement, a smaller profile); median of ``--rounds``.
"""

from __future__ import annotations

import argparse
from collections import Counter
from typing import Any

import anyio

from .harness import Bench, dialects_for, opt_ins_for
from .sections.stores import StoresProfile, open_store_target, store_sites, store_throughput

__all__ = ["main"]


def _kind(query: str) -> str:
    if "create_task" in query:
        return "create (create_task)"
    if query.startswith("WITH saved AS (UPDATE"):
        return "save (conditional UPDATE + NOTIFY)"
    if "FROM" in query and ".tasks WHERE task_id" in query:
        return "get"
    return query.split()[0].lower() + " (other: clock, sweeps, queue)"


async def statements_per_task(tasks: int) -> list[str]:
    from mcp_tasks_compat._engine.stores import postgres_link

    counts: Counter[str] = Counter()
    fetch = postgres_link.PostgresLink.fetch

    async def counted(self: Any, query: str, params: Any = ()) -> Any:
        counts[_kind(query)] += 1
        return await fetch(self, query, params)

    postgres_link.PostgresLink.fetch = counted  # this process only: a bench, never the library
    lines: list[str] = []
    bench = Bench(profile_name="full", kinds=["ours"])
    try:
        with store_sites() as sites:
            for dialect in dialects_for("ours", bench.major):
                async with (
                    open_store_target("postgres", sites.url("postgres"), "memory") as target,
                    target.connect("memory", opt_ins=opt_ins_for(dialect, bench.major)) as conn,
                ):
                    for _ in range(5):  # warm: connections, prepared statements
                        await conn.call("job", {}, mode="task", at_once=True)
                    counts.clear()
                    for _ in range(tasks):
                        await conn.call("job", {}, mode="task", at_once=True)
                    per_task = ", ".join(f"{kind} {n / tasks:.2f}" for kind, n in sorted(counts.items()))
                    lines.append(f"mcp{bench.major} {dialect}: statements per task: {per_task}")
    finally:
        postgres_link.PostgresLink.fetch = fetch
    return lines


async def rates(rounds: int, callers: int) -> list[str]:
    bench = Bench(profile_name="full", kinds=["ours"])
    profile = StoresProfile(
        transports=("memory",),
        seq_calls=40,
        rounds=rounds,
        clients=callers,
        calls_per_client=6,
        get_sizes=(10,),
        get_targets=1,
        get_reads=1,
        get_rounds=1,
    )
    with store_sites() as sites:
        skipped = [f"{name} skipped: {reason}" for name, reason in sites.skipped.items()]
        for dialect in dialects_for("ours", bench.major):
            await store_throughput(bench, profile, sites, "memory", dialect)
    lines = list(skipped)
    for row in bench.rows:
        ratio = row["ratio_to_memory"]
        lines.append(
            f"mcp{bench.major} {row['dialect']} {row['callers']} caller(s) {row['store']}:"
            f" {row['task_per_s']['median']} tasks/s, {ratio['median'] if ratio else 1.0}x memory"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--callers", type=int, default=50)
    args = parser.parse_args()
    for line in anyio.run(statements_per_task, args.tasks):
        print(line)
    for line in anyio.run(rates, args.rounds, args.callers):
        print(line)


if __name__ == "__main__":
    main()
