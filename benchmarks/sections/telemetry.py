"""Section 7, telemetry: task throughput with OpenTelemetry's SDK configured, next to none.

Target (issue 27): with an SDK and an in-memory exporter, at least 0.9 of the task rate without
one. The other half of the issue's target, the plain-call overhead with no SDK configured (every
hook a flag check), is section 1's: it is measured with the hooks in place.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import anyio

from ..harness import Bench, open_target, rotated
from ..section import Row, Section, find, spread, table, target
from ..stats import ratio_summary, summary

__all__ = ["SECTION", "TelemetryProfile"]


@dataclass(frozen=True)
class TelemetryProfile:
    tasks: int  # task calls per variant per round, shared by the callers
    callers: int
    rounds: int


PROFILES = {
    "smoke": TelemetryProfile(tasks=6, callers=3, rounds=2),
    "full": TelemetryProfile(tasks=300, callers=10, rounds=9),
}


def _sdk_installed() -> bool:
    try:
        import opentelemetry.sdk.trace  # noqa: F401
    except ImportError:
        return False
    return True


def _reset_globals() -> None:
    """No provider set, as at start (OpenTelemetry's own test utilities do the same): the API's
    globals, the library's cached answers, and the SDK's cached tracer in mcp 2.x."""
    from opentelemetry import metrics, trace
    from opentelemetry.util._once import Once

    from mcp_tasks_compat._observe import metrics as our_metrics
    from mcp_tasks_compat._observe import otel

    trace._TRACER_PROVIDER = None  # type: ignore[attr-defined]
    trace._TRACER_PROVIDER_SET_ONCE = Once()  # type: ignore[attr-defined]
    metrics._internal._METER_PROVIDER = None  # type: ignore[attr-defined]
    metrics._internal._METER_PROVIDER_SET_ONCE = Once()  # type: ignore[attr-defined]
    otel._tracing = False  # type: ignore[attr-defined]
    otel._metering = False  # type: ignore[attr-defined]
    our_metrics._made = None  # type: ignore[attr-defined]
    try:
        from mcp.shared import _otel as sdk_otel  # mcp 2.x: a ProxyTracer keeps the real one

        sdk_otel._tracer._real_tracer = None  # type: ignore[attr-defined]
    except (ImportError, AttributeError):
        pass


@contextmanager
def _sdk(on: bool) -> Iterator[Any]:
    """OpenTelemetry's SDK with an in-memory span exporter and metric reader (``on``), or none;
    yields the exporter (``None`` when off)."""
    if not on:
        yield None
        return
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    _reset_globals()
    trace.set_tracer_provider(tracer_provider)
    metrics.set_meter_provider(meter_provider)
    try:
        yield exporter
    finally:
        tracer_provider.shutdown()
        meter_provider.shutdown()
        _reset_globals()


async def measure(bench: Bench, profile: TelemetryProfile) -> None:
    if not bench.ours:
        return
    if not _sdk_installed():
        bench.notes.append("telemetry: opentelemetry-sdk is not installed here; not measured")
        return
    await bench.guarded("telemetry/memory", lambda: telemetry(bench, profile))


async def telemetry(bench: Bench, profile: TelemetryProfile) -> None:
    """Tasks per second on our server in memory (client and server in this process), the SDK off
    and on in turns (a fresh server per turn: a store is timed only if metering when it is made)."""
    rates: dict[str, list[float]] = {"off": [], "on": []}
    spans: list[float] = []
    dialect: str | None = None
    protocol_version: str | None = None
    per_caller = max(1, profile.tasks // profile.callers)
    for round_index in range(profile.rounds):
        for variant in rotated(["off", "on"], round_index):
            with _sdk(variant == "on") as exporter:
                async with open_target("ours", "memory") as connect, connect() as conn:
                    dialect, protocol_version = conn.dialect, conn.protocol_version
                    await conn.call("job", {}, mode="task")  # warm: tools/list, caches
                    started = time.perf_counter()

                    async def caller(conn: Any = conn) -> None:
                        for _ in range(per_caller):
                            await conn.call("job", {}, mode="task")

                    async with anyio.create_task_group() as group:
                        for _ in range(profile.callers):
                            group.start_soon(caller)
                    rates[variant].append(per_caller * profile.callers / (time.perf_counter() - started))
                if exporter is not None:
                    spans.append(len(exporter.get_finished_spans()) / (per_caller * profile.callers + 1))
    bench.add(
        "telemetry",
        kind="ours",
        transport="memory",
        dialect=dialect,
        protocol_version=protocol_version,
        callers=profile.callers,
        task_per_s_off=summary(rates["off"], digits=2),
        task_per_s_on=summary(rates["on"], digits=2),
        on_to_off=ratio_summary(rates["on"], rates["off"]),
        spans_per_task=summary(spans, digits=1),
    )


def targets(rows: Sequence[Row]) -> list[dict[str, Any]]:
    return [
        target(
            f"task throughput with an OpenTelemetry SDK (in-memory exporter) vs none "
            f"(mcp{row['major']}, {row['dialect']}, in memory)",
            row["on_to_off"]["median"],
            0.9,
            at_most=False,
            detail=f"{row['task_per_s_on']['median']} vs {row['task_per_s_off']['median']} tasks/s, "
            f"{row['spans_per_task']['median']} spans per task",
        )
        for row in find(rows, section="telemetry", kind="ours")
    ]


def tables(rows: Sequence[Row]) -> list[str]:
    return [
        "### 7. Telemetry (tool `job` as a task, in memory; tasks per second, median (p10-p90) of rounds)",
        table(
            ["mcp", "dialect", "callers", "no SDK", "SDK + in-memory exporter", "ratio", "spans per task"],
            (
                (
                    r["major"],
                    r["dialect"],
                    r["callers"],
                    spread(r["task_per_s_off"]),
                    spread(r["task_per_s_on"]),
                    spread(r["on_to_off"]),
                    spread(r["spans_per_task"]),
                )
                for r in find(rows, section="telemetry")
            ),
        ),
    ]


DESCRIBED = """\
7. **Telemetry**: our server and client in one process (in memory), tool `job` as a task from
   concurrent callers, with OpenTelemetry's SDK configured (a tracer provider with the in-memory
   span exporter, a meter provider with the in-memory reader) and without, in turns, a fresh
   server per turn; spans per task counts both sides. With no SDK every hook is a flag check:
   that cost is in section 1's plain-call overhead."""

SECTION = Section(
    name="telemetry",
    profiles=PROFILES,
    measure=measure,
    targets=targets,
    tables=tables,
    described=DESCRIBED,
)
