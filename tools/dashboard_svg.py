"""Render docs/observability-dashboard.svg: the Grafana dashboard of docs/observability.md, drawn
from a real run of ``example-server --metrics-port``.

    python -m tools.dashboard_svg [--duration 60] [--output docs/observability-dashboard.svg]

It starts the example server over streamable HTTP on 127.0.0.1 (a SQLite task store in a
temporary folder, so store timings and lease renewals are real), drives a mixed load through the
library's own client in every task dialect the installed mcp speaks (tasks that complete, fail,
are cancelled, wait for input and are answered, and one burst over ``--max-active-tasks``),
scrapes ``/metrics`` every second, and draws the dashboard's panels with the same queries, over
a short window instead of the dashboard's five minutes. Standard library only (no plotting
package): a small Prometheus text parser, ``rate`` and ``histogram_quantile`` as Prometheus
computes them, and hand-written SVG. Run it from the repository root in an environment with the
``test`` dependency group (OpenTelemetry's SDK and Prometheus exporter).
"""

from __future__ import annotations

import argparse
import bisect
import functools
import importlib.metadata
import math
import platform
import random
import socket
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from xml.sax.saxutils import escape, quoteattr

if TYPE_CHECKING:
    from mcp_tasks_compat.dialects import Dialect

__all__ = [
    "Panel",
    "Sample",
    "Scrape",
    "Series",
    "Timeline",
    "dashboard_panels",
    "free_port",
    "histogram_quantile",
    "parse_prometheus",
    "record_run",
    "render_svg",
    "scrape",
    "server_command",
]

ROOT: Final = Path(__file__).resolve().parent.parent
DEFAULT_OUTPUT: Final = ROOT / "docs" / "observability-dashboard.svg"


# --- Prometheus text ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    """One line of the exposition: ``name{labels} value``."""

    name: str
    labels: Mapping[str, str]
    value: float


@dataclass(frozen=True)
class Scrape:
    """One scrape: its samples by sample name (``..._bucket``, ``..._count`` are names of their own)
    and the ``# TYPE`` of each family."""

    samples: Mapping[str, Sequence[Sample]]
    types: Mapping[str, str]

    def summed(self, name: str, by: Sequence[str] = ()) -> dict[tuple[str, ...], float]:
        """``sum by (by) (name)``: the values of ``name`` added up per combination of ``by``."""
        totals: dict[tuple[str, ...], float] = {}
        for sample in self.samples.get(name, ()):
            key = tuple(sample.labels.get(label, "") for label in by)
            totals[key] = totals.get(key, 0.0) + sample.value
        return totals


Timeline = Sequence[tuple[float, Scrape]]
"""Scrapes in order, each with the second it was taken at (any origin)."""

_ESCAPES: Final = {"\\": "\\", '"': '"', "n": "\n"}


def _parse_labels(text: str, start: int) -> tuple[dict[str, str], int]:
    """The labels of ``{...}`` starting at ``text[start] == "{"``; returns them and the index after ``}``."""
    labels: dict[str, str] = {}
    index = start + 1
    while True:
        while index < len(text) and text[index] in " ,":
            index += 1
        if index >= len(text):
            raise ValueError(f"unterminated labels: {text!r}")
        if text[index] == "}":
            return labels, index + 1
        equals = text.index("=", index)
        name = text[index:equals].strip()
        if text[equals + 1] != '"':
            raise ValueError(f"label {name!r} has no quoted value: {text!r}")
        index = equals + 2
        value: list[str] = []
        while text[index] != '"':
            if text[index] == "\\":
                value.append(_ESCAPES.get(text[index + 1], "\\" + text[index + 1]))
                index += 2
            else:
                value.append(text[index])
                index += 1
        labels[name] = "".join(value)
        index += 1


def parse_prometheus(text: str) -> Scrape:
    """Parse the Prometheus text exposition format (0.0.4): counters, gauges, histograms, summaries.

    Comments other than ``# TYPE`` are skipped; a sample's optional timestamp is ignored.
    """
    samples: dict[str, list[Sample]] = {}
    types: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) == 4 and parts[1] == "TYPE":
                types[parts[2]] = parts[3].strip()
            continue
        brace = line.find("{")
        space = line.find(" ")
        if brace != -1 and (space == -1 or brace < space):
            name = line[:brace]
            labels, end = _parse_labels(line, brace)
            rest = line[end:].split()
        else:
            name, *rest = line.split()
            labels = {}
        if not rest:
            raise ValueError(f"a sample without a value: {raw!r}")
        samples.setdefault(name, []).append(Sample(name, labels, float(rest[0])))
    return Scrape(samples, types)


