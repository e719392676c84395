"""Traces and metrics through OpenTelemetry, optional and free when unused.

Rules of this package: it imports nothing of the library but ``_version``, and ``opentelemetry``
only on first use (the ``otel`` extra); with OpenTelemetry absent, or no SDK configured, every
hook is a flag check (:func:`.otel.tracing`, :func:`.otel.metering`) returning a shared no-op.
The engine, the client logic and the adapters call it; nothing here knows a task or a session.

* ``otel``: whether OpenTelemetry is there and a real provider is set;
* ``traces``: the spans (a client call, a task's run, what is done to a task on any replica) and
  the W3C carrier a task keeps of the trace that created it;
* ``metrics``: the instruments (bounded attributes: tool, dialect, status, store kind);
* ``prometheus``: ``--metrics-port``.
"""

from __future__ import annotations

from . import metrics, otel, traces
from .otel import metering, tracing

__all__ = ["forget", "metering", "metrics", "traces", "tracing"]


def forget() -> None:
    """Forget every provider seen, tracer and instrument made, and the switch read
    (:data:`.otel.SWITCH`): for tests and the bench, which replace OpenTelemetry's global providers."""
    otel.forget()
    metrics.forget()
    traces.forget()
