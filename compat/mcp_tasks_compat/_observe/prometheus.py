"""``--metrics-port``: the library's metrics (and any others of the process) as Prometheus text.

Needs ``opentelemetry-sdk`` and ``opentelemetry-exporter-prometheus`` (which brings
``prometheus-client``): a meter provider with the Prometheus reader is set globally, and
``prometheus_client`` serves ``/metrics`` on the port. Other exporters are configured by the
standard ``OTEL_*`` variables (``opentelemetry-instrument``), not here.
"""

from __future__ import annotations

from typing import Any

from .otel import forget

__all__ = ["MissingExporterError", "serve_prometheus"]


class MissingExporterError(RuntimeError):
    """The packages ``--metrics-port`` needs are not installed."""


def serve_prometheus(port: int, *, host: str = "127.0.0.1") -> Any:
    """Serve ``/metrics`` on ``host:port``; the HTTP server (``.shutdown()`` stops it)."""
    try:
        import opentelemetry.metrics as metrics_api
        from opentelemetry.exporter.prometheus import PrometheusMetricReader
        from opentelemetry.sdk.metrics import MeterProvider
        from prometheus_client import start_http_server
    except ImportError as exc:
        raise MissingExporterError(
            "--metrics-port needs OpenTelemetry's SDK and Prometheus exporter: "
            "pip install 'mcp-tasks-compat[otel]' opentelemetry-sdk opentelemetry-exporter-prometheus"
        ) from exc
    metrics_api.set_meter_provider(MeterProvider(metric_readers=[PrometheusMetricReader()]))
    forget()  # measured from now, not after the next look for a provider
    server, _thread = start_http_server(port, addr=host)
    return server
