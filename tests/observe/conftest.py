"""OpenTelemetry's SDK, set globally for this folder only, with its in-memory exporter and reader.

The API's global providers can be set once per process; these tests set them for the folder and
put the API back as it was after it (as OpenTelemetry's own test utilities do), so the rest of
the suite runs as a user without an SDK would: every hook of the library a flag check.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import anyio
import pytest

otel_sdk = pytest.importorskip("opentelemetry.sdk", reason="the test dependency group installs it")

from opentelemetry import metrics, trace  # noqa: E402
from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.util._once import Once  # noqa: E402

from mcp_tasks_compat import _observe  # noqa: E402


class _WakeOnEnd(SpanProcessor):
    """Wakes the tests waiting for a span to end (spans end on the event loop's thread)."""

    def __init__(self) -> None:
        self.waiters: list[anyio.Event] = []

    def on_end(self, span: ReadableSpan) -> None:
        waiters, self.waiters = self.waiters, []
        for waiter in waiters:
            waiter.set()


@dataclass
class Telemetry:
    spans: InMemorySpanExporter
    reader: InMemoryMetricReader
    wake: _WakeOnEnd

    async def ended(self, prefix: str) -> list[ReadableSpan]:
        """The finished spans named ``prefix...``, waiting for the first (a run may end just after
        its answer went out)."""
        with anyio.fail_after(60.0):  # a bound, not a wait (the run may be in a store's other process)
            while not (found := self.named(prefix)):
                waiter = anyio.Event()
                self.wake.waiters.append(waiter)
                await waiter.wait()
        return found

    def finished(self) -> list[ReadableSpan]:
        return list(self.spans.get_finished_spans())

    def named(self, prefix: str) -> list[ReadableSpan]:
        return [span for span in self.finished() if span.name.startswith(prefix)]

    def points(self, name: str) -> list[tuple[dict[str, Any], Any]]:
        """``(attributes, data point)`` of every point of the metric ``name`` read now."""
        data = self.reader.get_metrics_data()
        found: list[tuple[dict[str, Any], Any]] = []
        if data is None:
            return found
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name:
                        found += [(dict(point.attributes or {}), point) for point in metric.data.data_points]
        return found

    def value(self, name: str, **attributes: Any) -> float:
        """The sum (counters) or count (histograms) over the points whose attributes include these."""
        total = 0.0
        for attrs, point in self.points(name):
            if all(attrs.get(key) == value for key, value in attributes.items()):
                total += getattr(point, "value", None) if hasattr(point, "value") else point.count
        return total


def _reset_globals() -> None:
    trace._TRACER_PROVIDER = None  # pyright: ignore[reportPrivateUsage]
    trace._TRACER_PROVIDER_SET_ONCE = Once()  # pyright: ignore[reportPrivateUsage]
    metrics_internal = metrics._internal  # pyright: ignore[reportPrivateUsage]
    metrics_internal._METER_PROVIDER = None
    metrics_internal._METER_PROVIDER_SET_ONCE = Once()
    _observe.forget()
    try:  # mcp 2.x's module-level ProxyTracer keeps the SDK's tracer once it has used it
        from mcp.shared import _otel as sdk_otel

        sdk_otel._tracer._real_tracer = None  # type: ignore[attr-defined]
    except (ImportError, AttributeError):
        pass


@pytest.fixture(scope="package")
def _sdk() -> Iterator[Telemetry]:
    spans = InMemorySpanExporter()
    reader = InMemoryMetricReader()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    wake = _WakeOnEnd()
    tracer_provider.add_span_processor(wake)
    meter_provider = MeterProvider(metric_readers=[reader])
    _reset_globals()
    trace.set_tracer_provider(tracer_provider)
    metrics.set_meter_provider(meter_provider)
    try:
        yield Telemetry(spans, reader, wake)
    finally:
        tracer_provider.shutdown()
        meter_provider.shutdown()
        _reset_globals()


@pytest.fixture
def telemetry(_sdk: Telemetry) -> Telemetry:
    """The SDK's exporter and reader, the spans of earlier tests cleared (metrics are cumulative:
    compare before and after)."""
    _sdk.spans.clear()
    return _sdk
