"""docs/conformance.md's tables of the spec's rules stay true to the code: every row names at least
one test, and every test, module, class and function a row names exists."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "conformance.md"
PACKAGE = ROOT / "compat" / "mcp_tasks_compat"
SECTION = "## The rules, one by one"
TABLES = {"X": "The Tasks extension (2026-07-28)", "L": "2025-11-25 tasks"}
"""Row-id prefix: the table's heading (both dialects, every row of each)."""

REFERENCE = re.compile(r"`([\w./]+\.py)::([\w.]+)`")


@dataclass(frozen=True)
class Row:
    row_id: str
    enforced: list[tuple[str, str]]
    tests: list[tuple[str, str]]


def _cells(line: str) -> list[str]:
    """A table line's cells (no cell of these tables holds a ``|``)."""
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def rows() -> list[Row]:
    text = PAGE.read_text(encoding="utf-8")
    assert SECTION in text, f"{PAGE.name} has no section {SECTION!r}"
    found: list[Row] = []
    for line in text.split(SECTION, 1)[1].splitlines():
        if not line.startswith("|"):
            continue
        cells = _cells(line)
        if cells[0] in ("#", "") or set(cells[0]) <= {"-", ":"}:
            continue  # the heading and the separator
        assert len(cells) == 5, f"a row needs 5 cells (#, rule, side, enforced in, tests): {line}"
        row_id, _rule, side, enforced, tests = cells
        assert side in ("server", "client", "both"), f"{row_id}: side {side!r}"
        found.append(
            Row(
                row_id,
                REFERENCE.findall(enforced),
                [ref for ref in REFERENCE.findall(tests) if ref[0].startswith("tests/")],
            )
        )
    return found


ROWS = rows()


def _defines(source: str, name: str) -> bool:
    """Whether ``source`` defines ``name`` at any depth: a function, class, or assigned name."""
    pattern = rf"^\s*(?:(?:async\s+)?def|class)\s+{re.escape(name)}\b|^\s*{re.escape(name)}\s*(?::[^=]*)?="
    return re.search(pattern, source, flags=re.MULTILINE) is not None


def test_both_dialects_have_their_table_and_ids_are_unique() -> None:
    text = PAGE.read_text(encoding="utf-8").split(SECTION, 1)[1]
    for heading in TABLES.values():
        assert f"### {heading}" in text
    ids = [row.row_id for row in ROWS]
    assert len(ids) == len(set(ids)), "a row id is used twice"
    for prefix in TABLES:
        numbered = [row_id for row_id in ids if row_id.startswith(prefix)]
        assert numbered == [f"{prefix}{n}" for n in range(1, len(numbered) + 1)], numbered
    assert all(row_id[0] in TABLES for row_id in ids), ids


@pytest.mark.parametrize("row", ROWS, ids=[row.row_id for row in ROWS])
def test_every_row_names_tests_that_exist(row: Row) -> None:
    assert row.tests, f"{row.row_id} names no test (tests/<file>.py::<test>)"
    for path, name in row.tests:
        file = ROOT / path
        assert file.is_file(), f"{row.row_id}: no file {path}"
        source = file.read_text(encoding="utf-8")
        assert re.search(rf"^(?:async\s+)?def {re.escape(name)}\(", source, flags=re.MULTILINE), (
            f"{row.row_id}: {path} defines no test {name}"
        )


@pytest.mark.parametrize("row", ROWS, ids=[row.row_id for row in ROWS])
def test_what_enforces_a_row_exists(row: Row) -> None:
    for path, dotted in row.enforced:
        file = PACKAGE / path
        assert file.is_file(), f"{row.row_id}: no module compat/mcp_tasks_compat/{path}"
        source = file.read_text(encoding="utf-8")
        for name in dotted.split("."):
            assert _defines(source, name), f"{row.row_id}: {path} defines no {name}"


def test_the_checks_would_see_a_missing_test_or_module(tmp_path: Path) -> None:
    """The parser finds references in the cells as written, so a typo fails a row."""
    line = "| X9 | a rule | server | `_server/nope.py::Missing` | `tests/nope.py::test_missing` |"
    enforced, tests = _cells(line)[3], _cells(line)[4]
    assert REFERENCE.findall(enforced) == [("_server/nope.py", "Missing")]
    assert REFERENCE.findall(tests) == [("tests/nope.py", "test_missing")]
    assert not (ROOT / "tests" / "nope.py").exists()
    assert not _defines("def test_other():\n    pass\n", "test_missing")
    assert _defines("class Outer:\n    async def inner(self):\n        pass\n", "inner")
    assert _defines("ACK: Final = {}\n", "ACK")
