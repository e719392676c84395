"""tools/dashboard_svg.py (the picture in docs/observability.md): its Prometheus parser and queries,
and the SVG it draws from scrapes of a real ``example-server --metrics-port`` run."""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import anyio
import pytest

from mcp_tasks_compat._testkit.sessions import connect_http
from mcp_tasks_compat.client import call_tool, start_tool
from mcp_tasks_compat.dialects import TASK_AT_ONCE_META_KEY
from mcp_tasks_compat.testing import HttpServerProcess, dialects

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # a repository tool (tools/), not in the wheel
    sys.path.insert(0, str(ROOT))

from tools.dashboard_svg import (  # noqa: E402
    Scrape,
    dashboard_panels,
    free_port,
    histogram_quantile,
    parse_prometheus,
    render_svg,
    scrape,
    server_command,
)

SVG = "{http://www.w3.org/2000/svg}"
BOUND_S = 60.0  # includes starting the server


def test_the_parser_reads_labels_escapes_types_and_special_values() -> None:
    text = (
        "# HELP demo_total A counter\n"
        "# TYPE demo_total counter\n"
        'demo_total{tool="a \\"quoted\\" name",path="c:\\\\x",note="two\\nlines"} 3.0\n'
        "demo_total 4 1700000000000\n"
        "# TYPE demo_seconds histogram\n"
        'demo_seconds_bucket{le="0.5"} 1.0\n'
        'demo_seconds_bucket{le="+Inf"} 2.0\n'
        "demo_gauge NaN\n"
    )
    parsed = parse_prometheus(text)
    assert parsed.types == {"demo_total": "counter", "demo_seconds": "histogram"}
    labelled, bare = parsed.samples["demo_total"]
    assert labelled.labels == {"tool": 'a "quoted" name', "path": "c:\\x", "note": "two\nlines"}
    assert bare.labels == {}
    assert bare.value == 4.0
    assert parsed.summed("demo_total") == {(): 7.0}
    assert parsed.summed("demo_seconds_bucket", ("le",)) == {("0.5",): 1.0, ("+Inf",): 2.0}
    assert math.isnan(parsed.samples["demo_gauge"][0].value)


def test_histogram_quantile_interpolates_as_prometheus_does() -> None:
    buckets = [(0.1, 10.0), (0.5, 30.0), (1.0, 40.0), (math.inf, 40.0)]
    assert histogram_quantile(0.25, buckets) == pytest.approx(0.1)  # rank 10: top of the first bucket
    assert histogram_quantile(0.5, buckets) == pytest.approx(0.1 + 0.4 * (20 - 10) / 20)
    assert histogram_quantile(0.95, buckets) == pytest.approx(0.5 + 0.5 * (38 - 30) / 10)
    assert histogram_quantile(0.99, [(0.1, 1.0), (math.inf, 5.0)]) == 0.1  # in +Inf: the highest bound
    assert histogram_quantile(0.5, [(0.1, 0.0), (math.inf, 0.0)]) is None  # no observations: NaN


async def _answer_at_once(context: Any, params: Any) -> Any:
    import mcp.types as types

    return types.ElicitResult(action="accept", content={"answer": "Ada"})


AT_ONCE = {TASK_AT_ONCE_META_KEY: True}
"""The hint start_tool sends: a task even for a quick call (call_tool alone is answered in the grace)."""


@pytest.mark.anyio
async def test_a_short_real_run_draws_one_line_per_series(tmp_path: Path) -> None:
    port = free_port()
    metrics_url = f"http://127.0.0.1:{port}/metrics"
    command = server_command(port, "--store", f"sqlite:///{tmp_path / 'tasks.db'}")
    timeline: list[tuple[float, Scrape]] = []
    spoken = dialects()

    async def take() -> Scrape:
        taken = parse_prometheus(await anyio.to_thread.run_sync(scrape, metrics_url))
        timeline.append((time.monotonic(), taken))
        return taken

    with anyio.fail_after(BOUND_S), HttpServerProcess(command, start_timeout=BOUND_S) as url:
        await take()
        for dialect in spoken:
            options = {"elicitation_callback": _answer_at_once}
            async with connect_http(url, dialect=dialect, session_options=options) as session:
                await call_tool(
                    session,
                    "slow_echo",
                    {"text": "hi", "seconds": 0.05, "steps": 1},
                    mode="task",
                    meta=AT_ONCE,
                )
                await take()
                await call_tool(session, "fail", {"message": "no"}, mode="task", meta=AT_ONCE)
                await take()
                await call_tool(session, "ask", {"question": "Your name?"}, mode="task", meta=AT_ONCE)
                await take()
                async with await start_tool(session, "slow_echo", {"text": "hi", "seconds": 30}) as run:
                    await run.cancel()
                await take()
        # Every task's end is counted where it is saved, before its caller hears of it.
        while sum((await take()).summed("mcp_tasks_ended_total").values()) < 4 * len(spoken):
            pass
        last = await take()

    assert sum(last.summed("mcp_tasks_created_total").values()) == 4 * len(spoken)
    assert sum(last.summed("mcp_tasks_active").values()) == 0
    ended = last.summed("mcp_tasks_ended_total", ("mcp_tasks_task_status",))
    assert ended[("cancelled",)] == len(spoken)
    assert ended[("failed",)] >= 1  # 2025-11-25 fails a task whose tool raised; 2026-07-28 completes it

    panels = dashboard_panels(timeline, window_s=BOUND_S)
    svg = render_svg(panels, title="test run", caption=["a caption & <escaped> text"], window_s=BOUND_S)
    root = ElementTree.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    lines = {line.get("data-series"): line.get("points", "").split() for line in root.iter(f"{SVG}polyline")}
    series = [s.label for panel in panels for s in panel.series]
    assert len(list(root.iter(f"{SVG}polyline"))) == len(series)
    assert all(points for points in lines.values()), lines
    for label in ("created", "completed", "failed", "cancelled", "p50 slow_echo", "p95 ask", "sqlite create"):
        assert len(lines[label]) >= 2, (label, sorted(lines))
    flow = next(panel for panel in panels if panel.title.startswith("Tasks created and ended"))
    created = next(s for s in flow.series if s.label == "created")
    assert max(v for _, v in created.defined) > 0
    durations = next(panel for panel in panels if panel.title.startswith("Run duration"))
    echo_p50 = next(s for s in durations.series if s.label == "p50 slow_echo")
    assert all(0 < v <= 1.0 for _, v in echo_p50.defined)  # 50 ms runs, within their bucket
    assert "a caption &amp; &lt;escaped&gt; text" in svg