def scrape(url: str, *, timeout: float = 10.0) -> str:
    """The text at ``url`` (a ``/metrics`` endpoint)."""
    with urllib.request.urlopen(url, timeout=timeout) as answer:
        body: bytes = answer.read()
    return body.decode("utf-8")


# --- the dashboard's queries ----------------------------------------------------------------------


@dataclass(frozen=True)
class Series:
    """One line of a panel: ``(second, value)`` points; ``None`` where the query has no value."""

    label: str
    points: Sequence[tuple[float, float | None]]

    @property
    def defined(self) -> list[tuple[float, float]]:
        return [(t, v) for t, v in self.points if v is not None]


@dataclass(frozen=True)
class Panel:
    """A panel of the dashboard at Grafana's ``gridPos`` (24 columns)."""

    title: str
    kind: str  # "stat" or "timeseries"
    grid: tuple[int, int, int, int]  # x, y, w, h
    series: Sequence[Series]
    unit: str = ""  # "s" draws a logarithmic axis in seconds; anything else a linear axis
    no_data: Sequence[str] = ()  # what the panel asks for and the run never reported
    stat: str = ""  # a stat panel's figure
    stat_note: str = ""


def _window_start(times: Sequence[float], index: int, window_s: float) -> int:
    """The earliest scrape within ``window_s`` before scrape ``index`` (at least one step back)."""
    first = bisect.bisect_left(times, times[index] - window_s - 1e-9)
    return min(first, index - 1)


def _increase(
    before: Mapping[tuple[str, ...], float], after: Mapping[tuple[str, ...], float]
) -> dict[tuple[str, ...], float]:
    """Per key, how much a counter grew (a key absent before started at 0: OpenTelemetry counters
    appear at their first increment; a drop is a reset, counted from 0 as Prometheus does)."""
    grown: dict[tuple[str, ...], float] = {}
    for key, value in after.items():
        previous = before.get(key, 0.0)
        grown[key] = value - previous if value >= previous else value
    return grown


def rate(
    timeline: Timeline, name: str, *, by: Sequence[str] = (), window_s: float
) -> dict[tuple[str, ...], list[tuple[float, float | None]]]:
    """``sum by (by) (rate(name[window]))`` at every scrape after the first, per key."""
    times = [t for t, _ in timeline]
    keys = sorted({key for _, taken in timeline for key in taken.summed(name, by)})
    found: dict[tuple[str, ...], list[tuple[float, float | None]]] = {key: [] for key in keys}
    for index in range(1, len(timeline)):
        start = _window_start(times, index, window_s)
        grown = _increase(timeline[start][1].summed(name, by), timeline[index][1].summed(name, by))
        seconds = times[index] - times[start]
        for key in keys:
            found[key].append((times[index], grown.get(key, 0.0) / seconds if seconds > 0 else None))
    return found


def histogram_quantile(quantile: float, buckets: Iterable[tuple[float, float]]) -> float | None:
    """Prometheus's ``histogram_quantile`` on cumulative ``(le, count)`` buckets: linear
    interpolation inside the bucket the rank falls in; the highest finite bound when it falls in
    ``+Inf``; ``None`` (NaN) with no observations."""
    ordered = sorted(buckets)
    if len(ordered) < 2 or not math.isinf(ordered[-1][0]):
        return None
    observations = ordered[-1][1]
    if observations <= 0:
        return None
    rank = quantile * observations
    index = next(i for i, (_, count) in enumerate(ordered) if count >= rank)
    if index == len(ordered) - 1:
        return ordered[-2][0]
    upper, count = ordered[index]
    lower, below = (0.0, 0.0) if index == 0 else ordered[index - 1]
    if index == 0 and upper <= 0:
        return upper
    in_bucket = count - below
    if in_bucket <= 0:
        return upper
    return lower + (upper - lower) * (rank - below) / in_bucket


