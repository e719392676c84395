"""The measurements. Each one appends rows (plain dicts) to a :class:`Bench`.

Noise on a 2-core machine is handled by interleaving: every round runs each variant once, in a
rotated order, and ratios are taken between variants of the same round before the median.
"""

from __future__ import annotations

import math
import random
import sys
import time
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

import anyio

from . import clients, mechanisms, servers, stores
from .stats import ratio_summary, summary

__all__ = ["PROFILES", "Bench", "Profile", "run_all"]

PEERS = ("fastmcp4", "fastmcp3")


@dataclass(frozen=True)
class Profile:
    """Sizes of one bench run."""

    name: str
    overhead_transports: tuple[str, ...]
    overhead_calls: int  # calls per variant per round
    overhead_rounds: int
    latency_transport: str
    latency_samples: int
    latency_samples_peer: int
    latency_peer_concurrency: int
    latency_delay_ms: tuple[float, float]
    throughput_transports: tuple[str, ...]
    throughput_seq_calls: int
    throughput_rounds: int
    throughput_clients: int
    throughput_calls_per_client: int
    throughput_peer_cap_s: float  # a peer's task batch stops after this long (slow poll hints)
    capacity_transport: str
    capacity_sizes: tuple[int, ...]
    capacity_sessions: int
    capacity_get_samples: int
    capacity_min_ttl_ms: int
    capacity_wait_s: float
    capacity_expiry_slack_s: float  # beyond the TTL, for the sweeper
    capacity_stall_s: float  # stop waiting for all runs to start when the count stops growing
    stores_transports: tuple[str, ...]
    stores_seq_calls: int  # task calls per store per round, one caller
    stores_rounds: int
    stores_clients: int  # concurrent callers (one session)
    stores_calls_per_client: int
    stores_get_sizes: tuple[int, ...]  # tasks stored when tasks/get is read (few, many)
    stores_get_targets: int  # of which run through the client, and read back
    stores_get_reads: int  # reads per store and size per round
    stores_get_rounds: int
    mechanisms_transport: str = "stdio"
    mechanisms_quick_calls: int = 20  # quick-tool calls per variant per round
    mechanisms_rounds: int = 5
    mechanisms_lengths_s: tuple[float, ...] = mechanisms.EXTRA_TIME_LENGTHS_S
    mechanisms_peer_lengths_s: tuple[float, ...] = (0.05, 1.27, 3.0, 10.0)
    mechanisms_samples: int = 6  # concurrent calls per tool length (lengths spread by up to 15 %)
    mechanisms_peer_samples: int = 3
    mechanisms_detach_size: int = 1_000  # held tasks with the run's detachment off, next to on
    # FastMCP 3 holds ~0.5 MiB per task and creates ~30 tasks/s: 10,000 would take ~5 GiB and
    # ~6 minutes to create alone, for a reference row; it is measured up to this size.
    capacity_fastmcp3_max: int = 1_000


