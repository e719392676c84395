"""Run the official MCP conformance suite against the fixture server, one scenario at a time.

``nox -s conformance`` runs this with mcp 2.3.0 after ``npm ci`` here. It starts
``server.py`` (streamable HTTP, a free port on 127.0.0.1), runs every Tasks scenario and every
generic 2026-07-28 server scenario of the pinned suite with the Node 22 that ``package.json``
pins, keeps the suite's JSON under ``results/`` (git-ignored), prints a table, and exits 1 if any
check failed (warnings and the suite's own skips do not fail the run)::

    python tests/conformance/run.py                          # everything
    python tests/conformance/run.py --scenario tasks-lifecycle --scenario caching
    python tests/conformance/run.py --url http://127.0.0.1:8000/mcp   # a server already running
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_tasks_compat.testing import HttpServerProcess

__all__ = ["ScenarioOutcome", "main", "run_scenario", "scenario_names"]

HERE = Path(__file__).resolve().parent
NODE = HERE / "node_modules" / "node" / "bin" / "node"  # the npm package `node` (22.x), not the machine's
SUITE = HERE / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
RESULTS = HERE / "results"
SERVER = HERE / "server.py"
SPEC_VERSION = "2026-07-28"
# A scenario that hangs is the suite's timeout (30 s per scenario) plus this margin, then killed.
SCENARIO_DEADLINE_S = 180


@dataclass
class ScenarioOutcome:
    """One scenario's checks, as the suite wrote them to ``checks.json``."""

    scenario: str
    checks: list[dict[str, Any]] = field(default_factory=lambda: [])
    exit_code: int = 0
    output: str = ""

    def count(self, status: str) -> int:
        return sum(1 for check in self.checks if check.get("status") == status)

    @property
    def failed(self) -> bool:
        """A failed check, or no checks at all (the suite could not run the scenario)."""
        return self.count("FAILURE") > 0 or not self.checks


def suite_command(*args: str) -> list[str]:
    return [str(NODE), str(SUITE), *args]


def scenario_names() -> tuple[list[str], list[str]]:
    """The suite's Tasks scenarios and its generic 2026-07-28 server scenarios, in the suite's order."""

    def listed(*args: str) -> list[str]:
        out = subprocess.run(
            suite_command("list", "--server", *args), check=True, capture_output=True, text=True
        )
        return [line.split()[1] for line in out.stdout.splitlines() if line.startswith("  - ")]

    tasks = [name for name in listed() if name.startswith("tasks-")]
    generic = [name for name in listed("--spec-version", SPEC_VERSION) if name not in tasks]
    return tasks, generic


def run_scenario(url: str, scenario: str) -> ScenarioOutcome:
    """Run one scenario; its ``checks.json`` replaces any earlier result of the same scenario."""
    RESULTS.mkdir(exist_ok=True)
    for old in RESULTS.glob(f"server-{scenario}-2*"):
        shutil.rmtree(old)
    command = suite_command("server", "--url", url, "--scenario", scenario, "-o", str(RESULTS))
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=SCENARIO_DEADLINE_S)
        exit_code, output = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as expired:
        exit_code, output = -1, f"killed after {SCENARIO_DEADLINE_S} s: {expired.stdout!r}"
    outcome = ScenarioOutcome(scenario, exit_code=exit_code, output=output)
    written = sorted(RESULTS.glob(f"server-{scenario}-2*/checks.json"))
    if written:
        outcome.checks = json.loads(written[-1].read_text(encoding="utf-8"))
    return outcome


def table(outcomes: list[ScenarioOutcome]) -> str:
    statuses = ("SUCCESS", "FAILURE", "WARNING", "SKIPPED")
    rows: list[tuple[str, ...]] = [("scenario", "passed", "failed", "warnings", "skipped", "checks")]
    totals: Counter[str] = Counter()
    for outcome in outcomes:
        counts = {status: outcome.count(status) for status in statuses}
        totals.update(counts)
        totals["checks"] += len(outcome.checks)
        rows.append((outcome.scenario, *(str(counts[s]) for s in statuses), str(len(outcome.checks))))
    rows.append(("total", *(str(totals[s]) for s in statuses), str(totals["checks"])))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "  ".join("-" * width for width in widths))
    lines.insert(len(lines) - 1, lines[1])
    return "\n".join(lines)


def failures(outcomes: list[ScenarioOutcome]) -> str:
    lines: list[str] = []
    for outcome in outcomes:
        if not outcome.checks:
            lines.append(
                f"{outcome.scenario}: no checks written (exit {outcome.exit_code})\n{outcome.output}"
            )
        for check in outcome.checks:
            if check.get("status") == "FAILURE":
                lines.append(f"{outcome.scenario} / {check.get('id')}: {check.get('errorMessage')}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--scenario", action="append", help="only this scenario (repeatable)")
    parser.add_argument("--url", help="test this server instead of starting server.py")
    parser.add_argument(
        "--plain-handoff-s", help="start server.py with the plain hand-off on (it must change no check)"
    )
    args = parser.parse_args(argv)
    if not NODE.exists() or not SUITE.exists():
        print(f"the suite is not installed: run `npm ci` in {HERE}", file=sys.stderr)
        return 2
    tasks, generic = scenario_names()
    chosen: list[str] = args.scenario or [*tasks, *generic]
    unknown = sorted(set(chosen) - set(tasks) - set(generic))
    if unknown:
        print(f"not a Tasks or generic {SPEC_VERSION} server scenario: {', '.join(unknown)}", file=sys.stderr)
        return 2
    version = subprocess.run(suite_command("--version"), check=True, capture_output=True, text=True).stdout
    node_version = subprocess.run([str(NODE), "--version"], check=True, capture_output=True, text=True).stdout
    print(f"@modelcontextprotocol/conformance {version.strip()} on node {node_version.strip()}", flush=True)

    def run_all(url: str) -> list[ScenarioOutcome]:
        outcomes: list[ScenarioOutcome] = []
        for scenario in chosen:
            outcome = run_scenario(url, scenario)
            verdict = "FAILED" if outcome.failed else "ok"
            print(f"  {scenario}: {outcome.count('SUCCESS')}/{len(outcome.checks)} {verdict}", flush=True)
            outcomes.append(outcome)
        return outcomes

    if args.url:
        outcomes = run_all(args.url)
    else:
        handoff = ["--plain-handoff-s", args.plain_handoff_s] if args.plain_handoff_s else []
        server = HttpServerProcess([sys.executable, str(SERVER), *handoff])
        with server as url:
            outcomes = run_all(url)
        if any(outcome.failed for outcome in outcomes):
            print("server stderr (last 40 lines):\n" + "\n".join(server.stderr_lines[-40:]), file=sys.stderr)
    print()
    print(table(outcomes))
    summary = {outcome.scenario: outcome.checks for outcome in outcomes}
    (RESULTS / "summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    failed = failures(outcomes)
    if failed:
        print("\nfailed checks:\n" + failed)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
