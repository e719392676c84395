"""Print the structural figures issue 11 set targets for: unit sizes, major comparisons, import cycles.

    python tools/structure_figures.py [PACKAGE_DIR]

Reads the sources with ``ast`` only (nothing is imported). Type-only imports count as edges, so a
cycle hidden behind ``if TYPE_CHECKING:`` is still a cycle. The limits below are the package's
(``tests/test_structure_figures.py`` holds it to them); the figures are printed beside them.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "compat" / "mcp_tasks_compat"

MAX_MODULE_LINES: Final = 600
"""Longest a module may be, in lines: past it, a module holds more than one concern."""
MAX_CLASS_LINES: Final = 200
"""Longest a class may be, in lines (``class`` to its last line): one screenful of reasons to read."""
MAX_FUNCTION_LINES: Final = 80
"""Longest a function or method may be, in lines (``def`` to its last line)."""
MAX_IMPORT_CYCLES: Final = 0
"""Import cycles allowed (type-only imports included): none, so the layers stay layers."""

Figure = tuple[int, str]
"""A unit's length in lines and its name (a module's path in the package, ``module.Class.method``)."""


def module_name(path: Path, package: Path) -> str:
    parts = [package.name, *path.relative_to(package).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def units(tree: ast.AST, kinds: tuple[type[ast.AST], ...], prefix: str = "") -> Iterator[Figure]:
    """The classes or functions (``kinds``) of ``tree``, nested ones included, as (length in lines,
    qualified name: ``Class.method``, ``function.inner``)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            name = f"{prefix}{node.name}"
            if isinstance(node, kinds):
                yield (node.end_lineno or node.lineno) - node.lineno + 1, name
            yield from units(node, kinds, f"{name}.")
        else:
            yield from units(node, kinds, prefix)


def imports_of(tree: ast.AST, name: str, is_package: bool, known: set[str]) -> set[str]:
    """The package's own modules ``name`` imports (relative imports resolved)."""
    found: set[str] = set()
    base = name.split(".") if is_package else name.split(".")[:-1]
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base[: len(base) - (node.level - 1)]
                module = ".".join(anchor + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            targets = [module] + [f"{module}.{alias.name}" for alias in node.names]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def major_comparisons(tree: ast.AST) -> list[int]:
    """Lines comparing something's ``.major`` (the installed SDK major) with a value."""
    lines: list[int] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(isinstance(side, ast.Attribute) and side.attr == "major" for side in sides):
                lines.append(node.lineno)
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.slice, ast.Attribute)
            and node.slice.attr == "major"
        ):
            lines.append(node.lineno)
    return lines


def import_graph(trees: dict[Path, ast.Module], package: Path) -> dict[str, set[str]]:
    """Module name to the package's modules it imports, without a package's edges to its own
    submodules (a package importing its children is not a cycle between layers)."""
    names = {path: module_name(path, package) for path in trees}
    known = set(names.values())
    graph = {names[p]: imports_of(t, names[p], p.name == "__init__.py", known) for p, t in trees.items()}
    return {name: {e for e in edges if not e.startswith(name + ".")} for name, edges in graph.items()}


@dataclass(frozen=True)
class Figures:
    """A package's figures, each list longest first."""

    modules: list[Figure]
    classes: list[Figure]
    functions: list[Figure]
    cycles: list[list[str]]
    comparing: list[str]
    """``path:line`` of each comparison of SDK majors outside ``_detect``."""

    def by_kind(self) -> list[tuple[str, list[Figure], int]]:
        """(kind, its figures, its limit in lines) for modules, classes and functions."""
        return [
            ("modules", self.modules, MAX_MODULE_LINES),
            ("classes", self.classes, MAX_CLASS_LINES),
            ("functions", self.functions, MAX_FUNCTION_LINES),
        ]


def over(found: list[Figure], limit: int) -> list[Figure]:
    """The units of ``found`` longer than ``limit`` lines."""
    return [figure for figure in found if figure[0] > limit]


def listed(found: list[Figure]) -> str:
    """``name lines, ...``: how a failure message and the printout name units."""
    return ", ".join(f"{name} {lines}" for lines, name in found)


def figures(package: Path = PACKAGE) -> Figures:
    """Measure ``package`` (read with ``ast``, nothing imported)."""
    paths = sorted(package.rglob("*.py"))
    sources = {path: path.read_text(encoding="utf-8") for path in paths}
    trees = {path: ast.parse(source) for path, source in sources.items()}
    names = {path: module_name(path, package) for path in paths}

    def longest_first(found: Iterator[Figure]) -> list[Figure]:
        return sorted(found, key=lambda figure: (-figure[0], figure[1]))

    kinds = (ast.FunctionDef, ast.AsyncFunctionDef)
    return Figures(
        modules=longest_first(
            (len(source.splitlines()), path.relative_to(package).as_posix())
            for path, source in sources.items()
        ),
        classes=longest_first(
            (n, f"{names[p]}.{u}") for p, t in trees.items() for n, u in units(t, (ast.ClassDef,))
        ),
        functions=longest_first((n, f"{names[p]}:{u}") for p, t in trees.items() for n, u in units(t, kinds)),
        cycles=cycles(import_graph(trees, package)),
        comparing=[
            f"{path.relative_to(package).as_posix()}:{line}"
            for path, tree in trees.items()
            if path.name != "_detect.py"
            for line in major_comparisons(tree)
        ],
    )


def main(argv: list[str]) -> int:
    found = figures(Path(argv[0]).resolve() if argv else PACKAGE)
    for kind, units_found, limit in found.by_kind():
        print(f"longest {kind} (limit {limit} lines):", listed(units_found[:3]))
        too_long = over(units_found, limit)
        print(f"  {kind} over {limit} lines: {len(too_long)}", listed(too_long))
    print(f"places comparing SDK majors (outside _detect): {len(found.comparing)}", found.comparing)
    print(
        f"import cycles (type-only imports included; limit {MAX_IMPORT_CYCLES}): {len(found.cycles)}",
        found.cycles,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
