"""The package keeps the unit limits of ``tools/structure_figures.py``: modules, classes, functions, cycles.

A unit past its limit holds more than one concern, and a newcomer reads it last; an import cycle
means two layers are one. The limits are the tool's constants (it prints them beside the
figures), so the docs quote one number and point here. The sources are read with ``ast``: nothing
of the package is imported.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from tools import structure_figures
from tools.structure_figures import (
    MAX_FUNCTION_LINES,
    MAX_IMPORT_CYCLES,
    MAX_MODULE_LINES,
    Figure,
    listed,
    over,
)

FIGURES = structure_figures.figures()


def test_the_walk_finds_the_package_units() -> None:
    """The figures are of the package (so empty lists cannot pass the limits below)."""
    assert "mcp_tasks_compat._engine.engine.TaskEngine" in {name for _, name in FIGURES.classes}
    assert "mcp_tasks_compat._engine.engine:TaskEngine.create" in {name for _, name in FIGURES.functions}
    assert {"_engine/engine.py", "core/_model.py"} <= {name for _, name in FIGURES.modules}


@pytest.mark.parametrize(
    ("kind", "found", "limit"), FIGURES.by_kind(), ids=[k for k, _, _ in FIGURES.by_kind()]
)
def test_no_unit_is_longer_than_its_limit(kind: str, found: list[Figure], limit: int) -> None:
    too_long = over(found, limit)
    assert too_long == [], f"{kind} over {limit} lines: {listed(too_long)}"


def test_the_package_has_no_import_cycles() -> None:
    """Type-only imports included: a cycle behind ``if TYPE_CHECKING:`` is still a cycle."""
    assert len(FIGURES.cycles) <= MAX_IMPORT_CYCLES, f"import cycles: {FIGURES.cycles}"


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
    long_body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    (package / "b.py").write_text(f"from . import a\n\n\ndef long() -> None:\n{long_body}")
    found = structure_figures.figures(package)
    assert (4, "pkg.a.A") in found.classes
    assert {(3, "pkg.a:A.method"), (2, "pkg.a:A.method.inner")} <= set(found.functions)
    too_long = over(found.functions, MAX_FUNCTION_LINES)
    assert too_long == [(MAX_FUNCTION_LINES + 1, "pkg.b:long")]
    assert listed(too_long) == f"pkg.b:long {MAX_FUNCTION_LINES + 1}"
    assert found.cycles == [["pkg.a", "pkg.b"]]
    assert over(found.modules, MAX_MODULE_LINES) == []