def quantile_series(
    timeline: Timeline, quantile: float, name: str, *, by: Sequence[str] = (), window_s: float
) -> dict[tuple[str, ...], list[tuple[float, float | None]]]:
    """``histogram_quantile(q, sum by (le, by) (rate(name_bucket[window])))`` per key of ``by``."""
    bucket_rates = rate(timeline, f"{name}_bucket", by=(*by, "le"), window_s=window_s)
    per_key: dict[tuple[str, ...], dict[float, list[tuple[float, float | None]]]] = {}
    for key, points in bucket_rates.items():
        per_key.setdefault(key[:-1], {})[float(key[-1])] = points
    found: dict[tuple[str, ...], list[tuple[float, float | None]]] = {}
    for key, by_bound in sorted(per_key.items()):
        bounds = sorted(by_bound)
        points: list[tuple[float, float | None]] = []
        for step, (moment, _) in enumerate(by_bound[bounds[0]]):
            counts = [(bound, by_bound[bound][step][1] or 0.0) for bound in bounds]
            points.append((moment, histogram_quantile(quantile, counts)))
        found[key] = points
    return found


STATUS_ATTR: Final = "mcp_tasks_task_status"
TOOL_ATTR: Final = "gen_ai_tool_name"
STORE_ATTR: Final = "mcp_tasks_store"
OPERATION_ATTR: Final = "mcp_tasks_store_operation"


def _gauge(timeline: Timeline, name: str) -> Series:
    origin = timeline[0][0]
    return Series(name, [(t - origin, sum(taken.summed(name).values())) for t, taken in timeline])


def _shifted(points: Sequence[tuple[float, float | None]], origin: float) -> list[tuple[float, float | None]]:
    return [(t - origin, v) for t, v in points]


def _defined(series: Series) -> bool:
    return bool(series.defined)


def _figure(value: float) -> str:
    return f"{value:.0f}" if value == int(value) else f"{value:.2f}"


def _stat(title: str, grid: tuple[int, int, int, int], line: Series, *, peak: bool = True) -> Panel:
    values = [v for _, v in line.defined]
    last = values[-1] if values else 0.0
    note = f"peak {_figure(max(values))}" if peak and values else ""
    return Panel(title, "stat", grid, [line], stat=_figure(last), stat_note=note)