PROFILES: dict[str, Profile] = {
    "smoke": Profile(
        name="smoke",
        overhead_transports=("memory",),
        overhead_calls=5,
        overhead_rounds=2,
        latency_transport="memory",
        latency_samples=3,
        latency_samples_peer=2,
        latency_peer_concurrency=2,
        latency_delay_ms=(1.0, 5.0),
        throughput_transports=("memory",),
        throughput_seq_calls=3,
        throughput_rounds=2,
        throughput_clients=3,
        throughput_calls_per_client=1,
        throughput_peer_cap_s=2.0,
        capacity_transport="memory",
        capacity_sizes=(10,),
        capacity_sessions=2,
        capacity_get_samples=5,
        capacity_min_ttl_ms=1_000,  # outlasts creating its tasks, each after the inline grace
        capacity_wait_s=20.0,
        capacity_expiry_slack_s=3.0,
        capacity_stall_s=3.0,
        stores_transports=("memory",),
        stores_seq_calls=3,
        stores_rounds=2,
        stores_clients=3,
        stores_calls_per_client=1,
        stores_get_sizes=(5, 20),
        stores_get_targets=3,
        stores_get_reads=5,
        stores_get_rounds=2,
        mechanisms_transport="memory",
        mechanisms_quick_calls=3,
        mechanisms_rounds=2,
        mechanisms_lengths_s=(0.0, 0.05),
        mechanisms_peer_lengths_s=(0.05,),
        mechanisms_samples=2,
        mechanisms_peer_samples=1,
        mechanisms_detach_size=10,
    ),
    "full": Profile(
        name="full",
        overhead_transports=("memory", "http"),
        overhead_calls=100,
        overhead_rounds=15,  # enough rounds for the p10-p90 of the ratio to settle within ~5 %
        latency_transport="http",
        latency_samples=60,
        latency_samples_peer=10,
        latency_peer_concurrency=10,
        latency_delay_ms=(20.0, 300.0),
        throughput_transports=("http", "stdio"),
        throughput_seq_calls=30,
        throughput_rounds=3,
        throughput_clients=20,
        throughput_calls_per_client=3,
        throughput_peer_cap_s=8.0,
        capacity_transport="http",
        capacity_sizes=(1_000, 10_000),
        capacity_sessions=20,
        capacity_get_samples=200,
        capacity_min_ttl_ms=20_000,
        capacity_wait_s=600.0,
        capacity_expiry_slack_s=10.0,
        capacity_stall_s=20.0,
        stores_transports=("memory", "http"),
        stores_seq_calls=15,
        stores_rounds=3,
        stores_clients=20,
        stores_calls_per_client=3,
        stores_get_sizes=(100, 10_000),
        stores_get_targets=20,
        stores_get_reads=50,
        stores_get_rounds=3,
    ),
}


@dataclass
class Bench:
    """One run in one environment (one SDK major): what was measured, and what went wrong."""

    profile: Profile
    kinds: list[str]
    major: int = field(default_factory=servers.mcp_major)
    rows: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    only: frozenset[str] | None = None
    checkpoint: Callable[[], None] | None = None

    def log(self, message: str) -> None:
        print(f"[bench mcp{self.major}] {message}", file=sys.stderr, flush=True)

    def add(self, section: str, **row: Any) -> None:
        self.rows.append({"section": section, "major": self.major, **row})

    @property
    def ours(self) -> bool:
        return "ours" in self.kinds and clients.ours_client_available()

    def peers(self) -> list[str]:
        return [kind for kind in self.kinds if kind in PEERS]

    def task_kinds(self) -> list[str]:
        return (["ours"] if self.ours else []) + self.peers()

    async def guarded(self, what: str, body: Callable[[], Awaitable[None]], *, attempts: int = 2) -> None:
        """Run one measurement; a failure is retried once, then recorded rather than ending the run.

        A retried failure stays visible in ``notes`` (a dropped connection under load, say).
        """
        for attempt in range(1, attempts + 1):
            self.log(f"{what} ..." if attempt == 1 else f"{what} (attempt {attempt}) ...")
            started = time.perf_counter()
            rows_before = len(self.rows)
            try:
                await body()
            except Exception as exc:  # one broken measurement must not hide the others
                del self.rows[rows_before:]
                self.log(f"{what} FAILED: {_leaf_message(exc)}")
                traceback.print_exc(file=sys.stderr)
                if attempt < attempts:
                    self.notes.append(f"{what}: attempt {attempt} failed ({_leaf_message(exc)}); retried")
                    continue
                self.errors.append({"what": what, "error": _leaf_message(exc)})
            else:
                self.log(f"{what} done in {time.perf_counter() - started:.1f}s")
            break
        if self.checkpoint is not None:
            self.checkpoint()


def _leaf_message(exc: BaseException) -> str:
    """The first leaf of an exception group, which says what actually went wrong."""
    while getattr(exc, "exceptions", None):  # BaseExceptionGroup (Python 3.11+, or the backport)
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    return f"{type(exc).__name__}: {exc}"


# --- servers and connections ----------------------------------------------------------------------


