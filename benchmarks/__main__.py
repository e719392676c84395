"""``python -m benchmarks run|report``: measure in this environment, or merge runs into the outputs.

python -m benchmarks run --profile full              # -> benchmarks/results/bench-mcp<major>.json
python -m benchmarks report benchmarks/results/bench-mcp*.json --docs docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio

from . import report, servers
from .harness import Bench
from .sections import NAMES, PROFILES, SECTIONS, profile_sizes

__all__ = ["main", "run_bench"]

RESULTS_DIR = Path(__file__).resolve().parent / "results"
DEFAULT_COMMAND = "nox -s bench"


async def run_bench(
    profile: str = "full",
    *,
    only: Sequence[str] | None = None,
    kinds: Sequence[str] | None = None,
    out: Path | None = None,
) -> dict[str, Any]:
    """Run the sections of ``profile`` in this environment; the run as one JSON-able dict.

    With ``out``, the run so far is written there after every measurement (a long run that is
    stopped keeps what it measured).
    """
    available = servers.available_kinds()
    chosen = [kind for kind in (kinds or available) if kind in available]
    bench = Bench(profile_name=profile, kinds=chosen, only=frozenset(only) if only else None)
    meta: dict[str, Any] = {
        "major": bench.major,
        "profile": profile,
        "profile_sizes": profile_sizes(profile),
        "kinds": chosen,
        "sections": sorted(only or NAMES),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "loadavg_start": report.loadavg(),
        "environment": report.environment(),
    }
    started = time.perf_counter()

    def snapshot() -> dict[str, Any]:
        return {
            **meta,
            "duration_s": round(time.perf_counter() - started, 1),
            "loadavg_end": report.loadavg(),
            "rows": bench.rows,
            "errors": bench.errors,
            "notes": bench.notes,
        }

    def checkpoint() -> None:
        if out is not None:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(snapshot(), indent=2) + "\n", encoding="utf-8")

    bench.checkpoint = checkpoint
    await run_sections(bench)
    checkpoint()
    return snapshot()


async def run_sections(bench: Bench) -> None:
    """The sections asked for, in order; a note before the first that measures tasks if ours is not."""
    noted = False
    for section in SECTIONS:
        if section.measures_tasks and not noted:
            noted = True
            if not bench.ours:
                bench.notes.append(
                    "ours not measured (not installed, or not in --kinds): task sections ran for peers only"
                )
        if bench.wanted(section.name):
            await section.run(bench)


def _run(args: argparse.Namespace) -> int:
    major = servers.mcp_major()
    out = Path(args.out or RESULTS_DIR / f"bench-mcp{major}.json")
    run = anyio.run(lambda: run_bench(args.profile, only=args.only, kinds=args.kinds, out=out))
    print(f"wrote {out}", file=sys.stderr)
    document = report.merge([run], command=args.command)
    print(report.render_markdown(document))
    return 1 if run["errors"] and args.strict else 0


def _report(args: argparse.Namespace) -> int:
    runs = [json.loads(Path(path).read_text(encoding="utf-8")) for path in args.inputs]
    document = report.merge(runs, command=args.command)
    paths = report.write_outputs(document, Path(args.out_dir), Path(args.docs) if args.docs else None)
    print(report.render_markdown(document))
    for name, path in paths.items():
        print(f"wrote {name}: {path}", file=sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks")
    sub = parser.add_subparsers(dest="verb", required=True)
    run = sub.add_parser("run", help="measure in this environment")
    run.add_argument("--profile", choices=sorted(PROFILES), default="full")
    run.add_argument("--only", nargs="*", choices=NAMES, help="run only these sections")
    run.add_argument("--kinds", nargs="*", choices=servers.KINDS, help="only these servers")
    run.add_argument("--out", help="where to write this run's JSON (default results/bench-mcp<major>.json)")
    run.add_argument("--command", default=DEFAULT_COMMAND, help="the command to quote in the outputs")
    run.add_argument("--strict", action="store_true", help="exit 1 when a measurement failed")
    merge = sub.add_parser("report", help="merge run JSONs into bench.json, bench.md and the docs page")
    merge.add_argument("inputs", nargs="+")
    merge.add_argument("--out-dir", default=str(RESULTS_DIR))
    merge.add_argument("--docs", default=None, help="also write this docs page (e.g. docs/benchmarks.md)")
    merge.add_argument("--command", default=DEFAULT_COMMAND)
    args = parser.parse_args(argv)
    return _run(args) if args.verb == "run" else _report(args)


if __name__ == "__main__":
    sys.exit(main())