def dashboard_panels(timeline: Timeline, *, window_s: float = 10.0) -> list[Panel]:
    """The panels of docs/observability.md's Grafana dashboard, computed from ``timeline`` (at least
    two scrapes) with its queries, ``[5m]`` read as ``[window_s]``; time from the first scrape."""
    if len(timeline) < 2:
        raise ValueError("a dashboard needs at least two scrapes")
    origin = timeline[0][0]
    last = timeline[-1][1]

    def rates(name: str, by: Sequence[str] = ()) -> dict[tuple[str, ...], list[tuple[float, float | None]]]:
        return {
            key: _shifted(points, origin)
            for key, points in rate(timeline, name, by=by, window_s=window_s).items()
        }

    def quantiles(
        q: float, name: str, by: Sequence[str]
    ) -> dict[tuple[str, ...], list[tuple[float, float | None]]]:
        return {
            key: _shifted(points, origin)
            for key, points in quantile_series(timeline, q, name, by=by, window_s=window_s).items()
        }

    polls = sum(last.summed("mcp_tasks_polls_total").values())
    created = sum(last.summed("mcp_tasks_created_total").values())
    per_task = polls / max(created, 1.0)
    polls_line = Series(
        "polls per task",
        [
            (
                t - origin,
                sum(s.summed("mcp_tasks_polls_total").values())
                / max(sum(s.summed("mcp_tasks_created_total").values()), 1.0),
            )
            for t, s in timeline
        ],
    )
    panels = [
        _stat("Active tasks", (0, 0, 6, 4), _gauge(timeline, "mcp_tasks_active")),
        _stat("Waiting for input", (6, 0, 6, 4), _gauge(timeline, "mcp_tasks_input_waiting")),
        _stat("Push streams open", (12, 0, 6, 4), _gauge(timeline, "mcp_tasks_push_streams")),
        Panel(
            "Polls per task (whole run)",
            "stat",
            (18, 0, 6, 4),
            [polls_line],
            stat=f"{per_task:.2f}",
            stat_note=f"{polls:.0f} polls, {created:.0f} tasks",
        ),
    ]

    created_total = rates("mcp_tasks_created_total")
    flow = [Series("created", points) for points in created_total.values()]
    flow += [Series(key[0], points) for key, points in rates("mcp_tasks_ended_total", (STATUS_ATTR,)).items()]
    panels.append(
        Panel("Tasks created and ended per second, by status", "timeseries", (0, 4, 12, 8), flow, unit="/s")
    )

    durations: list[Series] = []
    for q, tag in ((0.5, "p50"), (0.95, "p95")):
        for key, points in quantiles(q, "mcp_tasks_run_duration_seconds", (TOOL_ATTR,)).items():
            durations.append(Series(f"{tag} {key[0]}", points))
    panels.append(
        Panel(
            "Run duration p50 / p95 by tool",
            "timeseries",
            (12, 4, 12, 8),
            [s for s in durations if _defined(s)],
            unit="s",
        )
    )

    delay = [
        Series("p95", points) for points in quantiles(0.95, "mcp_tasks_result_delay_seconds", ()).values()
    ]
    panels.append(
        Panel(
            "Result delay p95 (end of run to result delivered)",
            "timeseries",
            (0, 12, 12, 8),
            [s for s in delay if _defined(s)],
            unit="s",
            no_data=() if any(map(_defined, delay)) else ("p95",),
        )
    )

    store = [
        Series(f"{key[0]} {key[1]}", points)
        for key, points in quantiles(
            0.99, "mcp_tasks_store_duration_seconds", (STORE_ATTR, OPERATION_ATTR)
        ).items()
    ]
    panels.append(
        Panel(
            "Store operation p99 by store and operation",
            "timeseries",
            (12, 12, 12, 8),
            [s for s in store if _defined(s)],
            unit="s",
        )
    )

    trouble: list[Series] = []
    missing: list[str] = []
    errors = rates("mcp_tasks_store_errors_total", (STORE_ATTR, OPERATION_ATTR))
    if errors:
        trouble += [Series(f"store error {key[0]} {key[1]}", points) for key, points in errors.items()]
    else:
        missing.append("store errors")
    for name, label in (
        ("mcp_tasks_lease_expiries_total", "lease expiries"),
        ("mcp_tasks_lease_renewals_total", "lease renewals"),
        ("mcp_tasks_reruns_total", "re-runs"),
        ("mcp_tasks_limit_refusals_total", "limit refusals"),
    ):
        found = rates(name)
        if found:
            trouble += [Series(label, points) for points in found.values()]
        else:
            missing.append(label)
    panels.append(
        Panel(
            "Store errors, lease expiries, re-runs, limit refusals per second",
            "timeseries",
            (0, 20, 24, 8),
            trouble,
            unit="/s",
            no_data=missing,
        )
    )
    return panels


# --- SVG ------------------------------------------------------------------------------------------

COLUMN_PX: Final = 50
ROW_PX: Final = 34
GAP_PX: Final = 8
HEADER_PX: Final = 76
FONT: Final = "font-family='DejaVu Sans, Helvetica, Arial, sans-serif'"
PALETTE: Final = (
    "#1f78c1",
    "#e0752d",
    "#7eb26d",
    "#e24d42",
    "#ba43a9",
    "#6ed0e0",
    "#cca300",
    "#705da0",
    "#508642",
    "#bf1b00",
    "#0a437c",
    "#f9934e",
    "#447ebc",
    "#c15c17",
    "#890f02",
    "#629e51",
)
FIXED_COLOURS: Final = {
    "created": "#1f78c1",
    "completed": "#56a64b",
    "failed": "#e02f44",
    "cancelled": "#ff9830",
}
CHAR_PX: Final = 6.2  # width of one character at 11 px, for laying out legends


def _nice_step(span: float, ticks: int) -> float:
    raw = span / max(ticks, 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 2.5, 5, 10):
        if raw <= factor * magnitude:
            return factor * magnitude
    return 10 * magnitude


def _seconds_label(value: float) -> str:
    if value >= 1:
        return f"{value:g} s"
    if value >= 1e-3:
        return f"{value * 1e3:g} ms"
    return f"{value * 1e6:g} µs"