@asynccontextmanager
async def open_target(
    kind: str,
    transport: str,
    *,
    ttl_ms: int | None = None,
    concurrency: int | None = None,
    store: str | None = None,
    off: Sequence[str] = (),
) -> AsyncIterator[Callable[..., Any]]:
    """A server of ``kind`` (ours: on the task store ``store``) over ``transport``; yields ``connect()``.

    ``off``: the mechanisms turned off (:mod:`.mechanisms`), on the server and on every client
    ``connect()`` opens with our client. In memory the internal switches are process-wide, so
    they are set for the server's life and restored after.
    """
    if off:
        mechanisms.check(off, servers.mcp_major())
    if transport == "memory":
        with mechanisms.internal_switches(off, servers.mcp_major()):
            server = servers.build(kind, ttl_ms=ttl_ms, concurrency=concurrency, store=store, off=off)
            servers.quiet_logs()

            def connect_memory(**kwargs: Any) -> Any:
                return clients.connect("memory", kind=kind, server=server, off=off, **kwargs)

            yield connect_memory
        return
    with clients.server_process(
        kind, transport, ttl_ms=ttl_ms, concurrency=concurrency, store=store, off=off
    ) as process:

        def connect_process(**kwargs: Any) -> Any:
            return clients.connect(transport, kind=kind, process=process, off=off, **kwargs)

        yield connect_process


def rotated(items: Sequence[Any], round_index: int) -> list[Any]:
    shift = round_index % len(items)
    return list(items[shift:]) + list(items[:shift])


def dialects_for(kind: str, major: int) -> list[str | None]:
    """The dialects a kind is measured in from this environment (None: as negotiated)."""
    if kind == "ours" and major == 2:
        return ["2026-07-28", "2025-11-25"]
    return [None]


def opt_ins_for(dialect: str | None, major: int) -> dict[str, Any]:
    if dialect is None or (major == 1 and dialect == "2025-11-25"):
        return {}
    return {"dialect": dialect}


# --- 1. plain-call overhead ---------------------------------------------------------------------------


async def overhead(bench: Bench, transport: str) -> None:
    """Our call_tool(mode="plain"|"auto") vs the raw SDK session.call_tool, on the same session.

    Variants: ``sdk-server/raw`` (the SDK's own server, no tasks), ``raw``, ``plain`` and ``auto``
    on our server, and ``raw``/``plain``/``auto`` on each peer; all on the plain tool ``echo``.
    """
    profile = bench.profile
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
        for _round in range(profile.overhead_rounds):
            spent = dict.fromkeys(variants, 0.0)
            for _ in range(profile.overhead_calls):
                for kind, variant in rotated(variants, turn):
                    started = time.perf_counter()
                    await one_call(kind, variant)
                    spent[(kind, variant)] += time.perf_counter() - started
                turn += 1
            for key, seconds in spent.items():
                per_call_us[key].append(seconds / profile.overhead_calls * 1e6)
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
                "calls_per_round": profile.overhead_calls,
            }
            if kind != "sdk" and variant == "raw":
                row["ratio_to_sdk_server"] = ratio_summary(samples, per_call_us[("sdk", "raw")])
            bench.add("overhead", **row)


# --- 2. completion-to-result latency --------------------------------------------------------------


