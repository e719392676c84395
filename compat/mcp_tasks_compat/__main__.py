"""Command line: ``mcp-tasks-compat`` / ``python -m mcp_tasks_compat``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .errors import CompatError

__all__ = ["main"]

EXIT_OK = 0
EXIT_USAGE = 2


def _cmd_info(args: argparse.Namespace) -> int:
    from ._detect import sdk_info

    info = sdk_info()
    print(info.dumps() if args.json else info.render())
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcp-tasks-compat",
        description="Run long MCP tool calls as tasks on mcp 1.x and 2.x, in both task dialects.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    info = commands.add_parser("info", help="what the installed mcp SDK supports")
    info.add_argument("--json", action="store_true", help="print JSON instead of a table")
    info.set_defaults(handler=_cmd_info)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except CompatError as exc:
        print(f"mcp-tasks-compat: {exc.message}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