def _linear_label(value: float, unit: str) -> str:
    text = f"{value:g}"
    return f"{text}{unit}" if unit and value else text


def _legend_rows(labels: Sequence[str], width: float) -> list[list[int]]:
    rows: list[list[int]] = [[]]
    used = 0.0
    for index, label in enumerate(labels):
        need = 18 + len(label) * CHAR_PX + 14
        if rows[-1] and used + need > width:
            rows.append([])
            used = 0.0
        rows[-1].append(index)
        used += need
    return rows


def _colour(label: str, index: int) -> str:
    return FIXED_COLOURS.get(label, PALETTE[index % len(PALETTE)])


def _text(
    x: float,
    y: float,
    content: str,
    *,
    size: int = 11,
    anchor: str = "start",
    weight: str = "normal",
    fill: str = "#464c54",
) -> str:
    return (
        f"<text x='{x:.1f}' y='{y:.1f}' font-size='{size}' text-anchor='{anchor}' font-weight='{weight}' "
        f"fill='{fill}'>{escape(content)}</text>"
    )


def _line(x1: float, y1: float, x2: float, y2: float, stroke: str) -> str:
    return f"<line x1='{x1:.1f}' y1='{y1:.1f}' x2='{x2:.1f}' y2='{y2:.1f}' stroke='{stroke}'/>"


def _polyline(points: Iterable[tuple[float, float]], colour: str, label: str, *, width: float = 1.6) -> str:
    coordinates = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    return (
        f"<polyline points='{coordinates}' fill='none' stroke='{colour}' stroke-width='{width}' "
        f"stroke-linejoin='round' data-series={quoteattr(label)}><title>{escape(label)}</title></polyline>"
    )


def _frame(panel: Panel) -> tuple[float, float, float, float]:
    x, y, w, h = panel.grid
    return (
        x * COLUMN_PX + GAP_PX,
        HEADER_PX + y * ROW_PX + GAP_PX,
        w * COLUMN_PX - GAP_PX,
        h * ROW_PX - GAP_PX,
    )


def _render_stat(panel: Panel, span: tuple[float, float]) -> list[str]:
    left, top, width, height = _frame(panel)
    parts = [_text(left + 10, top + 18, panel.title, size=12, weight="bold")]
    parts.append(_text(left + 10, top + 62, panel.stat, size=30, weight="bold", fill="#1f60c4"))
    if panel.stat_note:
        parts.append(_text(left + 10, top + 80, panel.stat_note, size=11))
    line = panel.series[0].defined
    values = [v for _, v in line]
    high = max(values) if values and max(values) > 0 else 1.0
    spark_left, spark_width = left + width * 0.45, width * 0.55 - 10
    spark_top, spark_height = top + 30, height - 42
    points = [
        (
            spark_left + (t - span[0]) / (span[1] - span[0]) * spark_width,
            spark_top + spark_height * (1 - v / high),
        )
        for t, v in line
    ]
    parts.append(_polyline(points, "#5794f2", panel.series[0].label, width=1.4))
    return parts


