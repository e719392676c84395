"""Section 4c (page item 8), creation: how fast long tasks are created, next to FastMCP 4.

A batch submitter's view (issue 27 §4): held tasks (a tool that runs until released, as a 300 s
tool would) created by a few concurrent creators, one session each, each kind of creator on a
fresh server, the kinds interleaved round by round. The creators:

* ours through our client (``start_tool``; on 2026-07-28 it sends the task-at-once hint);
* ours through the SDK's bare ``ClientSession`` declaring the Tasks extension (no hint: only the
  server's learnt grace spares it the inline grace);
* each peer through the same two clients (FastMCP 4 ignores the hint).

Each create's latency is kept, so a fresh server's first creates (the tool not yet learnt: they
wait out the grace) are shown apart from the rest. Target: ours at least 4x FastMCP 4's tasks
created per second with the same client, same run, the inline grace on (its default).
"""

from __future__ import annotations

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

__all__ = ["SECTION", "CreationProfile", "creators_for"]

RATE_VS_FASTMCP4 = 4.0

Creator = tuple[str, str]  # (server kind, client: "ours" or "sdk")


@dataclass(frozen=True)
class CreationProfile:
    transport: str
    creators: int  # concurrent creators, one session each
    tasks_per_creator: int
    rounds: int  # each creator kind once per round, on a fresh server, in rotated order
    first: int  # creates (by start order) of a fresh server reported apart from the rest
    wait_s: float  # bound on waiting for every held run to be inside the tool
    stall_s: float  # stop waiting when the count of running runs stops growing


PROFILES = {
    "smoke": CreationProfile(
        transport="memory", creators=2, tasks_per_creator=5, rounds=1, first=2, wait_s=20.0, stall_s=3.0
    ),
    # The scenario: 4 creators over HTTP, 1,000 held tasks per kind and round.
    "full": CreationProfile(
        transport="http", creators=4, tasks_per_creator=250, rounds=5, first=4, wait_s=120.0, stall_s=10.0
    ),
}


def creators_for(bench: Bench) -> list[Creator]:
    """The creators this environment can run: our client where installed; the SDK's bare client
    declaring the Tasks extension on mcp 2.x (1.x has no extension to declare)."""
    out: list[Creator] = []
    for kind in (["ours"] if "ours" in bench.kinds else []) + bench.peers():
        if bench.ours:
            out.append((kind, "ours"))
        if bench.major == 2 and kind in ("ours", "fastmcp4"):
            out.append((kind, "sdk"))
    return out


async def measure(bench: Bench, profile: CreationProfile) -> None:
    creators = creators_for(bench)
    if not creators:
        bench.notes.append("creation: not measured (no task server in --kinds)")
        return
    rounds: dict[Creator, list[dict[str, Any]]] = {creator: [] for creator in creators}
    for round_index in range(profile.rounds):
        for creator in rotated(creators, round_index):
            kind, client = creator

            async def one(
                k: str = kind, c: str = client, into: list[dict[str, Any]] = rounds[creator]
            ) -> None:
                into.append(await create_batch(profile, k, c))

            await bench.guarded(f"creation/{kind}/{client} client/round {round_index + 1}", one)
    _add_rows(bench, profile, rounds)


async def create_batch(profile: CreationProfile, kind: str, client: str) -> dict[str, Any]:
    """One fresh server of ``kind``; ``profile.creators`` sessions of ``client`` create held tasks
    at once; each create's latency and the rate; then every run is checked inside the tool (held,
    not queued) and released."""
    total = profile.creators * profile.tasks_per_creator
    peer = kind in PEERS
    async with (
        open_target(kind, profile.transport, concurrency=total if peer else None) as connect,
        connect(ours=False) as control,
        AsyncExitStack() as stack,
    ):
        conns = [
            await stack.enter_async_context(
                connect(ours=True) if client == "ours" else connect(ours=False, declare_tasks=True)
            )
            for _ in range(profile.creators)
        ]
        created: list[tuple[float, float]] = []  # (start offset s, latency ms) per create
        plain_answers = 0
        began = time.perf_counter()

        async def creator(conn: clients.Conn) -> None:
            nonlocal plain_answers
            for _ in range(profile.tasks_per_creator):
                start = time.perf_counter()
                if client == "ours":
                    await conn.start("job", {"hold": True})
                elif not clients.is_created_task(await conn.create_bare("job", {"hold": True})):
                    plain_answers += 1
                created.append((start - began, (time.perf_counter() - start) * 1000))

        async with anyio.create_task_group() as group:
            for conn in conns:
                group.start_soon(creator, conn)
        elapsed = time.perf_counter() - began
        if plain_answers:
            raise RuntimeError(f"{plain_answers} of {total} held calls were answered plainly, not as tasks")
        running = await _wait_running(profile, control, total)
        await control.raw("release")
        with anyio.move_on_after(profile.wait_s):
            while (await control.stats())["running"] > 0:  # noqa: ASYNC110
                await anyio.sleep(0.1)
    latencies = [ms for _, ms in sorted(created)]
    return {
        "dialect": conns[0].dialect,
        "protocol_version": conns[0].protocol_version,
        "created_per_s": total / elapsed,
        "first_ms": latencies[: profile.first],
        "rest_ms": latencies[profile.first :],
        "running_at_once": running,
    }


