"""Cross-major pairs in the test suite: every scenario of :mod:`.crossmajor`, one test per cell.

This interpreter is the client. ``MCP_TASKS_COMPAT_PEER_PYTHON`` names the python of another
virtual environment (normally the other major; nox's ``tests`` session builds one) to serve from.
The rows: this client against a server on this interpreter (always) and against a server on the
peer (skipped, with the reason, when no peer is named), over stdio and streamable HTTP, and on
2.x <-> 2.x in both dialects. The other direction is the peer's own session: nox pairs 1.23.0 with
2.0.0 and 1.30.0 with 2.3.0, so the four sessions together run 1.x -> 1.x, 1.x -> 2.x, 2.x -> 1.x
and 2.x -> 2.x. A cell that does not apply (:mod:`.crossmajor` says why and what it checked
instead) is reported as a skip.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import sys
from pathlib import Path

import pytest

from .crossmajor import (
    BEGIN_MARKER,
    DOCS,
    END_MARKER,
    SCENARIOS,
    Cell,
    Row,
    mcp_version_of,
    render_markdown,
    row_dialects,
    run_matrix,
    write_docs,
)

PEER_ENV = "MCP_TASKS_COMPAT_PEER_PYTHON"
TRANSPORTS = ("stdio", "http")

THIS_PYTHON = sys.executable
THIS_MCP = importlib.metadata.version("mcp")
PEER_PYTHON = os.environ.get(PEER_ENV) or None


def _peer_mcp() -> str | None:
    if PEER_PYTHON is None:
        return None
    try:
        return mcp_version_of(PEER_PYTHON)
    except Exception as error:  # a named peer that does not run is a broken setup, not a skip
        raise RuntimeError(f"{PEER_ENV}={PEER_PYTHON}: cannot read its mcp version: {error}") from error


PEER_MCP = _peer_mcp()


def _keys(client: str, server: str) -> list[str]:
    return [
        Row(client, server, transport, dialect).key
        for transport in TRANSPORTS
        for dialect in row_dialects(client, server)
    ]


LOCAL_KEYS = _keys(THIS_MCP, THIS_MCP)
PEER_KEYS = [] if PEER_MCP is None else _keys(THIS_MCP, PEER_MCP)


@pytest.fixture(scope="module")
def matrix() -> dict[str, Row]:
    """Every row, run once for the module (the rows run concurrently)."""
    servers = [THIS_PYTHON] if PEER_PYTHON is None else [THIS_PYTHON, PEER_PYTHON]
    return {row.key: row for row in run_matrix(servers, TRANSPORTS)}


def _check(matrix: dict[str, Row], key: str, scenario: str) -> None:
    assert key in matrix, f"row {key!r} did not run; rows: {sorted(matrix)}"
    cell = matrix[key].cells[scenario]
    if cell.outcome == "n/a":
        pytest.skip(f"not applicable: {cell.detail}")
    assert cell.outcome == "pass", f"{key}, {scenario}: {cell.detail}"


SCENARIO_IDS = [scenario.id for scenario in SCENARIOS]


@pytest.mark.parametrize("scenario", SCENARIO_IDS)
@pytest.mark.parametrize("key", LOCAL_KEYS)
def test_same_major(matrix: dict[str, Row], key: str, scenario: str) -> None:
    _check(matrix, key, scenario)


if PEER_KEYS:

    @pytest.mark.parametrize("scenario", SCENARIO_IDS)
    @pytest.mark.parametrize("key", PEER_KEYS)
    def test_cross_major(matrix: dict[str, Row], key: str, scenario: str) -> None:
        _check(matrix, key, scenario)

else:

    def test_cross_major() -> None:
        pytest.skip(
            f"no peer environment: set {PEER_ENV} to the python of a virtual environment with the other "
            "mcp major and this project installed (nox's tests session does)"
        )


# --- the generated page ---------------------------------------------------------------------------


def test_the_generated_page_has_every_scenario_every_kind_of_pair_and_no_failure() -> None:
    text = DOCS.read_text(encoding="utf-8")
    assert text.count(BEGIN_MARKER) == 1
    assert text.count(END_MARKER) == 1
    section = text.split(BEGIN_MARKER)[1].split(END_MARKER)[0]
    lines = section.splitlines()
    header = next(line for line in lines if line.startswith("| client |"))
    titles = " | ".join(scenario.title for scenario in SCENARIOS)
    assert header == f"| client | server | transport | dialect | {titles} |", (
        "regenerate: nox -s interop_docs"
    )
    rows = [line.split(" | ") for line in lines if line.startswith("| mcp ")]
    kinds = {(r[0][6], r[1][4], r[2], r[3]) for r in rows}  # majors of client and server, transport, dialect
    for client, server in (("1", "1"), ("1", "2"), ("2", "1")):
        assert {(client, server, t, "2025-11-25") for t in TRANSPORTS} <= kinds
    assert {("2", "2", t, d) for t in TRANSPORTS for d in ("2025-11-25", "2026-07-28")} <= kinds
    assert re.search(r"^\d+ rows: \d+ pass, \d+ n/a, 0 fail\.$", section, flags=re.MULTILINE)
    assert "**fail**" not in section


def test_render_numbers_each_reason_once_and_marks_failures() -> None:
    def row(client: str, outcome: str, detail: str) -> Row:
        cells = {s.id: Cell("pass", "ok") for s in SCENARIOS}
        cells["resume_other"] = Cell(outcome, detail)  # type: ignore[arg-type]
        return Row(client, "2.3.0", "stdio", "2025-11-25", cells)

    section = render_markdown(
        [
            row("1.30.0", "n/a", "same reason"),
            row("2.3.0", "n/a", "same reason"),
            row("2.0.0", "fail", "broke"),
        ],
        "the command",
    )
    assert section.count("n/a [1]") == 2
    assert "**fail** [2]" in section
    assert "1. same reason" in section
    assert "2. broke" in section
    assert "3 rows: 27 pass, 2 n/a, 1 fail." in section
    order = [line.split(" | ")[0] for line in section.splitlines() if line.startswith("| mcp ")]
    assert order == ["| mcp 1.30.0", "| mcp 2.0.0", "| mcp 2.3.0"]


def test_write_docs_replaces_only_the_marked_block(tmp_path: Path) -> None:
    page = tmp_path / "interop.md"
    page.write_text("# Interop\n\n## Cross-language\n\nkept\n", encoding="utf-8")
    write_docs("## Cross-major (generated)\n\nfirst\n", page)
    page.write_text(page.read_text(encoding="utf-8") + "\n### Added after the block\n\nalso kept\n")
    write_docs("## Cross-major (generated)\n\nsecond\n", page)
    text = page.read_text(encoding="utf-8")
    assert text.startswith("# Interop\n\n## Cross-language\n\nkept\n\n")
    assert text.endswith(f"second\n{END_MARKER}\n\n### Added after the block\n\nalso kept\n")
    assert "second" in text
    assert "first" not in text
    assert text.count(BEGIN_MARKER) == 1
