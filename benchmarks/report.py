"""Turn bench runs (one JSON per SDK major) into one JSON, a markdown table and docs/benchmarks.md."""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["environment", "evaluate_targets", "merge", "render_docs", "render_markdown"]

ANALYSIS_PATH = Path(__file__).with_name("ANALYSIS.md")


def _package_version(name: str) -> str | None:
    import importlib.metadata

    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def loadavg() -> list[float] | None:
    try:
        return [round(value, 2) for value in os.getloadavg()]
    except OSError:
        return None


def environment() -> dict[str, Any]:
    """The machine and the packages of this environment."""
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu_model(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "packages": {
            name: _package_version(name)
            for name in (
                "mcp",
                "mcp-tasks-compat",
                "fastmcp",
                "fastmcp-tasks",
                "pydocket",
                "anyio",
                "uvicorn",
                "redis",
            )
            if _package_version(name) is not None
        },
        "loadavg": loadavg(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def merge(runs: Sequence[Mapping[str, Any]], *, command: str) -> dict[str, Any]:
    """One document from runs of either major; per (major, section) the newest run's rows win.

    So a section can be re-measured alone (``run --only capacity``) and merged with the rest.
    """
    ordered = sorted(runs, key=lambda run: (int(run["major"]), str(run["started"])))
    chosen: dict[tuple[int, str], Mapping[str, Any]] = {}
    for run in ordered:
        # The sections the run was asked for: the mechanisms section also writes capacity rows
        # (its detach rows), which must not replace a full capacity section measured earlier.
        for section in run.get("sections") or {row["section"] for row in run["rows"]}:
            chosen[(int(run["major"]), section)] = run
    rows: list[Mapping[str, Any]] = []
    used: list[Mapping[str, Any]] = []
    for key in sorted(chosen, key=lambda key: (key[0], _section_rank(key[1]))):
        run = chosen[key]
        rows += [row for row in run["rows"] if row["section"] == key[1]]
        if all(run is not other for other in used):
            used.append(run)
    summaries = []
    for run in used:
        taken = sorted(section for (_, section), source in chosen.items() if source is run)
        summary = {key: value for key, value in run.items() if key not in ("rows", "errors")}
        summary["sections_used"] = taken
        summary["errors"] = [e for e in run.get("errors", []) if e["what"].split("/")[0] in taken]
        summaries.append(summary)
    return {
        "schema": 1,
        "command": command,
        "runs": summaries,
        "rows": rows,
        "targets": evaluate_targets(rows),
    }


def _section_rank(section: str) -> int:
    order = ("overhead", "latency", "throughput", "capacity", "mechanisms", "stores")
    return order.index(section) if section in order else len(order)


# --- targets ---------------------------------------------------------------------------------------


def _find(rows: Iterable[Mapping[str, Any]], **match: Any) -> list[Mapping[str, Any]]:
    return [row for row in rows if all(row.get(key) == value for key, value in match.items())]


def _target(name: str, measured: float | None, limit: float, *, at_most: bool, detail: str) -> dict[str, Any]:
    met = None if measured is None else (measured <= limit if at_most else measured >= limit)
    return {
        "target": name,
        "limit": f"{'<=' if at_most else '>='} {limit:g}",
        "measured": measured,
        "met": met,
        "detail": detail,
    }


def evaluate_targets(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The issue's targets, one line per (major, transport or dialect) where a row exists."""
    out: list[dict[str, Any]] = []
    for row in _find(rows, section="overhead", kind="ours"):
        if row["variant"] in ("plain", "auto"):
            out.append(
                _target(
                    f"plain-call overhead, mode={row['variant']!r} vs raw SDK "
                    f"(mcp{row['major']}, {row['transport']})",
                    row["ratio_to_raw"]["median"],
                    1.05,
                    at_most=True,
                    detail=f"ratio p10-p90 {row['ratio_to_raw']['p10']}-{row['ratio_to_raw']['p90']}",
                )
            )
    for row in _find(rows, section="throughput", kind="ours", transport="http", variant="sequential"):
        for peer in ("fastmcp4", "fastmcp3"):  # the target names fastmcp-tasks; FastMCP 3 is for reference
            for other in _find(
                rows,
                section="throughput",
                kind=peer,
                transport="http",
                variant="sequential",
                major=row["major"],
            ):
                ours_rate, peer_rate = row["task_per_s"]["median"], other["task_per_s"]["median"]
                if row["dialect"] != other["dialect"] or not ours_rate or not peer_rate:
                    continue
                target = _target(
                    f"sequential task throughput over HTTP vs {peer} (mcp{row['major']}, {row['dialect']})",
                    round(ours_rate / peer_rate, 2),
                    1.5,
                    at_most=False,
                    detail=f"{ours_rate} vs {peer_rate} tasks/s",
                )
                if peer != "fastmcp4":
                    target.update(limit="(reference)", met=None)
                out.append(target)
        out.append(
            _target(
                f"sequential task throughput over HTTP vs half the plain rate "
                f"(mcp{row['major']}, {row['dialect']})",
                row["task_to_half_plain"]["median"],
                0.8,
                at_most=False,
                detail=f"{row['task_per_s']['median']} tasks/s, {row['plain_per_s']['median']} plain calls/s",
            )
        )
    for row in _find(rows, section="latency", kind="ours"):
        latency = row["completion_to_result_ms"]
        limit = 50.0 if row["dialect"] == "2026-07-28" else 10.0
        out.append(
            _target(
                f"completion-to-result p50 ms (mcp{row['major']}, {row['dialect']}, {row['transport']})",
                row["completion_to_result_ms"]["median"],
                limit,
                at_most=True,
                detail=f"p90 {latency['p90']}, p99 {latency['p99']} ms",
            )
        )
    for row in _find(rows, section="capacity", kind="ours"):
        if row["size"] < 10_000:
            continue
        out.append(
            _target(
                f"RSS per task, {row['size']} concurrent tasks (mcp{row['major']}, {row['dialect']})",
                row.get("rss_per_task_kib"),
                8.0,
                at_most=True,
                detail=f"{row.get('running_at_once')} of {row['size']} running at once",
            )
        )
        ratio = row.get("rss_after_expiry_vs_baseline")
        out.append(
            _target(
                f"RSS after expiry vs baseline, {row['size']} tasks (mcp{row['major']}, {row['dialect']})",
                ratio,
                1.5,
                at_most=True,
                detail=f"expired={row.get('expired')}, waited {row.get('expiry_wait_s')} s",
            )
        )
    out += _mechanism_targets(rows)
    out += _store_targets(rows)
    return out


def _mechanism_targets(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Issue 13: auto ÷ raw calls/s >= 0.8 on a quick tool; extra time past the run p50 <= 15 ms."""
    out: list[dict[str, Any]] = []
    for row in _find(rows, section="mechanisms", kind="ours", mechanisms="all on"):
        where = f"mcp{row['major']}, {row['dialect']}, {row['transport']}"
        if row["variant"] == "quick" and row["dialect"] == "2026-07-28":
            out.append(
                _target(
                    f'quick tool: call_tool(mode="auto") ÷ raw session.call_tool calls/s ({where})',
                    row["rate_to_raw"]["median"],
                    0.8,
                    at_most=False,
                    detail=f"{row['over_raw_us']['median']} µs per call over raw; "
                    f"{row['requests_per_call']} requests per call",
                )
            )
        elif row["variant"] == "quick":
            # 2025-11-25: a client that sends params.task must get a task (two round trips at
            # least), so the ceiling is half the raw rate; the issue keeps >= 0.8 of that.
            out.append(
                _target(
                    f'quick tool as a task: call_tool(mode="auto") ÷ half the raw calls/s ({where})',
                    round(2 * row["rate_to_raw"]["median"], 4),
                    0.8,
                    at_most=False,
                    detail=f"{row['per_call_us']['median']} µs per call, raw "
                    f"{row['raw_per_call_us']['median']} µs; {row['requests_per_call']} requests per call",
                )
            )
        elif row["variant"] == "extra_time" and row["length_s"] > 0:
            out.append(
                _target(
                    f"extra time past the tool's run p50 ms, {row['length_s']} s tool ({where})",
                    row["extra_ms"]["median"],
                    15.0,
                    at_most=True,
                    detail=f"p90 {row['extra_ms']['p90']} ms; {row['requests_per_call']} requests per call",
                )
            )
    return out


def _mechanism_tables(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    mine = _find(rows, section="mechanisms")
    if not mine:
        return []
    parts = [
        '### 4b. The mechanisms of issue 13, each off and on (tool `job`; `call_tool(mode="auto")`; '
        "the raw call is the SDK's `session.call_tool` on a bare session of the same server)"
    ]
    parts.append(
        _table(
            [
                "mcp",
                "server",
                "dialect",
                "transport",
                "mechanisms",
                "µs/call auto (raw)",
                "µs over raw",
                "auto ÷ raw calls/s",
                "requests per call",
            ],
            (
                (
                    r["major"],
                    _server(r["kind"]),
                    r.get("dialect"),
                    r["transport"],
                    r["mechanisms"],
                    f"{r['per_call_us']['median']} ({r['raw_per_call_us']['median']})",
                    r["over_raw_us"]["median"],
                    f"{r['rate_to_raw']['median']} {_spread(r['rate_to_raw'])}",
                    r["requests_per_call"],
                )
                for r in mine
                if r["variant"] == "quick"
            ),
        )
    )
    parts.append(
        _table(
            [
                "mcp",
                "server",
                "dialect",
                "mechanisms",
                "tool s",
                "extra ms p50 (p10-p90)",
                "n",
                "requests per call",
            ],
            (
                (
                    r["major"],
                    _server(r["kind"]),
                    r.get("dialect"),
                    r["mechanisms"],
                    r["length_s"],
                    f"{r['extra_ms']['median']} {_spread(r['extra_ms'])}",
                    r["extra_ms"]["n"],
                    r["requests_per_call"],
                )
                for r in mine
                if r["variant"] == "extra_time"
            ),
        )
    )
    parts.append(f"![Extra time past the tool's run against the tool's length]({CHART_NAME})")
    return parts


CHART_NAME = "benchmarks-extra-time.svg"


def write_chart(rows: Sequence[Mapping[str, Any]], path: Path) -> Path | None:
    """The extra time past the tool's run against the tool's length, one series per configuration
    (and per peer), as SVG. matplotlib is a bench requirement only; without it, no chart."""
    points = _find(rows, section="mechanisms", variant="extra_time")
    if not points:
        return None
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    series: dict[str, list[tuple[float, float]]] = {}
    for row in points:
        name = f"mcp{row['major']} {_server(row['kind'])}: {row['mechanisms']}"
        series.setdefault(name, []).extend((float(x), float(y)) for x, y in row.get("points", []))
    figure, axes = plt.subplots(figsize=(9, 5))
    for name, xy in sorted(series.items()):
        xy.sort()
        axes.plot([x for x, _ in xy], [y for _, y in xy], marker="o", markersize=3, linewidth=1, label=name)
    axes.set_xlabel("tool length (s)")
    axes.set_ylabel("extra time past the tool's run (ms)")
    axes.set_yscale("symlog", linthresh=20)
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=7)
    axes.set_title("Result delivery after the tool returns (call_tool(mode='auto'))")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="svg", metadata={"Date": None})
    plt.close(figure)
    return path


STORE_NAMES = {"memory": "memory", "sqlite": "SQLite", "redis": "Redis"}


def _store_targets(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Issue 12: SQLite and Redis task rate >= 0.5x memory; tasks/get p50 with many tasks <= 1.2x few."""
    out: list[dict[str, Any]] = []
    for row in _find(rows, section="stores"):
        store = STORE_NAMES.get(row["store"], row["store"])
        where = f"mcp{row['major']}, {row['dialect']}, {row['transport']}"
        if row["variant"] in ("sequential", "concurrent") and row["store"] != "memory":
            ratio = row["ratio_to_memory"]
            out.append(
                _target(
                    f"task throughput {store} ÷ memory, {row['variant']} ({row['callers']} caller"
                    f"{'s' if row['callers'] != 1 else ''}; {where})",
                    ratio["median"],
                    0.5,
                    at_most=False,
                    detail=f"{row['task_per_s']['median']} tasks/s; per-round ratio p10-p90 "
                    f"{ratio['p10']}-{ratio['p90']}",
                )
            )
        if row["variant"] == "tasks/get" and row.get("p50_ratio_to_smallest"):
            ratio = row["p50_ratio_to_smallest"]
            out.append(
                _target(
                    f"tasks/get p50, {row['stored']:,} ÷ {row['smallest']:,} stored tasks, {store} ({where})",
                    ratio["median"],
                    1.2,
                    at_most=True,
                    detail=f"p50 {row['tasks_get_ms']['median']} ms; per-round ratio p10-p90 "
                    f"{ratio['p10']}-{ratio['p90']}; pooled {row.get('pooled_p50_ratio_to_smallest')}",
                )
            )
    return out


def _store_tables(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Task stores: throughput per store side by side (ratio to memory), then tasks/get by stored tasks."""
    store_rows = _find(rows, section="stores")
    shapes: dict[tuple[Any, ...], dict[str, Mapping[str, Any]]] = {}
    for row in store_rows:
        if row["variant"] in ("sequential", "concurrent"):
            key = (row["major"], row["dialect"], row["transport"], row["variant"], row["callers"])
            shapes.setdefault(key, {})[row["store"]] = row

    def rate(cells: Mapping[str, Mapping[str, Any]], store: str) -> str | None:
        row = cells.get(store)
        if row is None:
            return None
        text = _spread(row["task_per_s"])
        if store != "memory":
            text += f" · **{row['ratio_to_memory']['median']}x**"
        return text

    throughput = _table(
        [
            "mcp",
            "dialect",
            "transport",
            "callers",
            "memory tasks/s",
            "SQLite tasks/s · ÷ memory",
            "Redis tasks/s · ÷ memory",
        ],
        (
            (*key[:3], key[4], rate(cells, "memory"), rate(cells, "sqlite"), rate(cells, "redis"))
            for key, cells in shapes.items()
        ),
    )
    gets = _table(
        [
            "mcp",
            "dialect",
            "store",
            "stored tasks",
            "tasks/get p50 ms",
            "p95 ms",
            "p99 ms",
            "n",
            "p50 ÷ fewest stored (per round, p10-p90)",
            "stored via store API + via client (fill s)",
        ],
        (
            (
                r["major"],
                r["dialect"],
                STORE_NAMES.get(r["store"], r["store"]),
                f"{r['stored']:,}",
                r["tasks_get_ms"]["median"],
                r["tasks_get_ms"].get("p95"),
                r["tasks_get_ms"]["p99"],
                r["tasks_get_ms"]["n"],
                _spread(r.get("p50_ratio_to_smallest")) if r.get("p50_ratio_to_smallest") else "-",
                f"{r['prefilled_via_store']:,} + {r['run_via_client']} ({r.get('prefill_s')} s)",
            )
            for r in store_rows
            if r["variant"] == "tasks/get"
        ),
    )
    where = sorted(
        {(r["major"], STORE_NAMES.get(r["store"], r["store"]), r["store_where"]) for r in store_rows}
    )
    lines = [f"- mcp{major}, {store}: {text}" for major, store, text in where]
    if any(r["variant"] == "tasks/get" for r in store_rows):
        lines.append(
            "- tasks/get: the store is pre-filled through its own `TaskStore.create` (completed tasks of "
            "another owner), then tasks run through our client are read back with `tasks/get`"
        )
    return [throughput, gets, "\n".join(lines)] if store_rows else [throughput, gets]


# --- markdown ----------------------------------------------------------------------------------------


def _spread(stats: Mapping[str, Any] | None, low: str = "p10", high: str = "p90") -> str:
    if not stats or stats.get("median") is None:
        return "n/a"
    return f"{stats['median']:g} ({stats[low]:g}-{stats[high]:g})"


def _table(header: Sequence[str], lines: Iterable[Sequence[Any]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join("n/a" if cell is None else str(cell) for cell in line) + " |" for line in lines]
    return "\n".join(out)


def _server(kind: str) -> str:
    return {
        "sdk": "SDK server (no tasks)",
        "ours": "ours",
        "fastmcp4": "FastMCP 4 + fastmcp-tasks",
        "fastmcp3": "FastMCP 3 tasks",
    }.get(kind, kind)


def render_markdown(document: Mapping[str, Any]) -> str:
    rows = document["rows"]
    parts: list[str] = []
    parts.append(
        "### 1. Plain-call overhead (tool `echo`, µs per call; ratio to the raw SDK call on the same session)"
    )
    parts.append(
        _table(
            ["mcp", "transport", "server", "call", "µs/call median (p10-p90)", "ratio to raw (p10-p90)"],
            (
                (
                    r["major"],
                    r["transport"],
                    _server(r["kind"]),
                    {"raw": "raw `session.call_tool`"}.get(
                        r["variant"], f"`call_tool(mode={r['variant']!r})`"
                    ),
                    _spread(r["per_call_us"]),
                    _spread(r["ratio_to_raw"]),
                )
                for r in _find(rows, section="overhead")
            ),
        )
    )
    parts.append(
        "### 2. Completion-to-result latency "
        "(tool returns → caller holds the result, ms; the tool first sleeps a random delay)"
    )
    parts.append(
        _table(
            [
                "mcp",
                "server",
                "dialect",
                "transport",
                "p50",
                "p90",
                "p99",
                "n",
                "callers",
                "plain round trip p50 ms",
                "poll hint (server default)",
            ],
            (
                (
                    r["major"],
                    _server(r["kind"]),
                    r["dialect"],
                    r["transport"],
                    r["completion_to_result_ms"]["median"],
                    r["completion_to_result_ms"]["p90"],
                    r["completion_to_result_ms"]["p99"],
                    r["completion_to_result_ms"]["n"],
                    r["concurrency"],
                    (r.get("plain_round_trip_ms") or {}).get("median"),
                    r["poll_hint"],
                )
                for r in _find(rows, section="latency")
            ),
        )
    )
    parts.append(
        "### 3. Throughput (tool `job` returning at once; calls per second, median (p10-p90) of rounds)"
    )
    parts.append(
        _table(
            [
                "mcp",
                "server",
                "dialect",
                "transport",
                "callers",
                "tasks/s",
                "plain calls/s",
                "tasks ÷ (plain/2)",
            ],
            (
                (
                    r["major"],
                    _server(r["kind"]),
                    r["dialect"],
                    r["transport"],
                    r["callers"],
                    _spread(r["task_per_s"]),
                    _spread(r["plain_per_s"]),
                    _spread(r["task_to_half_plain"]),
                )
                for r in _find(rows, section="throughput")
            ),
        )
    )
    parts.append("### 4. Capacity (held tasks in flight in one server process; RSS from /proc/self/status)")
    parts.append(
        _table(
            [
                "mcp",
                "server",
                "dialect",
                "tasks",
                "running at once",
                "created/s",
                "RSS base MiB",
                "RSS/task KiB",
                "tasks/get p50 / p99 ms",
                "mechanisms",
                "RSS after expiry ÷ base",
                "after sessions closed / + malloc_trim ÷ base",
                "live objects base → in flight → after expiry",
            ],
            (
                (
                    r["major"],
                    _server(r["kind"]),
                    r.get("dialect"),
                    r["size"],
                    r.get("running_at_once"),
                    r.get("create_per_s"),
                    round(r["rss_baseline_kib"] / 1024, 1) if r.get("rss_baseline_kib") else None,
                    r.get("rss_per_task_kib"),
                    f"{r['tasks_get_ms']['median']} / {r['tasks_get_ms']['p99']}"
                    if r.get("tasks_get_ms")
                    else None,
                    r.get("mechanisms", "all on"),
                    r.get("rss_after_expiry_vs_baseline", r.get("expiry_note")),
                    f"{r.get('rss_after_sessions_closed_vs_baseline')} / "
                    f"{r.get('rss_after_trim_vs_baseline')}",
                    f"{r.get('gc_objects_baseline')} → {r.get('gc_objects_in_flight')} → "
                    f"{r.get('gc_objects_after_expiry')}",
                )
                for r in _find(rows, section="capacity")
            ),
        )
    )
    parts += _mechanism_tables(rows)
    parts.append(
        "### 5. Task stores (our server on memory, SQLite and Redis, all else equal; tool `job` returning "
        'at once, `call_tool(mode="task")` to completion; median (p10-p90) of interleaved rounds)'
    )
    parts += _store_tables(rows)
    parts.append("### Targets")
    parts.append(
        _table(
            ["target", "limit", "measured", "met", "detail"],
            (
                (
                    t["target"],
                    t["limit"],
                    t["measured"],
                    {True: "yes", False: "**no**", None: "n/a"}[t["met"]],
                    t["detail"],
                )
                for t in document["targets"]
            ),
        )
    )
    problems = [(run["major"], error) for run in document["runs"] for error in run.get("errors", [])]
    notes = [(run["major"], note) for run in document["runs"] for note in run.get("notes", [])]
    if problems or notes:
        parts.append("### Errors and notes")
        parts += [f"- mcp{major}: {error['what']}: {_one_line(error['error'])}" for major, error in problems]
        parts += [f"- mcp{major}: {_one_line(note)}" for major, note in notes]
    return "\n\n".join(parts) + "\n"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _machine(document: Mapping[str, Any]) -> str:
    lines = []
    for run in document["runs"]:
        env = run["environment"]
        packages = ", ".join(f"{name} {version}" for name, version in sorted(env["packages"].items()))
        lines.append(
            f"- mcp{run['major']} run ({run['profile']}, sections {', '.join(run.get('sections_used', []))}; "
            f"{run['started']}, {run['duration_s']} s): "
            f"{env['nproc']} x {env['cpu']}, Python {env['python']}, {env['platform']}; {packages}; "
            f"load average at start {run['loadavg_start']}, at end {run['loadavg_end']}"
        )
    return "\n".join(lines)


DOCS_HEADER = """# Benchmarks

What it costs to run a tool call as a task with mcp-tasks-compat, measured next to the raw SDK
and the peers (FastMCP 4 + fastmcp-tasks for the Tasks extension, FastMCP 3 for 2025-11-25
tasks), in the same run on the same machine, driven by the same client (ours). Absolute times on
a 2-core machine are noisy: read the ratios, which compare variants measured in the same round
(variants are interleaved, rounds repeated, medians reported with p10-p90 spreads).

## How to run

```
{command}
```

`nox -s bench` builds one environment per SDK major from `benchmarks/requirements-mcp1.txt` and
`benchmarks/requirements-mcp2.txt` (the project plus the peers; never runtime dependencies),
runs `python -m benchmarks run --profile full` in each, then merges them with
`python -m benchmarks report`. Outputs: `benchmarks/results/bench.json` (every figure, medians,
spreads, ratios, targets), `benchmarks/results/bench.md` (the tables) and this page. A smoke run
with tiny sizes (`tests/test_bench_smoke.py`) is part of the default test run.

## What is measured

1. **Plain-call overhead**: `call_tool(mode="plain")` and `mode="auto"` against the raw SDK
   `session.call_tool` on the same session and server (tool `echo`, not task-capable), in memory
   and over streamable HTTP (uvicorn, 127.0.0.1, server in its own process). The SDK's own
   server without tasks is shown as the baseline for our server's cost. The variants take turns
   call by call (the order rotated every turn), so each round's ratio compares calls made
   microseconds apart; the spread is over rounds of 100 turns.
2. **Completion-to-result latency**: the tool stamps `time.monotonic()` (CLOCK_MONOTONIC, shared
   by every process on Linux) as it returns; the caller subtracts it from its clock when
   `call_tool(mode="task")` returns. The tool sleeps a random 20-300 ms first, so completions fall
   at random points of the poll schedule. Our server's default poll hint; the peers' defaults.
3. **Throughput**: tool `job` returning at once, sequential (one caller) and concurrent (20
   callers: 20 sessions over HTTP, 20 concurrent calls on the one session over stdio), task calls
   next to plain calls of the same tool on the same server. A task needs at least two round trips,
   so the ratio to half the plain rate is the practical ceiling.
4. **Capacity**: 1,000 and 10,000 tasks whose tool waits on an event, started through 20 HTTP
   sessions into one server process; checked truly concurrent (the server counts runs inside the
   tool); RSS (VmRSS from /proc/self/status in the server process, after `gc.collect()`) before,
   in flight and after the tasks ended and expired (a short TTL floor, `ServerTasks(ttl_floor_ms=...)`);
   `tasks/get` latency under that load. Ours runs with its defaults (the inline grace on: a held
   task becomes a task when its grace runs out) except the per-owner active-task limit, raised
   above the size (unauthenticated 2026-07-28 callers share one owner). The peers' Docket worker
   concurrency is set to the number of tasks (their default is 10, which would queue them);
   FastMCP 3 is measured up to 1,000 tasks (≈ 0.4 MiB each).
5. **Task stores**: our server on `ServerTasks(store="memory:")`, on `"sqlite:///..."` (a file in a
   temporary folder; its filesystem is named under the table) and on `"redis://..."` (a
   `redis-server` the bench starts on a free 127.0.0.1 port and stops at the end; the Redis rows
   are skipped, with that reason in the notes, when `redis-server` is not on PATH: `nox -s bench`
   installs Debian's package as root, like the test sessions). The store is the only switch: same
   server, tools, client, transport and dialect, each store measured once per round in a rotated
   order, ratios to memory taken within a round. Task throughput with one caller and 50
   concurrent callers (one session), in memory and over streamable HTTP; `tasks/get` latency
   (status reads of completed tasks through our client) on stores holding 100 and 10,000 tasks,
   pre-filled through the store's own `create` (completed tasks of another owner) plus 20 tasks
   run through the client, the two sizes read in alternation.
6. **The mechanisms of issue 13, each off and on** (`benchmarks/mechanisms.py`): one entry per
   mechanism maps it to the keywords that turn it off: inline grace `ServerTasks(inline_grace_s=0)`,
   adaptive hints `ServerTasks(poll_policy=PollPolicy.proportional())`, push `ServerTasks(push=False)`
   with `session_kwargs(push=False)`, and the run's detachment from its request (an internal switch
   set in the server process, for the bench only). "All on" and each mechanism off alone run on the
   same server, client and transport (stdio, our server process): a quick tool (`job` returning at
   once) through `call_tool(mode="auto")` next to the raw SDK `session.call_tool` on a bare session
   (per-call µs over raw, calls/s ratio), and the extra time past the tool's run (caller's clock
   when it holds the result minus the tool's stamp as it returned) for tools of 0-10 s, sampled
   sparsely (a few concurrent calls per length, lengths spread by up to 15 %), with the requests our
   client writes per call counted on its write stream; FastMCP 4 + fastmcp-tasks on its defaults
   next to it. The chart `benchmarks-extra-time.svg` (matplotlib, bench environment only) draws
   those points. The detachment is measured by memory: held tasks with it off and on (capacity
   rows, column "mechanisms"). A keyword missing from the checkout is refused as an error naming it,
   never skipped.

## Machine and versions

{machine}

## Figures

{tables}
"""


def render_docs(document: Mapping[str, Any]) -> str:
    text = DOCS_HEADER.format(
        command=document["command"],
        machine=_machine(document),
        tables=render_markdown(document).replace("### ", "### "),
    )
    if ANALYSIS_PATH.exists():
        text += "\n" + ANALYSIS_PATH.read_text(encoding="utf-8")
    return text


def write_outputs(document: Mapping[str, Any], out_dir: Path, docs_path: Path | None) -> dict[str, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"json": out_dir / "bench.json", "markdown": out_dir / "bench.md"}
    paths["json"].write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    paths["markdown"].write_text(render_markdown(document), encoding="utf-8")
    if docs_path is not None:
        docs_path.parent.mkdir(parents=True, exist_ok=True)
        docs_path.write_text(render_docs(document), encoding="utf-8")
        paths["docs"] = docs_path
        chart = write_chart(document["rows"], docs_path.parent / CHART_NAME)
        if chart is not None:
            paths["chart"] = chart
    return paths


def command_line() -> str:
    return " ".join([Path(sys.executable).name, *sys.argv])
