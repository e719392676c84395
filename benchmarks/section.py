"""What a section of the bench is (:class:`Section`), and the pieces its targets and tables are made of.

A section is one module of :mod:`benchmarks.sections`: its part of every profile (its sizes), its
measurement (rows added to the run), its targets, its tables and the paragraph of
docs/benchmarks.md that says what it measures. The run and the report only go through this type,
so a section is added, or changed, in its own module.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from .harness import Bench

__all__ = ["Row", "Section", "find", "server_name", "spread", "table", "target"]

Row = Mapping[str, Any]
ProfileT = TypeVar("ProfileT")


@dataclass(frozen=True)
class Section(Generic[ProfileT]):
    """One section: what it measures, at which sizes, and how its figures are judged and shown."""

    name: str  # the rows' ``section``, the ``--only`` choice, the prefix of its keys in ``profile_sizes``
    profiles: Mapping[str, ProfileT]  # its part of each profile, by the profile's name (a frozen dataclass)
    measure: Callable[[Bench, ProfileT], Awaitable[None]]  # adds rows (and notes) to the run
    targets: Callable[[Sequence[Row]], list[dict[str, Any]]]  # of the merged rows of every run
    tables: Callable[[Sequence[Row]], list[str]]  # its heading and tables, as markdown parts
    described: str  # its numbered item of "What is measured" in docs/benchmarks.md
    measures_tasks: bool = True  # the run notes, before the first such section, when ours is not measured
    chart: Callable[[Sequence[Row], Path], Path | None] | None = None  # draws into a folder

    async def run(self, bench: Bench) -> None:
        await self.measure(bench, self.profiles[bench.profile_name])

    def profile_sizes(self, profile_name: str) -> dict[str, Any]:
        """This section's part of a profile, each key prefixed with the section's name."""
        return {f"{self.name}_{key}": value for key, value in asdict(self.profiles[profile_name]).items()}

    @property
    def number(self) -> int:
        """The item number ``described`` starts with: the order of the items on the page."""
        return int(self.described.split(".", 1)[0])


# --- targets ---------------------------------------------------------------------------------------


def find(rows: Iterable[Row], **match: Any) -> list[Row]:
    return [row for row in rows if all(row.get(key) == value for key, value in match.items())]


def target(name: str, measured: float | None, limit: float, *, at_most: bool, detail: str) -> dict[str, Any]:
    met = None if measured is None else (measured <= limit if at_most else measured >= limit)
    return {
        "target": name,
        "limit": f"{'<=' if at_most else '>='} {limit:g}",
        "measured": measured,
        "met": met,
        "detail": detail,
    }


# --- markdown ----------------------------------------------------------------------------------------


def spread(stats: Mapping[str, Any] | None, low: str = "p10", high: str = "p90") -> str:
    if not stats or stats.get("median") is None:
        return "n/a"
    return f"{stats['median']:g} ({stats[low]:g}-{stats[high]:g})"


def table(header: Sequence[str], lines: Iterable[Sequence[Any]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join("n/a" if cell is None else str(cell) for cell in line) + " |" for line in lines]
    return "\n".join(out)


def server_name(kind: str) -> str:
    return {
        "sdk": "SDK server (no tasks)",
        "ours": "ours",
        "fastmcp4": "FastMCP 4 + fastmcp-tasks",
        "fastmcp3": "FastMCP 3 tasks",
    }.get(kind, kind)
