"""Print the structural figures issue 11 set targets for: unit sizes, major comparisons, import cycles.

    python tools/structure_figures.py [PACKAGE_DIR]

Reads the sources with ``ast`` only (nothing is imported). Type-only imports count as edges, so a
cycle hidden behind ``if TYPE_CHECKING:`` is still a cycle.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "compat" / "mcp_tasks_compat"


def module_name(path: Path, package: Path) -> str:
    parts = [package.name, *path.relative_to(package).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def units(tree: ast.AST, kinds: tuple[type[ast.AST], ...]) -> Iterator[tuple[str, int]]:
    for node in ast.walk(tree):
        if isinstance(node, kinds):
            assert isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            end = node.end_lineno or node.lineno
            yield node.name, end - node.lineno + 1


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


def main(argv: list[str]) -> int:
    package = Path(argv[0]).resolve() if argv else PACKAGE
    paths = sorted(package.rglob("*.py"))
    trees = {path: ast.parse(path.read_text(encoding="utf-8")) for path in paths}
    names = {path: module_name(path, package) for path in paths}
    known = set(names.values())

    sizes = sorted(
        ((len(path.read_text(encoding="utf-8").splitlines()), path) for path in paths), reverse=True
    )
    classes = sorted(
        ((length, f"{names[p]}.{n}") for p, t in trees.items() for n, length in units(t, (ast.ClassDef,))),
        reverse=True,
    )
    functions = sorted(
        (
            (length, f"{names[p]}:{n}")
            for p, t in trees.items()
            for n, length in units(t, (ast.FunctionDef, ast.AsyncFunctionDef))
        ),
        reverse=True,
    )
    print("longest modules:  ", ", ".join(f"{p.relative_to(package)} {n}" for n, p in sizes[:3]))
    print("longest classes:  ", ", ".join(f"{name} {n}" for n, name in classes[:3]))
    print("longest functions:", ", ".join(f"{name} {n}" for n, name in functions[:3]))
    comparing = [
        f"{path.relative_to(package)}:{line}"
        for path, tree in trees.items()
        if path.name != "_detect.py"
        for line in major_comparisons(tree)
    ]
    print(f"places comparing SDK majors (outside _detect): {len(comparing)}", comparing)
    graph = {names[p]: imports_of(t, names[p], p.name == "__init__.py", known) for p, t in trees.items()}
    # A package importing its own submodules is not a cycle between layers: drop parent -> child edges.
    for name, edges in graph.items():
        graph[name] = {e for e in edges if not e.startswith(name + ".")}
    found = cycles(graph)
    print(f"import cycles (type-only imports included): {len(found)}", found)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
