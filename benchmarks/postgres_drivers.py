"""Which PostgreSQL driver the store uses: psycopg 3 (async, with psycopg_pool) or asyncpg, measured.

``python -m benchmarks.postgres_drivers`` starts a throwaway cluster (``tools/postgres_server.py``)
and times the store's two hot statements, a create (``INSERT ... ON CONFLICT DO NOTHING``) and a
fenced save (one conditional ``UPDATE ... WHERE version = $ AND claim = $``), with each driver
through its own pool: tasks/s (one create and one save each) with 1 caller and with 50 concurrent
callers, the median of ``--repeats`` runs. The figures and the choice are in docs/deploy.md
("PostgreSQL: the driver").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable

from tools.postgres_server import PostgresServer, postgres_bindir

__all__ = ["main"]

_TABLE = """CREATE TABLE IF NOT EXISTS bench_tasks (
    task_id text PRIMARY KEY, version bigint NOT NULL, claim bigint NOT NULL,
    updated_at timestamptz NOT NULL, state jsonb NOT NULL)"""
_STATE = json.dumps({"task": {"status": "working", "statusMessage": "x" * 200}, "owner": "alice"})

Round = Callable[[str], Awaitable[None]]


async def _psycopg(url: str, size: int) -> tuple[Round, Callable[[], Awaitable[None]]]:
    from psycopg_pool import AsyncConnectionPool

    pool = AsyncConnectionPool(url, min_size=size, max_size=size, kwargs={"autocommit": True}, open=False)
    await pool.open(wait=True)
    async with pool.connection() as connection:
        await connection.execute(_TABLE)

    async def round_trip(task_id: str) -> None:
        async with pool.connection() as connection:
            await connection.execute(
                "INSERT INTO bench_tasks VALUES (%s, 1, 0, clock_timestamp(), %s::jsonb)"
                " ON CONFLICT DO NOTHING",
                (task_id, _STATE),
            )
        async with pool.connection() as connection:
            cursor = await connection.execute(
                "UPDATE bench_tasks SET version = 2, claim = 1, updated_at = clock_timestamp(),"
                " state = %s::jsonb WHERE task_id = %s AND version = 1 AND claim = 0",
                (_STATE, task_id),
            )
            assert cursor.rowcount == 1

    return round_trip, pool.close


async def _asyncpg(url: str, size: int) -> tuple[Round, Callable[[], Awaitable[None]]]:
    import asyncpg  # pyright: ignore[reportMissingTypeStubs]

    pool = await asyncpg.create_pool(url, min_size=size, max_size=size)  # pyright: ignore
    async with pool.acquire() as connection:  # pyright: ignore
        await connection.execute(_TABLE)  # pyright: ignore

    async def round_trip(task_id: str) -> None:
        async with pool.acquire() as connection:  # pyright: ignore
            await connection.execute(  # pyright: ignore
                "INSERT INTO bench_tasks VALUES ($1, 1, 0, clock_timestamp(), $2::jsonb)"
                " ON CONFLICT DO NOTHING",
                task_id,
                _STATE,
            )
        async with pool.acquire() as connection:  # pyright: ignore
            status = await connection.execute(  # pyright: ignore
                "UPDATE bench_tasks SET version = 2, claim = 1, updated_at = clock_timestamp(),"
                " state = $1::jsonb WHERE task_id = $2 AND version = 1 AND claim = 0",
                _STATE,
                task_id,
            )
            assert status == "UPDATE 1"

    return round_trip, pool.close  # pyright: ignore


async def _rate(round_trip: Round, callers: int, tasks: int) -> float:
    each = tasks // callers

    async def caller() -> None:
        for _ in range(each):
            await round_trip(uuid.uuid4().hex)

    started = time.perf_counter()
    await asyncio.gather(*(caller() for _ in range(callers)))
    return each * callers / (time.perf_counter() - started)


async def measure(url: str, *, tasks: int, repeats: int) -> dict[str, dict[int, float]]:
    figures: dict[str, dict[int, float]] = {}
    for name, opener in (("psycopg", _psycopg), ("asyncpg", _asyncpg)):
        figures[name] = {}
        for callers in (1, 50):
            round_trip, close = await opener(url, min(callers, 20))
            await _rate(round_trip, callers, min(tasks, 200))  # warm up: connections, plans
            rates = [await _rate(round_trip, callers, tasks) for _ in range(repeats)]
            figures[name][callers] = statistics.median(rates)
            await close()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    bindir = postgres_bindir()
    if bindir is None:
        raise SystemExit("PostgreSQL is not installed: apt-get install -y -q postgresql")
    server = PostgresServer(bindir)
    server.start()
    try:
        figures = asyncio.run(measure(server.url(), tasks=args.tasks, repeats=args.repeats))
    finally:
        server.remove()
    print(f"{server.version()}; create + fenced save per task; tasks/s, median of {args.repeats}")
    print(f"{'driver':<10}{'1 caller':>12}{'50 callers':>12}")
    for name, rates in figures.items():
        print(f"{name:<10}{rates[1]:>12.0f}{rates[50]:>12.0f}")


if __name__ == "__main__":
    main()
