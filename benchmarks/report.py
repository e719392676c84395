"""Turn bench runs (one JSON per SDK major) into one JSON, a markdown table and docs/benchmarks.md.

What belongs to no section lives here: the machine, merging runs, the page around the sections'
tables and paragraphs, the targets table and the errors and notes.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .section import table
from .sections import NAMES, SECTIONS, TARGETS_ORDER

__all__ = [
    "environment",
    "evaluate_targets",
    "loadavg",
    "merge",
    "render_docs",
    "render_markdown",
    "write_outputs",
]

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
    return NAMES.index(section) if section in NAMES else len(NAMES)


# --- targets and tables -------------------------------------------------------------------------------


def evaluate_targets(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The issues' targets, one line per (major, transport or dialect) where a row exists."""
    return [found for section in TARGETS_ORDER for found in section.targets(rows)]


def render_markdown(document: Mapping[str, Any]) -> str:
    """Every section's tables, the targets, then what went wrong and what was noted."""
    parts = [part for section in SECTIONS for part in section.tables(document["rows"])]
    parts.append("### Targets")
    parts.append(
        table(
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

{described}

## Machine and versions

{machine}

## Figures

{tables}
"""


def render_docs(document: Mapping[str, Any]) -> str:
    text = DOCS_HEADER.format(
        command=document["command"],
        described="\n".join(section.described for section in sorted(SECTIONS, key=lambda s: s.number)),
        machine=_machine(document),
        tables=render_markdown(document),
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
        for section in SECTIONS:  # one section draws a chart today: the mechanisms' extra time
            chart = None if section.chart is None else section.chart(document["rows"], docs_path.parent)
            if chart is not None:
                paths["chart"] = chart
    return paths


def command_line() -> str:
    return " ".join([Path(sys.executable).name, *sys.argv])