def _render_timeseries(panel: Panel, span: tuple[float, float], window_s: float) -> list[str]:
    left, top, width, height = _frame(panel)
    parts = [_text(left + 10, top + 18, panel.title, size=12, weight="bold")]
    labels = [series.label for series in panel.series] + [f"{label}: no data" for label in panel.no_data]
    plot_left, plot_right = left + 62, left + width - 14
    legend = _legend_rows(labels, plot_right - plot_left)
    legend_height = 15 * len(legend)
    plot_top, plot_bottom = top + 32, top + height - 30 - legend_height
    values = [v for series in panel.series for _, v in series.defined]
    logarithmic = panel.unit == "s"
    positive = [v for v in values if v > 0]
    if logarithmic:
        low = 10 ** math.floor(math.log10(min(positive))) if positive else 1e-3
        high = 10 ** math.ceil(math.log10(max(positive))) if positive else 1.0
        if high <= low:
            high = low * 10
        ticks = [low * 10**k for k in range(round(math.log10(high / low)) + 1)]

        def to_y(value: float) -> float:
            share = (math.log10(max(value, low)) - math.log10(low)) / (math.log10(high) - math.log10(low))
            return plot_bottom - share * (plot_bottom - plot_top)

    else:
        top_value = max(values) if values and max(values) > 0 else 1.0
        step = _nice_step(top_value, 4)
        high = step * math.ceil(top_value / step)
        ticks = [step * k for k in range(round(high / step) + 1)]

        def to_y(value: float) -> float:
            return plot_bottom - value / high * (plot_bottom - plot_top)

    tick_label: Callable[[float], str] = (
        _seconds_label if logarithmic else functools.partial(_linear_label, unit=panel.unit)
    )

    def to_x(second: float) -> float:
        return plot_left + (second - span[0]) / (span[1] - span[0]) * (plot_right - plot_left)

    for tick in ticks:
        y = to_y(tick)
        parts.append(_line(plot_left, y, plot_right, y, "#e4e7ea"))
        parts.append(_text(plot_left - 6, y + 4, tick_label(tick), size=10, anchor="end"))
    x_step = _nice_step(span[1] - span[0], 6)
    second = math.ceil(span[0] / x_step) * x_step
    while second <= span[1] + 1e-9:
        x = to_x(second)
        parts.append(_line(x, plot_top, x, plot_bottom, "#f0f2f4"))
        parts.append(_text(x, plot_bottom + 14, f"{second:g} s", size=10, anchor="middle"))
        second += x_step
    parts.append(_line(plot_left, plot_bottom, plot_right, plot_bottom, "#9fa7b3"))
    axis_name = {"s": "seconds (log)", "/s": "per second"}.get(panel.unit, panel.unit)
    parts.append(
        _text(
            left + width - 14, top + 18, f"{axis_name} · over {window_s:g} s windows", size=10, anchor="end"
        )
    )
    for index, series in enumerate(panel.series):
        points = [(to_x(t), to_y(v)) for t, v in series.defined]
        parts.append(_polyline(points, _colour(series.label, index), series.label))
    y = plot_bottom + 32
    for row in legend:
        x = plot_left
        for index in row:
            label = labels[index]
            if index < len(panel.series):
                colour = _colour(label, index)
                parts.append(f"<rect x='{x:.1f}' y='{y - 8:.1f}' width='12' height='4' fill='{colour}'/>")
                parts.append(_text(x + 16, y - 2, label, size=11))
            else:
                parts.append(_text(x + 16, y - 2, label, size=11, fill="#8e959e"))
            x += 18 + len(label) * CHAR_PX + 14
        y += 15
    return parts


def render_svg(panels: Sequence[Panel], *, title: str, caption: Sequence[str], window_s: float) -> str:
    """The dashboard as one SVG document: one ``<polyline>`` per series, a grey panel per panel."""
    times = [t for panel in panels for series in panel.series for t, _ in series.points]
    span = (min(times, default=0.0), max(times, default=1.0))
    if span[1] <= span[0]:
        span = (span[0], span[0] + 1.0)
    rows = max(panel.grid[1] + panel.grid[3] for panel in panels)
    width = 24 * COLUMN_PX + GAP_PX
    height = HEADER_PX + rows * ROW_PX + GAP_PX
    parts = [
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
        f"viewBox='0 0 {width} {height}' {FONT}>",
        f"<rect width='{width}' height='{height}' fill='#f4f5f5'/>",
        _text(GAP_PX + 2, 24, title, size=16, weight="bold", fill="#22252b"),
    ]
    for index, line in enumerate(caption):
        parts.append(_text(GAP_PX + 2, 42 + 14 * index, line, size=11))
    for panel in panels:
        left, top, panel_width, panel_height = _frame(panel)
        parts.append(
            f"<rect x='{left:.1f}' y='{top:.1f}' width='{panel_width:.1f}' height='{panel_height:.1f}' "
            "rx='3' fill='#ffffff' stroke='#dce1e6'/>"
        )
        if panel.kind == "stat":
            parts += _render_stat(panel, span)
        else:
            parts += _render_timeseries(panel, span, window_s)
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


# --- a real run -----------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def server_command(metrics_port: int, *extra: str) -> list[str]:
    """``example-server`` over streamable HTTP on a free port, its metrics on ``metrics_port``."""
    return [
        sys.executable,
        "-m",
        "mcp_tasks_compat",
        "example-server",
        "--transport",
        "http",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--metrics-port",
        str(metrics_port),
        *extra,
    ]


