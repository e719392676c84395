"""The package keeps the size ratchet of ``tools/structure_figures.py``, and has no import cycle.

Sizes are a ratchet, not a ceiling (issue 41): ``tools/size_ratchet.json`` records each module,
class and function longer than its target at its length, its own limit. A listed unit may not
grow past its record; one that shrank (or went) fails until the file is lowered with
``python -m tools.structure_figures --ratchet``, so the limits only go down; a unit not listed is
held to the bound for new code (``MAX_*``), and one past its target is recorded by the same
command. An import cycle means two layers are one. The targets and bounds are the tool's
constants (it prints them beside the figures), so the docs quote one number and point here. The
sources are read with ``ast``: nothing of the package is imported.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from tools import structure_figures
from tools.structure_figures import (
    MAX_FUNCTION_LINES,
    MAX_IMPORT_CYCLES,
    MAX_MODULE_LINES,
    RATCHET,
    RATCHET_COMMAND,
    TARGET_FUNCTION_LINES,
    listed,
    over,
    ratchet_of,
    ratcheted,
    read_records,
    write_records,
)

FIGURES = structure_figures.figures()
RECORDS = read_records()
RATCHET_NOW = ratchet_of(RECORDS, FIGURES)


def test_the_walk_finds_the_package_units() -> None:
    """The figures are of the package (so empty lists cannot pass the checks below)."""
    assert "mcp_tasks_compat._engine.engine.TaskEngine" in {name for _, name in FIGURES.classes}
    assert "mcp_tasks_compat._engine.engine:TaskEngine.create" in {name for _, name in FIGURES.functions}
    assert {"_engine/engine.py", "core/_model.py"} <= {name for _, name in FIGURES.modules}
    assert all(RECORDS[kind] for kind in structure_figures.KINDS), "the ratchet file lists nothing"


def test_no_listed_unit_grew_past_its_record() -> None:
    """Shorten it, or split it along a concern: ``--ratchet`` never raises a record."""
    grew = {kind: names for kind, names in RATCHET_NOW.grew.items() if names}
    assert grew == {}, "; ".join(RATCHET_NOW.failures())


def test_no_unit_outside_the_file_is_over_the_bound_for_new_code() -> None:
    over_bound = {kind: names for kind, names in RATCHET_NOW.over.items() if names}
    assert over_bound == {}, "; ".join(RATCHET_NOW.failures())


def test_the_ratchet_file_is_up_to_date() -> None:
    """A record above its unit's length (or of a unit gone, or now at its target) is lowered, and a
    unit past its target is recorded, by the command the failure names."""
    stale = {kind: names for kind, names in RATCHET_NOW.stale.items() if names}
    assert stale == {}, f"run {RATCHET_COMMAND}: " + "; ".join(RATCHET_NOW.failures())


def test_the_ratchet_file_is_as_the_command_writes_it(tmp_path: Path) -> None:
    """So a hand edit shows, and the file reads back as it was written."""
    rewritten = tmp_path / RATCHET.name
    write_records(RECORDS, rewritten)
    assert rewritten.read_text(encoding="utf-8") == RATCHET.read_text(encoding="utf-8"), (
        f"{RATCHET.name} was edited by hand; run {RATCHET_COMMAND}"
    )
    assert read_records(rewritten) == RECORDS


def test_the_package_has_no_import_cycles() -> None:
    """Type-only imports included: a cycle behind ``if TYPE_CHECKING:`` is still a cycle."""
    assert len(FIGURES.cycles) <= MAX_IMPORT_CYCLES, f"import cycles: {FIGURES.cycles}"


def function_of(name: str, lines: int) -> str:
    """A module holding one function ``name`` of ``lines`` lines."""
    body = "".join(f"    x{i} = {i}\n" for i in range(lines - 1))
    return f"def {name}() -> None:\n{body}"


def test_the_tool_measures_what_it_is_given(tmp_path: Path) -> None:
    """On a package made here: qualified names, lengths from ``class``/``def`` to the last line,
    offenders named with their figures, and a cycle hidden behind ``TYPE_CHECKING`` found."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text(
        textwrap.dedent(
            """\
            from typing import TYPE_CHECKING

            if TYPE_CHECKING:
                from .b import B


            class A:
                def method(self) -> None:
                    def inner() -> None:
                        pass
            """
        )
    )
    (package / "b.py").write_text(f"from . import a\n\n\n{function_of('long', MAX_FUNCTION_LINES + 1)}")
    found = structure_figures.figures(package)
    assert (4, "pkg.a.A") in found.classes
    assert {(3, "pkg.a:A.method"), (2, "pkg.a:A.method.inner")} <= set(found.functions)
    too_long = over(found.functions, MAX_FUNCTION_LINES)
    assert too_long == [(MAX_FUNCTION_LINES + 1, "pkg.b:long")]
    assert listed(too_long) == f"pkg.b:long {MAX_FUNCTION_LINES + 1}"
    assert found.cycles == [["pkg.a", "pkg.b"]]
    assert over(found.modules, MAX_MODULE_LINES) == []


def test_the_ratchet_on_a_package_made_here(tmp_path: Path) -> None:
    """Recorded, a unit may not grow; shrunk or gone, its record must come down; a new unit past its
    target is recorded, one past the bound for new code fails; ``--ratchet`` never raises a record
    unless told to accept growth."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    target = TARGET_FUNCTION_LINES
    (package / "a.py").write_text(function_of("kept", target + 5) + "\n\n" + function_of("small", target))
    records = ratcheted({}, structure_figures.figures(package))
    assert records["functions"] == {"pkg.a:kept": target + 5}  # ``small`` is at its target
    assert ratchet_of(records, structure_figures.figures(package)).failures() == []

    (package / "a.py").write_text(function_of("kept", target + 7))
    (package / "b.py").write_text(
        function_of("new", target + 1) + "\n\n" + function_of("huge", MAX_FUNCTION_LINES + 1)
    )
    found = structure_figures.figures(package)
    ratchet = ratchet_of(records, found)
    assert ratchet.grew["functions"] == [f"pkg.a:kept {target + 7} (recorded {target + 5})"]
    assert ratchet.over["functions"] == [f"pkg.b:huge {MAX_FUNCTION_LINES + 1}"]
    assert ratchet.stale["functions"] == [f"pkg.b:new + {target + 1}"]
    rewritten = ratcheted(records, found)
    assert rewritten["functions"] == {"pkg.a:kept": target + 5, "pkg.b:new": target + 1}
    assert ratcheted(records, found, accept_growth=True)["functions"]["pkg.a:kept"] == target + 7

    (package / "a.py").write_text(function_of("kept", target + 2))
    (package / "b.py").unlink()
    found = structure_figures.figures(package)
    ratchet = ratchet_of(rewritten, found)
    assert ratchet.stale["functions"] == [
        f"pkg.a:kept {target + 5} -> {target + 2}",
        f"pkg.b:new {target + 1} -> gone",
    ]
    assert any(RATCHET_COMMAND in message for message in ratchet.failures())
    assert ratcheted(rewritten, found)["functions"] == {"pkg.a:kept": target + 2}
