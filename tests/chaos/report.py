"""The chaos table, as text for a terminal and as markdown for docs/reliability.md."""

from __future__ import annotations

from collections.abc import Sequence

from .scenarios import Figures

__all__ = ["HEADERS", "broken", "markdown", "rows", "text"]

HEADERS = (
    "mcp",
    "scenario",
    "store",
    "tasks",
    "runs",
    "overlaps",
    "max overlap s",
    "stale",
    "lost",
    "stuck",
    "scenario's own figures",
    "holds",
)


def rows(results: Sequence[Figures]) -> list[tuple[str, ...]]:
    return [
        (
            figures.mcp,
            figures.scenario,
            figures.store,
            str(figures.tasks),
            str(figures.runs),
            str(figures.overlaps),
            f"{figures.max_overlap_s:.2f}",
            str(figures.stale),
            str(figures.lost),
            str(figures.stuck),
            "; ".join(f"{name}: {value}" for name, value in figures.details.items()),
            "yes" if figures.holds else "NO",
        )
        for figures in results
    ]


def text(results: Sequence[Figures]) -> str:
    table = [HEADERS, *rows(results)]
    widths = [max(len(row[column]) for row in table) for column in range(len(HEADERS))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) for row in table]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(line.rstrip() for line in lines)


def markdown(results: Sequence[Figures]) -> str:
    lines = ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    lines += ["| " + " | ".join(row) + " |" for row in rows(results)]
    return "\n".join(lines)


def broken(results: Sequence[Figures]) -> list[str]:
    """Each broken guarantee, naming its scenario."""
    return [f"{figures.scenario} ({figures.store}): {what}" for figures in results for what in figures.broken]