@dataclass
class Load:
    """What the load did, for the caption (calls by kind, and what the client saw go wrong)."""

    calls: dict[str, int] = field(default_factory=dict[str, int])
    refused: int = 0
    errors: dict[str, int] = field(default_factory=dict[str, int])

    def count(self, kind: str) -> None:
        self.calls[kind] = self.calls.get(kind, 0) + 1


KINDS: Final = ("complete", "complete", "complete", "must_task", "fail", "ask", "ask", "cancel", "cancel")


async def _one_call(session: Any, kind: str, rng: random.Random, load: Load) -> None:
    import anyio

    from mcp_tasks_compat.client import call_tool, start_tool

    load.count(kind)
    if kind == "complete":
        seconds = round(rng.uniform(0.2, 4.0), 2)
        await call_tool(session, "slow_echo", {"text": "hi", "seconds": seconds, "steps": 2}, mode="task")
    elif kind == "must_task":
        await call_tool(session, "must_task", {"text": "hi"}, mode="task")
    elif kind == "fail":
        await call_tool(session, "fail", {"message": "a failing tool"}, mode="task")
    elif kind == "ask":
        await call_tool(session, "ask", {"question": "Your name?"}, mode="task")
    else:
        async with await start_tool(session, "slow_echo", {"text": "hi", "seconds": 60, "steps": 4}) as run:
            await anyio.sleep(rng.uniform(0.5, 3.0))  # the caller changes its mind after a while
            await run.cancel()


def _answering(rng: random.Random) -> Callable[[Any, Any], Any]:
    """An elicitation callback that answers after a human-like pause (so input waits show)."""

    async def answer(context: Any, params: Any) -> Any:
        import anyio
        import mcp.types as types

        await anyio.sleep(rng.uniform(0.5, 4.0))
        return types.ElicitResult(action="accept", content={"answer": "Ada"})

    return answer


async def _worker(session: Any, rng: random.Random, load: Load, until: float) -> None:
    import anyio

    while time.monotonic() < until:
        kind = rng.choice(KINDS)
        try:
            await _one_call(session, kind, rng, load)
        except Exception as error:  # the SDK's refusal by the limit during the burst (counted)
            load.errors[type(error).__name__] = load.errors.get(type(error).__name__, 0) + 1
        await anyio.sleep(rng.uniform(0.0, 0.6))  # think time between one caller's calls


async def _burst(session: Any, size: int, hold_s: float, load: Load) -> None:
    """``size`` long tasks from one owner (more than ``--max-active-tasks``), cancelled
    after ``hold_s``: the refusals and the cancellations show on the dashboard."""
    import anyio

    from mcp_tasks_compat.client import start_tool

    runs: list[Any] = []
    # One after another, as a batch submitter does: the per-owner limit is checked before each
    # create, not atomically with it, so creations started all at once can pass it together.
    for _ in range(size):
        try:
            runs.append(await start_tool(session, "slow_echo", {"text": "held", "seconds": 120, "steps": 4}))
        except Exception:  # the SDK's error: "too many active tasks"
            load.refused += 1
    load.calls["burst"] = size
    await anyio.sleep(hold_s)
    async with anyio.create_task_group() as group:
        for run in runs:
            group.start_soon(run.cancel)


