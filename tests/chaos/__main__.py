"""``python -m tests.chaos``: play the chaos scenarios on real replicas and a real store; print the table.

    python -m tests.chaos                         # every scenario, issue 33's figures (nox -s chaos)
    python -m tests.chaos --tempo fast            # the default suite's short leases
    python -m tests.chaos --only pause --only outage --markdown

Exits 1 when a figure breaks a guarantee (each is named after the table), 0 otherwise.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import anyio

from mcp_tasks_compat._cli.common import quiet_sdk_logs
from mcp_tasks_compat._detect import sdk_info

from .report import broken, markdown, text
from .scenarios import FAST, FULL, MATRIX, SCENARIOS, Figures, play


def _leaf(error: BaseException) -> str:
    """The error itself, out of the task groups' exception groups it may come in."""
    while len(getattr(error, "exceptions", ())) == 1:
        error = error.exceptions[0]  # type: ignore[attr-defined]
    return f"{type(error).__name__}: {error}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.chaos", description=__doc__.splitlines()[0])
    parser.add_argument("--tempo", choices=("full", "fast"), default="full", help="default: full")
    parser.add_argument(
        "--only", action="append", choices=sorted(SCENARIOS), help="play only this scenario (repeatable)"
    )
    parser.add_argument("--store", action="append", choices=("redis", "sqlite"), help="only this store")
    parser.add_argument("--markdown", action="store_true", help="print the table as markdown too")
    parser.add_argument("--keep", metavar="DIR", help="keep each scenario's marks and store in DIR")
    parser.add_argument("-v", "--verbose", action="store_true", help="show the client SDK's logs")
    args = parser.parse_args(argv)
    quiet_sdk_logs(args.verbose)  # a replica killed or stopped under a session makes the SDK log tracebacks
    tempos = FULL if args.tempo == "full" else FAST
    chosen = [
        (name, store)
        for name, store in MATRIX
        if (not args.only or name in args.only) and (not args.store or store in args.store)
    ]
    print(f"chaos: mcp {sdk_info().mcp_version}, tempo {args.tempo}, {len(chosen)} scenarios", flush=True)
    results: list[Figures] = []
    with tempfile.TemporaryDirectory(prefix="chaos-") as scratch:
        base = Path(args.keep) if args.keep else Path(scratch)
        for name, store in chosen:
            folder = base / f"{name}-{store}"
            try:
                figures = anyio.run(lambda n=name, s=store, f=folder: play(n, s, f, tempos=tempos))
            except Exception as error:  # the scenario could not play its fault: say so, go on
                figures = Figures(name, store, broken=[f"did not finish: {_leaf(error)}"])
            results.append(figures)
            print(text([figures]).splitlines()[-1] + f"  ({figures.seconds:.0f} s)", flush=True)
    print()
    print(text(results))
    if args.markdown:
        print()
        print(markdown(results))
    failures = broken(results)
    if failures:
        print("\nbroken guarantees:")
        for failure in failures:
            print(f"  {failure}")
        return 1
    print("\nevery guarantee holds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
