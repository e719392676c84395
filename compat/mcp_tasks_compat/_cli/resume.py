"""``resume --journal PATH``: follow every pending task of a client journal to its end, as ``call`` would.

Each pending entry is followed by ``call``'s own code (:func:`.call.run_call` with the entry), on a
session to the entry's endpoint (its URL, or its command line run in its folder) unless a target
is given; so each outcome is printed as ``call`` prints it, and the exit code is the worst of
theirs (:data:`SEVERITY`).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Final

from .._client.journal import journal_location
from .._journal import TaskJournal
from .call import CallOptions, run_call
from .common import EXIT_CANCELLED, EXIT_OK, EXIT_TOOL_ERROR, EXIT_USAGE, CliError
from .connect import Target

__all__ = ["SEVERITY", "ResumeOptions", "run_resume"]

SEVERITY: Final = (EXIT_OK, EXIT_TOOL_ERROR, EXIT_CANCELLED, EXIT_USAGE)
"""Exit codes from best to worst: an entry that could not be followed (2: unreachable, refused,
another endpoint; it stays pending) outweighs a cancelled or timed-out one (3), which outweighs a
task that failed or is gone (1)."""


@dataclass(frozen=True)
class ResumeOptions:
    journal: str
    target: Target | None
    """``--url`` / ``-- COMMAND``: where to follow the entries instead of their own endpoints."""
    headers: tuple[tuple[str, str], ...]
    env: tuple[tuple[str, str], ...]
    timeout: float | None
    as_json: bool
    connect_timeout: float
    verbose: bool


def worst(codes: list[int]) -> int:
    """The exit code of several outcomes: the worst by :data:`SEVERITY` (0 for none)."""
    return max(codes, key=lambda code: SEVERITY.index(code) if code in SEVERITY else len(SEVERITY), default=0)


def run_resume(options: ResumeOptions) -> int:
    """``resume``: each pending entry followed to its end, one ``call`` report each."""
    if not journal_location(options.journal).is_file():  # a typo would make an empty journal
        raise CliError(f"no task journal at {options.journal!r} (call --journal PATH makes one)")
    journal = TaskJournal(options.journal)
    try:
        entries = journal.pending()
        if not entries:
            print(f"mcp-tasks-compat: no pending tasks in {journal.path}", file=sys.stderr)
            return EXIT_OK
        codes: list[int] = []
        for number, entry in enumerate(entries, start=1):
            target = options.target or Target.at(entry.endpoint, headers=options.headers, env=options.env)
            if not options.as_json:
                print(
                    f"[{number}/{len(entries)}] {entry.tool or 'task'} at {entry.endpoint.describe()}",
                    file=sys.stderr,
                )
            call = CallOptions(
                target=target,
                tool=entry.tool or "",
                arguments=None,
                mode="auto",
                timeout=options.timeout,
                cancel_after=None,
                as_json=options.as_json,
                connect_timeout=options.connect_timeout,
                verbose=options.verbose,
                resume=entry.task_id,
                journal=journal,
                entry=entry,
            )
            codes.append(run_call(call))
        return worst(codes)
    finally:
        journal.close()
