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

Then **create while following** (issue 43): one session of our client creates held tasks one
after the other, each followed to its result from the moment it is created (``start_tool``, then
``result()`` in the background), as an agent that starts work and waits on all of it does; ours
(on 2026-07-28 its states pushed on the session's one listen stream) next to FastMCP 4 (polled
at its hint) with the same client, each on a fresh server, interleaved round by round. Target:
ours at least FastMCP 4's tasks created per second.
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
FOLLOWING_RATE_VS_FASTMCP4 = 1.0

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
    following_tasks: int  # create while following: held tasks created on one session
    following_rounds: int


PROFILES = {
    "smoke": CreationProfile(
        transport="memory",
        creators=2,
        tasks_per_creator=5,
        rounds=1,
        first=2,
        wait_s=20.0,
        stall_s=3.0,
        following_tasks=10,
        following_rounds=1,
    ),
    # The scenario: 4 creators over HTTP, 1,000 held tasks per kind and round.
    "full": CreationProfile(
        transport="http",
        creators=4,
        tasks_per_creator=250,
        rounds=5,
        first=4,
        wait_s=120.0,
        stall_s=10.0,
        following_tasks=200,
        following_rounds=5,
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
    await measure_following(bench, profile)


async def measure_following(bench: Bench, profile: CreationProfile) -> None:
    """Create while following, our client on each task server kind, fresh servers, interleaved."""
    if not bench.ours:
        return
    kinds = ["ours"] + [kind for kind in bench.peers() if kind == "fastmcp4"]
    rounds: dict[str, list[dict[str, Any]]] = {kind: [] for kind in kinds}
    for round_index in range(profile.following_rounds):
        for kind in rotated(kinds, round_index):

            async def one(k: str = kind) -> None:
                rounds[k].append(await create_following(profile, k))

            await bench.guarded(f"creation/{kind}/create while following/round {round_index + 1}", one)
    for kind, measured in rounds.items():
        if not measured:
            continue
        rates = [one["created_per_s"] for one in measured]
        row: dict[str, Any] = {
            "kind": kind,
            "client": "ours",
            "variant": "following",
            "transport": profile.transport,
            "dialect": measured[0]["dialect"],
            "protocol_version": measured[0]["protocol_version"],
            "tasks": profile.following_tasks,
            "rounds": len(measured),
            "created_per_s": summary(rates, digits=1),
            "create_ms": summary([ms for one in measured for ms in one["create_ms"]], digits=2),
            "requests_per_task": measured[-1]["requests_per_task"],
        }
        peer = rounds.get("fastmcp4", [])
        if kind == "ours" and len(peer) == len(measured):
            row["rate_to_fastmcp4"] = ratio_summary(rates, [one["created_per_s"] for one in peer])
        bench.add("creation", **row)


async def create_following(profile: CreationProfile, kind: str) -> dict[str, Any]:
    """One fresh server of ``kind``; one session of our client creates ``following_tasks`` held
    tasks one after the other, each followed from its creation; the rate, then every task
    released and its result read (checked: one per task)."""
    from ..mechanisms import RequestCounter

    total = profile.following_tasks
    counter = RequestCounter()
    async with (
        open_target(kind, profile.transport, concurrency=total if kind in PEERS else None) as connect,
        connect(ours=False) as control,
        connect(ours=True, counter=counter) as conn,
    ):
        results: list[Any] = []
        latencies: list[float] = []

        async def follow(handle: Any) -> None:
            results.append(await handle.result())

        async with anyio.create_task_group() as group:
            counter.by_method.clear()
            began = time.perf_counter()
            for _ in range(total):
                start = time.perf_counter()
                group.start_soon(follow, await conn.start("job", {"hold": True}))
                latencies.append((time.perf_counter() - start) * 1000)
            elapsed = time.perf_counter() - began
            requests = dict(counter.by_method)
            await _wait_running(profile, control, total)
            await control.raw("release")
            with anyio.fail_after(profile.wait_s):
                while len(results) < total:  # noqa: ASYNC110 - the follows end in this group
                    await anyio.sleep(0.05)
    if len(results) != total:
        raise RuntimeError(f"{len(results)} of {total} followed tasks came back")
    return {
        "dialect": conn.dialect,
        "protocol_version": conn.protocol_version,
        "created_per_s": total / elapsed,
        "create_ms": latencies,
        "requests_per_task": {method: round(count / total, 2) for method, count in sorted(requests.items())},
    }


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


def _batch_rows(rows: Sequence[Row], **match: Any) -> list[Row]:
    """The concurrent creators' rows (not create while following)."""
    return [row for row in find(rows, section="creation", **match) if row.get("variant") != "following"]


def targets(rows: Sequence[Row]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = _following_targets(rows)
    for row in _batch_rows(rows, kind="ours"):
        ratio = row.get("rate_to_fastmcp4")
        if not ratio:
            continue
        peers = _batch_rows(rows, kind="fastmcp4", client=row["client"], major=row["major"])
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


def _following_targets(rows: Sequence[Row]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for row in find(rows, section="creation", variant="following", kind="ours"):
        ratio = row.get("rate_to_fastmcp4")
        if not ratio:
            continue
        peers = find(rows, section="creation", variant="following", kind="fastmcp4", major=row["major"])
        peer_rate = peers[0]["created_per_s"]["median"] if peers else None
        out.append(
            target(
                f"tasks created per second while following the earlier ones vs FastMCP 4, {row['tasks']} "
                f"held tasks, one session of our client (mcp{row['major']}, {row['transport']})",
                ratio["median"],
                FOLLOWING_RATE_VS_FASTMCP4,
                at_most=False,
                detail=f"{row['created_per_s']['median']} vs {peer_rate} tasks/s; ratio p10-p90 "
                f"{ratio['p10']}-{ratio['p90']} over {ratio['n']} rounds",
            )
        )
    return out


def _following_table(rows: Sequence[Row]) -> list[str]:
    mine = find(rows, section="creation", variant="following")
    if not mine:
        return []
    return [
        "Create while following (one session of our client creates held tasks one after the other, "
        "each followed to its result from its creation; median (p10-p90) of rounds):",
        table(
            [
                "mcp",
                "server",
                "dialect",
                "transport",
                "tasks",
                "created/s",
                "÷ FastMCP 4",
                "create ms p50 / p90",
                "requests per task while creating",
            ],
            (
                (
                    r["major"],
                    server_name(r["kind"]),
                    r.get("dialect"),
                    r["transport"],
                    r["tasks"],
                    spread(r["created_per_s"]),
                    spread(r.get("rate_to_fastmcp4")) if r.get("rate_to_fastmcp4") else None,
                    f"{r['create_ms']['median']} / {r['create_ms']['p90']}",
                    ", ".join(f"{method} {count:g}" for method, count in r["requests_per_task"].items()),
                )
                for r in mine
            ),
        ),
    ]


def tables(rows: Sequence[Row]) -> list[str]:
    mine = _batch_rows(rows)
    if not mine:
        return _following_table(rows)
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
        *_following_table(rows),
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
   50 ms inline grace on. Then **create while following**: one session of our client creates 200
   held tasks over HTTP one after the other, each followed to its result from the moment it is
   created (`start_tool`, then `result()` in the background); ours (on 2026-07-28 the states
   come on the session's one `subscriptions/listen` stream) and FastMCP 4 (polled at its hint),
   each on a fresh server, over 5 rounds; tasks created per second, and the requests the session
   sent per task while creating."""

SECTION = Section(
    name="creation",
    profiles=PROFILES,
    measure=measure,
    targets=targets,
    tables=tables,
    described=DESCRIBED,
)