async def _wait_running(profile: CreationProfile, control: clients.Conn, total: int) -> int:
    """How many runs are inside the tool at once (all of them, unless a server queues them)."""
    running, best, best_at = 0, -1, time.perf_counter()
    with anyio.move_on_after(profile.wait_s):
        while (running := (await control.stats())["running"]) < total:
            if running > best:
                best, best_at = running, time.perf_counter()
            elif time.perf_counter() - best_at > profile.stall_s:
                break
            await anyio.sleep(0.1)
    return running


def _add_rows(bench: Bench, profile: CreationProfile, rounds: dict[Creator, list[dict[str, Any]]]) -> None:
    """One row per creator: rates over the rounds, and the per-round ratio to FastMCP 4 with the same
    client (rounds where both succeeded)."""
    for (kind, client), measured in rounds.items():
        if not measured:
            continue
        rates = [one["created_per_s"] for one in measured]
        row: dict[str, Any] = {
            "kind": kind,
            "client": client,
            "transport": profile.transport,
            "dialect": measured[0]["dialect"],
            "protocol_version": measured[0]["protocol_version"],
            "creators": profile.creators,
            "tasks": profile.creators * profile.tasks_per_creator,
            "rounds": len(measured),
            "created_per_s": summary(rates, digits=1),
            "first": profile.first,
            "first_ms": summary([ms for one in measured for ms in one["first_ms"]], digits=2),
            "rest_ms": summary([ms for one in measured for ms in one["rest_ms"]], digits=2),
            "running_at_once": min(one["running_at_once"] for one in measured),
        }
        peer = rounds.get(("fastmcp4", client), [])
        if kind == "ours" and len(peer) == len(measured):
            row["rate_to_fastmcp4"] = ratio_summary(rates, [one["created_per_s"] for one in peer])
        bench.add("creation", **row)


def targets(rows: Sequence[Row]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for row in find(rows, section="creation", kind="ours"):
        ratio = row.get("rate_to_fastmcp4")
        if not ratio:
            continue
        peers = find(rows, section="creation", kind="fastmcp4", client=row["client"], major=row["major"])
        peer_rate = peers[0]["created_per_s"]["median"] if peers else None
        client = "our client (start_tool)" if row["client"] == "ours" else "the SDK's client"
        out.append(
            target(
                f"long tasks created per second vs FastMCP 4, {row['tasks']} held tasks, "
                f"{row['creators']} creators, {client} (mcp{row['major']}, {row['transport']})",
                ratio["median"],
                RATE_VS_FASTMCP4,
                at_most=False,
                detail=f"{row['created_per_s']['median']} vs {peer_rate} tasks/s; ratio p10-p90 "
                f"{ratio['p10']}-{ratio['p90']} over {ratio['n']} rounds",
            )
        )
    return out


def tables(rows: Sequence[Row]) -> list[str]:
    mine = find(rows, section="creation")
    if not mine:
        return []
    return [
        "### 4c. Creating long tasks (held tasks created by concurrent creators, each kind on a fresh "
        "server; median (p10-p90) of rounds)",
        table(
            [
                "mcp",
                "server",
                "client",
                "dialect",
                "transport",
                "creators x tasks each",
                "created/s",
                "÷ FastMCP 4 (same client)",
                "first creates ms p50 (max)",
                "other creates ms p50 / p90",
                "running at once",
            ],
            (
                (
                    r["major"],
                    server_name(r["kind"]),
                    "ours (`start_tool`)" if r["client"] == "ours" else "SDK `ClientSession`",
                    r.get("dialect"),
                    r["transport"],
                    f"{r['creators']} x {r['tasks'] // r['creators']}",
                    spread(r["created_per_s"]),
                    spread(r.get("rate_to_fastmcp4")) if r.get("rate_to_fastmcp4") else None,
                    f"{r['first']}: {r['first_ms']['median']} ({r['first_ms']['max']})",
                    f"{r['rest_ms']['median']} / {r['rest_ms']['p90']}",
                    f"{r['running_at_once']} of {r['tasks']}",
                )
                for r in mine
            ),
        ),
    ]


DESCRIBED = """\
8. **Creating long tasks** (table 4c): 4 creators over HTTP, one session each, create 250 held
   tasks each (1,000; the tool waits on an event, as a 300 s tool would) as fast as they can; each
   kind of creator on a fresh server process, the kinds interleaved over 5 rounds; tasks created
   per second, and each create's latency, the first 4 (a fresh server has not seen the tool yet)
   apart from the rest. Creators: ours through our `start_tool` (on 2026-07-28 it asks our server
   for a task at once), ours through the SDK's bare `ClientSession` declaring the Tasks extension
   (no hint: only the server's learnt grace helps), and FastMCP 4 + fastmcp-tasks through both
   (its Docket worker concurrency set to the number of tasks). Ours runs with its defaults, the
   50 ms inline grace on."""

SECTION = Section(
    name="creation",
    profiles=PROFILES,
    measure=measure,
    targets=targets,
    tables=tables,
    described=DESCRIBED,
)