async def record_run(
    *,
    duration_s: float,
    workers: int,
    burst: int,
    max_active: int,
    seed: int,
    store_url: str,
    every_s: float = 1.0,
) -> tuple[list[tuple[float, Scrape]], Load, list[Dialect]]:
    """Run the example server and the load; the scrapes (one per ``every_s``), what the load did,
    and the dialects it spoke."""
    import anyio

    from mcp_tasks_compat.testing import HttpServerProcess, dialects

    rng = random.Random(seed)
    load = Load()
    timeline: list[tuple[float, Scrape]] = []
    port = free_port()
    metrics_url = f"http://127.0.0.1:{port}/metrics"
    spoken = list(dialects())
    command = server_command(
        port, "--store", store_url, "--lease-s", "3", "--max-active-tasks", str(max_active)
    )
    with HttpServerProcess(command, start_timeout=60) as url:

        async def take() -> None:
            text = await anyio.to_thread.run_sync(scrape, metrics_url)
            timeline.append((time.monotonic(), parse_prometheus(text)))

        async def sample(until: float) -> None:
            next_at = time.monotonic()
            while next_at <= until:
                await take()
                next_at += every_s
                await anyio.sleep(max(0.0, next_at - time.monotonic()))

        async with anyio.create_task_group() as outer:
            await take()
            start = time.monotonic()
            until = start + duration_s
            outer.start_soon(sample, until)
            async with anyio.create_task_group() as load_group:
                for dialect in spoken:
                    options = {"elicitation_callback": _answering(random.Random(rng.random()))}
                    session = await load_group.start(_session_holder, url, dialect, options)
                    for _ in range(workers):
                        load_group.start_soon(_worker, session, random.Random(rng.random()), load, until)
                    if dialect == spoken[-1] and burst:
                        load_group.start_soon(
                            _delayed, start + duration_s * 0.55, _burst(session, burst, 5.0, load)
                        )
                await anyio.sleep(max(0.0, until - time.monotonic()) + 0.5)
                load_group.cancel_scope.cancel()  # the run is over: the load stops mid-call
    return timeline, load, spoken


async def _delayed(at: float, work: Any) -> None:
    import anyio

    await anyio.sleep(max(0.0, at - time.monotonic()))
    await work


async def _session_holder(
    url: str, dialect: Dialect, options: Mapping[str, Any], *, task_status: Any
) -> None:
    """Keep one session open for the load's workers (``task_status`` hands it over)."""
    import anyio

    from mcp_tasks_compat._testkit.sessions import connect_http

    async with connect_http(url, dialect=dialect, session_options=options) as session:
        task_status.started(session)
        await anyio.sleep_forever()


def caption_lines(
    load: Load, spoken: Sequence[str], *, duration_s: float, store: str, window_s: float
) -> list[str]:
    from mcp_tasks_compat import __version__

    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    mcp_version = importlib.metadata.version("mcp")
    calls = ", ".join(f"{count} {kind}" for kind, count in sorted(load.calls.items()))
    return [
        f"{when} · mcp {mcp_version} · mcp-tasks-compat {__version__} · Python {platform.python_version()} · "
        f"example-server over streamable HTTP on 127.0.0.1, {store} task store, dialects {', '.join(spoken)}",
        f"{duration_s:g} s of load through the library's client, /metrics scraped every second; "
        f"the dashboard's queries with [5m] read as [{window_s:g}s]; time from the first scrape.",
        f"Calls: {calls}; {load.refused} of the burst refused by --max-active-tasks, "
        f"{sum(load.errors.values())} other calls refused while it held.",
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of load (default 60)")
    parser.add_argument("--workers", type=int, default=4, help="concurrent callers per dialect (default 4)")
    parser.add_argument(
        "--burst", type=int, default=40, help="long tasks started in a row mid-run (default 40)"
    )
    parser.add_argument(
        "--max-active-tasks", type=int, default=30, help="the server's per-owner limit (default 30)"
    )
    parser.add_argument(
        "--window", type=float, default=10.0, help="rate and quantile window in seconds (default 10)"
    )
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    options = parser.parse_args(argv)

    import anyio

    with tempfile.TemporaryDirectory(prefix="dashboard-") as folder:
        store_url = f"sqlite:///{folder}/tasks.db"
        timeline, load, spoken = anyio.run(
            lambda: record_run(
                duration_s=options.duration,
                workers=options.workers,
                burst=options.burst,
                max_active=options.max_active_tasks,
                seed=options.seed,
                store_url=store_url,
            )
        )
    panels = dashboard_panels(timeline, window_s=options.window)
    caption = caption_lines(
        load, spoken, duration_s=options.duration, store="SQLite", window_s=options.window
    )
    svg = render_svg(
        panels, title="MCP tasks: one run of example-server", caption=caption, window_s=options.window
    )
    options.output.write_text(svg, encoding="utf-8")
    print(f"wrote {options.output} ({len(timeline)} scrapes; {caption[1]})")
    if load.errors:
        print(f"errors seen by the load: {load.errors}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
