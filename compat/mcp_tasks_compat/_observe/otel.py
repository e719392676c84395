"""Whether OpenTelemetry is there and configured: one flag check per use, nothing more.

``opentelemetry`` is imported on first use, never at import time, and is optional (the ``otel``
extra). :func:`tracing` and :func:`metering` say whether an SDK (or any real provider) is set
globally; until then every hook of the library is a flag check and returns at once, so a server
or client without an SDK pays nothing for the instrumentation. Once a real provider is seen the
answer is kept (OpenTelemetry's global providers can be set only once); while none is, the API
is asked again at most once per :data:`RECHECK_SECONDS`.

``MCP_TASKS_COMPAT_OTEL=off`` keeps the library's own spans and metrics out even with an SDK set
(mcp 2.x's own spans and any other instrumentation stay): what the bench uses to tell the SDK's
share of the cost from ours, and a way for an operator to keep only the SDK's spans.
"""

from __future__ import annotations

import os
import time
from types import ModuleType
from typing import Final

__all__ = [
    "INSTRUMENTATION_NAME",
    "SWITCH",
    "forget",
    "metering",
    "metrics_api",
    "switched_off",
    "trace_api",
    "tracing",
]

INSTRUMENTATION_NAME: Final = "mcp_tasks_compat"
"""The instrumentation scope of every span and instrument of this library."""

SWITCH: Final = "MCP_TASKS_COMPAT_OTEL"
"""The environment variable that, set to ``off`` (or ``0``, ``false``, ``no``), turns the library's
own instrumentation off; read on first use (and again after :func:`forget`)."""

_trace_module: ModuleType | None = None
_metrics_module: ModuleType | None = None
_imported = False
_tracing = False
_metering = False
_off: bool | None = None
_next_tracing_check = 0.0
_next_metering_check = 0.0

RECHECK_SECONDS: Final = 1.0
"""With no provider set, how long a "no" is kept before the API is asked again: OpenTelemetry's
``get_tracer_provider`` reads the environment on every call while none is set (a few µs, several
times a task); a provider set later is seen within this time (at once after :func:`forget`)."""


def switched_off() -> bool:
    """:data:`SWITCH` says ``off``: every hook stays a flag check whatever provider is set."""
    global _off
    if _off is None:
        _off = os.environ.get(SWITCH, "").strip().lower() in ("off", "0", "false", "no")
    return _off


def forget() -> None:
    """Forget the providers seen and the switch read (the global providers were replaced, as
    tests and the bench do); the next use looks again."""
    global _tracing, _metering, _off, _next_tracing_check, _next_metering_check
    _tracing = _metering = False
    _off = None
    _next_tracing_check = _next_metering_check = 0.0


def _import() -> None:
    global _imported, _trace_module, _metrics_module
    _imported = True
    try:
        import opentelemetry.metrics
        import opentelemetry.trace
    except ImportError:  # the otel extra is not installed: everything stays off
        return
    _trace_module = opentelemetry.trace
    _metrics_module = opentelemetry.metrics


def trace_api() -> ModuleType | None:
    """``opentelemetry.trace``, or ``None`` when OpenTelemetry is not installed."""
    if not _imported:
        _import()
    return _trace_module


def metrics_api() -> ModuleType | None:
    """``opentelemetry.metrics``, or ``None`` when OpenTelemetry is not installed."""
    if not _imported:
        _import()
    return _metrics_module


def tracing() -> bool:
    """A real tracer provider is set: spans are worth making."""
    return _tracing or (time.monotonic() >= _next_tracing_check and _check_tracing())


def metering() -> bool:
    """A real meter provider is set: measurements are worth taking."""
    return _metering or (time.monotonic() >= _next_metering_check and _check_metering())


def _check_tracing() -> bool:
    global _tracing, _next_tracing_check
    _next_tracing_check = time.monotonic() + RECHECK_SECONDS
    api = trace_api()
    if api is None or switched_off():
        return False
    provider = api.get_tracer_provider()
    if isinstance(provider, (api.ProxyTracerProvider, api.NoOpTracerProvider)):
        return False
    _tracing = True
    return True


def _check_metering() -> bool:
    global _metering, _next_metering_check
    _next_metering_check = time.monotonic() + RECHECK_SECONDS
    api = metrics_api()
    if api is None or switched_off():
        return False
    provider = api.get_meter_provider()
    # The API's stand-in before a provider is set is private (_ProxyMeterProvider): known by name.
    if isinstance(provider, api.NoOpMeterProvider) or type(provider).__name__ == "_ProxyMeterProvider":
        return False
    _metering = True
    return True