async def latency(bench: Bench, kind: str, dialect: str | None) -> None:
    """Tool returns (its own CLOCK_MONOTONIC stamp) -> the caller holds the CallToolResult."""
    profile = bench.profile
    peer = kind in PEERS
    samples_wanted = profile.latency_samples_peer if peer else profile.latency_samples
    concurrency = profile.latency_peer_concurrency if peer else 1
    rng = random.Random(1234)
    low, high = profile.latency_delay_ms
    delays = [rng.uniform(low, high) for _ in range(samples_wanted)]
    latencies_ms: list[float] = []
    totals_ms: list[float] = []
    async with (
        open_target(kind, profile.latency_transport) as connect,
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
            transport=profile.latency_transport,
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


# --- 3. throughput --------------------------------------------------------------------------------


async def throughput(bench: Bench, kind: str, transport: str) -> None:
    """Sequential and concurrent task rate next to the plain-call rate of the same server and tool.

    Tasks go through our ``call_tool(mode="task")``; plain calls are the raw SDK call on a bare
    session (no task capability declared), which every server runs inline.
    """
    profile = bench.profile
    peer = kind in PEERS
    cap_s = profile.throughput_peer_cap_s if peer else math.inf
    async with open_target(kind, transport) as connect, AsyncExitStack() as stack:
        tasker = await stack.enter_async_context(connect())
        plainer = await stack.enter_async_context(connect(ours=False))
        await tasker.call("job", {}, mode="task")
        await plainer.raw("job", {})

        async def batch(
            pair: tuple[clients.Conn, clients.Conn], mode: str, count: int, deadline: float
        ) -> int:
            done = 0
            while done < count and (done == 0 or time.perf_counter() < deadline):
                if mode == "task":
                    await pair[0].call("job", {}, mode="task")
                else:
                    await pair[1].raw("job", {})
                done += 1
            return done

        async def measure(
            pairs: list[tuple[clients.Conn, clients.Conn]], per_caller: int
        ) -> dict[str, list[float]]:
            rates: dict[str, list[float]] = {"plain": [], "task": []}
            for round_index in range(profile.throughput_rounds):
                for mode in rotated(["plain", "task"], round_index):
                    counts: list[int] = []
                    started = time.perf_counter()
                    limit = started + (cap_s if mode == "task" else math.inf)

                    async def caller(
                        pair: tuple[clients.Conn, clients.Conn], mode: str, limit: float, counts: list[int]
                    ) -> None:
                        counts.append(await batch(pair, mode, per_caller, limit))

                    async with anyio.create_task_group() as group:
                        for pair in pairs:
                            group.start_soon(caller, pair, mode, limit, counts)
                    rates[mode].append(sum(counts) / (time.perf_counter() - started))
            return rates

        rates = await measure([(tasker, plainer)], profile.throughput_seq_calls)
        _throughput_rows(bench, kind, transport, tasker, "sequential", 1, rates)

        # Concurrent: over HTTP each caller has its own sessions; over stdio/memory they share them.
        callers = profile.throughput_clients
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
        rates = await measure(pairs, profile.throughput_calls_per_client)
        _throughput_rows(bench, kind, transport, tasker, "concurrent", callers, rates)


def _throughput_rows(
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


# --- 4. capacity ----------------------------------------------------------------------------------


async def capacity(
    bench: Bench, kind: str, size: int, ttl_ms: int, *, off: Sequence[str] = ()
) -> dict[str, Any]:
    """``size`` held tasks in flight at once in one server process: RSS, tasks/get latency, expiry.

    A bare control session reads the server's counters and releases the held runs; the tasks are
    started through ``capacity_sessions`` sessions of our client. ``off``: mechanisms turned off
    (the ``detach`` rows).
    """
    profile = bench.profile
    peer = kind in PEERS
    transport = profile.capacity_transport
    sessions = max(1, min(profile.capacity_sessions, size))
    row: dict[str, Any] = {
        "kind": kind,
        "transport": transport,
        "size": size,
        "sessions": sessions,
        "mechanisms": mechanisms.label(off),
    }
    async with (
        open_target(
            kind,
            transport,
            ttl_ms=None if peer else ttl_ms,
            concurrency=size if peer else None,
            # ours with its defaults (the inline grace on: each held task is created once its
            # grace runs out, and its run must be detached from its request all the same)
            off=off,
        ) as connect,
        connect(ours=False) as control,
    ):
        async with AsyncExitStack() as task_sessions:
            conns = [await task_sessions.enter_async_context(connect()) for _ in range(sessions)]
            row["dialect"], row["protocol_version"] = conns[0].dialect, conns[0].protocol_version
            for _ in range(5):
                await control.raw("job", {})
            baseline = await control.stats(collect=True)
            row["rss_baseline_kib"] = baseline["rss_kib"]
            row["gc_objects_baseline"] = baseline.get("gc_objects")

            handles: list[Any] = []
            started = time.perf_counter()

            # On 2025-11-25 the client asks for the TTL (our server floors it); the Tasks extension
            # leaves it to the server, which applies its floor as the default.
            ask_ttl_s = ttl_ms / 1000 if conns[0].dialect == "2025-11-25" and not peer else None

            async def starter(conn: clients.Conn, count: int) -> None:
                for _ in range(count):
                    handles.append(await conn.start("job", {"hold": True}, ttl_s=ask_ttl_s))

            async with anyio.create_task_group() as group:
                for index, conn in enumerate(conns):
                    group.start_soon(starter, conn, size // sessions + (1 if index < size % sessions else 0))
            row["create_s"] = round(time.perf_counter() - started, 3)
            row["create_per_s"] = round(size / (time.perf_counter() - started), 1)
            first = getattr(handles[0], "last_status", None)
            row["task_ttl_ms"] = getattr(first, "ttl_ms", None)
            row["task_poll_interval_ms"] = getattr(first, "poll_interval_ms", None)

            # Truly concurrent: every run is inside the tool at once (not queued behind a worker pool).
            # Polling another process's counters: there is no event to wait on across processes. A
            # count that stops growing for capacity_stall_s ends the wait (queued or stopped runs).
            running, best, best_at = 0, -1, time.perf_counter()
            with anyio.move_on_after(profile.capacity_wait_s):
                while (running := (await control.stats())["running"]) < size:
                    if running > best:
                        best, best_at = running, time.perf_counter()
                    elif time.perf_counter() - best_at > profile.capacity_stall_s:
                        break
                    await anyio.sleep(0.1)
            row["running_at_once"] = running
            in_flight = await control.stats(collect=True)
            row["rss_in_flight_kib"] = in_flight["rss_kib"]
            row["gc_objects_in_flight"] = in_flight.get("gc_objects")
            row["rss_per_task_kib"] = round((in_flight["rss_kib"] - baseline["rss_kib"]) / size, 3)

            rng = random.Random(size)
            get_ms: list[float] = []
            statuses: dict[str, int] = {}
            for handle in rng.sample(handles, min(profile.capacity_get_samples, len(handles))):
                began = time.perf_counter()
                task = await handle.status()
                get_ms.append((time.perf_counter() - began) * 1000)
                status = getattr(task, "status", None)
                name = str(getattr(status, "value", status))
                statuses[name] = statuses.get(name, 0) + 1
            row["tasks_get_ms"] = summary(get_ms, digits=2)
            row["sampled_statuses"] = statuses

            await control.raw("release")
            released = time.perf_counter()
            with anyio.move_on_after(profile.capacity_wait_s):
                while (await control.stats())["running"] > 0:  # noqa: ASYNC110
                    await anyio.sleep(0.1)
            row["drain_s"] = round(time.perf_counter() - released, 3)
            after_done = await control.stats(collect=True)
            row["rss_after_done_kib"] = after_done["rss_kib"]
            row["stored_after_done"] = after_done["stored"]

            if after_done["stored"] is not None:
                # Ours: wait (bounded) for the sweeper to drop every expired task, sessions still open.
                row["ttl_floor_ms"] = ttl_ms
                expired = False
                with anyio.move_on_after(ttl_ms / 1000 + profile.capacity_expiry_slack_s):
                    while (await control.stats())["stored"] > 0:  # noqa: ASYNC110
                        await anyio.sleep(0.2)
                    expired = True
                after = await control.stats(collect=True)
                row["expired"] = expired
                row["expiry_wait_s"] = round(time.perf_counter() - released, 3)
                row["stored_after_expiry"] = after["stored"]
                row["rss_after_expiry_kib"] = after["rss_kib"]
                row["rss_after_expiry_vs_baseline"] = round(after["rss_kib"] / baseline["rss_kib"], 4)
                row["gc_objects_after_expiry"] = after.get("gc_objects")
            else:
                row["expired"] = None
                row["expiry_note"] = peer_expiry_note(kind)
            handles.clear()
        # The task sessions are closed now (a 2025-11-25 server may keep tasks until then).
        closed = await control.stats(collect=True)
        row["gc_objects_after_sessions_closed"] = closed.get("gc_objects")
        row["stored_after_sessions_closed"] = closed["stored"]
        row["rss_after_sessions_closed_kib"] = closed["rss_kib"]
        row["rss_after_sessions_closed_vs_baseline"] = round(closed["rss_kib"] / baseline["rss_kib"], 4)
        # What the allocator keeps but nothing uses: RSS once free heap pages go back to the OS.
        trimmed = await control.stats(trim=True)
        row["rss_after_trim_kib"] = trimmed["rss_kib"]
        row["rss_after_trim_vs_baseline"] = round(trimmed["rss_kib"] / baseline["rss_kib"], 4)
    bench.add("capacity", **row)
    return row


def peer_expiry_note(kind: str) -> str:
    if kind in PEERS:
        return "n/a: Docket keeps finished executions for its execution_ttl (15 min); not exposed by the peer"
    return "n/a"


# --- 6. the mechanisms of issue 13, each off and on --------------------------------------------------


async def mechanism_calls(bench: Bench, kind: str, off: Sequence[str]) -> None:
    """A quick tool through ``call_tool(mode="auto")`` next to the raw SDK call, and the extra time
    past the tool's own run for several tool lengths, with the mechanisms ``off`` turned off.

    The quick tool is ``job`` returning at once (task-optional on ours); the raw call is the SDK's
    ``session.call_tool`` on a bare session of the same server (no task capability declared: the
    plain call every server answers inline). Extra time: the caller's clock when it holds the
    result minus the tool's stamp as it returned. The requests our client writes are counted.
    """
    profile = bench.profile
    peer = kind in PEERS
    transport = profile.mechanisms_transport
    counter = mechanisms.RequestCounter()
    label = "peer defaults" if peer else mechanisms.label(off)
    async with (
        open_target(kind, transport, off=off) as connect,
        connect(counter=counter) as conn,
        connect(ours=False) as bare,
    ):
        common: dict[str, Any] = {
            "kind": kind,
            "transport": transport,
            "dialect": conn.dialect,
            "protocol_version": conn.protocol_version,
            "mechanisms": label,
            "off": list(off),
        }
        await conn.call("job", {}, mode="auto")  # warm the path (tools/list, listen stream, ...)
        await bare.raw("job", {})
        if not peer:
            per_call_us: dict[str, list[float]] = {"raw": [], "auto": []}
            requests = 0
            calls = profile.mechanisms_quick_calls
            for round_index in range(profile.mechanisms_rounds):
                for variant in rotated(["raw", "auto"], round_index):
                    before = counter.total()
                    started = time.perf_counter()
                    for _ in range(calls):
                        if variant == "raw":
                            await bare.raw("job", {})
                        else:
                            await conn.call("job", {}, mode="auto")
                    per_call_us[variant].append((time.perf_counter() - started) / calls * 1e6)
                    if variant == "auto":
                        requests += counter.total() - before
            bench.add(
                "mechanisms",
                **common,
                variant="quick",
                per_call_us=summary(per_call_us["auto"], digits=1),
                raw_per_call_us=summary(per_call_us["raw"], digits=1),
                # calls/s of auto ÷ calls/s of raw = raw µs ÷ auto µs, per round
                rate_to_raw=ratio_summary(per_call_us["raw"], per_call_us["auto"]),
                over_raw_us=summary(
                    [auto - raw for auto, raw in zip(per_call_us["auto"], per_call_us["raw"], strict=True)],
                    digits=1,
                ),
                requests_per_call=round(requests / (calls * profile.mechanisms_rounds), 3),
            )
        lengths = profile.mechanisms_peer_lengths_s if peer else profile.mechanisms_lengths_s
        samples = profile.mechanisms_peer_samples if peer else profile.mechanisms_samples
        rng = random.Random(13)
        for length in lengths:
            # Spread the lengths a little (up to 15 %, at least 20 ms): where a completion falls
            # in the poll schedule is what the curve shows.
            spread = max(0.02, 0.15 * length)
            run_s = [length + rng.uniform(0, spread) for _ in range(samples)]
            points: list[list[float]] = []
            before = counter.total()

            async def one(seconds: float, points: list[list[float]] = points) -> None:
                result = await conn.call("job", {"delay_ms": seconds * 1000}, mode="auto")
                held = time.monotonic()
                points.append([round(seconds, 4), round((held - float(clients.text_of(result))) * 1000, 2)])

            async with anyio.create_task_group() as group:
                for seconds in run_s:
                    group.start_soon(one, seconds)
            bench.add(
                "mechanisms",
                **common,
                variant="extra_time",
                length_s=length,
                extra_ms=summary([extra for _, extra in points], digits=2),
                points=sorted(points),
                requests_per_call=round((counter.total() - before) / samples, 2),
                requests_by_method=dict(counter.by_method),
            )


async def mechanism_memory(bench: Bench, ttl_ms: int) -> None:
    """Held tasks with the run's detachment off, next to the same size with it on."""
    size = bench.profile.mechanisms_detach_size
    for off in ((), ("detach",)):
        await capacity(bench, "ours", size, ttl_ms, off=off)


# --- the whole run ---------------------------------------------------------------------------------


async def run_all(bench: Bench) -> None:
    profile = bench.profile

    def wanted(section: str) -> bool:
        return bench.only is None or section in bench.only

    if wanted("overhead"):
        for transport in profile.overhead_transports:
            await bench.guarded(f"overhead/{transport}", lambda t=transport: overhead(bench, t))
    if not bench.ours:
        bench.notes.append(
            "ours not measured (not installed, or not in --kinds): task sections ran for peers only"
        )
    if wanted("latency"):
        for kind in bench.task_kinds():
            for dialect in dialects_for(kind, bench.major):
                await bench.guarded(
                    f"latency/{kind}/{dialect or 'negotiated'}",
                    lambda k=kind, d=dialect: latency(bench, k, d),
                )
    if wanted("throughput"):
        for transport in profile.throughput_transports:
            for kind in bench.task_kinds():
                await bench.guarded(
                    f"throughput/{kind}/{transport}", lambda k=kind, t=transport: throughput(bench, k, t)
                )
    if wanted("capacity"):
        for kind in bench.task_kinds():
            sizes = profile.capacity_sizes
            if kind == "fastmcp3":
                sizes = tuple(size for size in sizes if size <= profile.capacity_fastmcp3_max)
                if sizes != profile.capacity_sizes:
                    bench.notes.append(
                        f"capacity: FastMCP 3 measured up to {profile.capacity_fastmcp3_max} tasks "
                        "(about 0.5 MiB and 1/30 s per task: 10,000 would take ~5 GiB, for a reference row)"
                    )
            # TTL must outlast creating every task (a task past its TTL is stopped): the profile's
            # floor for the first size, then twice what the measured creation rate predicts.
            ttl_ms = profile.capacity_min_ttl_ms
            for index, size in enumerate(sizes):
                outcome: dict[str, Any] = {}

                async def one(
                    k: str = kind, s: int = size, ttl: int = ttl_ms, out: dict[str, Any] = outcome
                ) -> None:
                    out.update(await capacity(bench, k, s, ttl))

                await bench.guarded(f"capacity/{kind}/{size}", one)
                if outcome.get("create_per_s") and index + 1 < len(sizes):
                    estimate = int(sizes[index + 1] / outcome["create_per_s"] * 1600) + 15_000
                    ttl_ms = max(profile.capacity_min_ttl_ms, estimate)
    if wanted("mechanisms"):
        await run_mechanisms(bench)
    if wanted("stores"):
        if bench.ours:
            await stores.run_stores(bench, dialects_for("ours", bench.major))
        else:
            bench.notes.append("stores: not measured (our server is not installed, or not in --kinds)")


async def run_mechanisms(bench: Bench) -> None:
    """Every configuration of :func:`.mechanisms.configurations` (a refused one is an error), then the
    peers with their defaults, then the detachment's memory rows."""
    if not bench.ours:
        bench.notes.append("mechanisms: not measured (our server is not installed, or not in --kinds)")
        return
    for off in mechanisms.configurations(bench.major, measured_by="calls"):
        await bench.guarded(
            f"mechanisms/{mechanisms.label(off)}",
            lambda o=off: mechanism_calls(bench, "ours", o),
            attempts=1,
        )
    for kind in bench.peers():
        if kind == "fastmcp4":  # the Tasks extension peer; FastMCP 3 has no task path of ours to compare
            await bench.guarded(
                f"mechanisms/{kind}", lambda k=kind: mechanism_calls(bench, k, ()), attempts=1
            )
    if any(m.measured_by == "memory" for m in mechanisms.applicable(bench.major)):
        await bench.guarded(
            "mechanisms/detach memory",
            lambda: mechanism_memory(bench, bench.profile.capacity_min_ttl_ms),
            attempts=1,
        )


def profile_dict(profile: Profile) -> dict[str, Any]:
    return asdict(profile)
