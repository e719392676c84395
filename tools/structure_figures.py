"""Print the structural figures issue 11 set targets for: unit sizes, major comparisons, import cycles.

    python -m tools.structure_figures [PACKAGE_DIR]
    python -m tools.structure_figures --ratchet    # rewrite tools/size_ratchet.json: records only go down

Reads the sources with ``ast`` only (nothing is imported). Type-only imports count as edges, so a
cycle hidden behind ``if TYPE_CHECKING:`` is still a cycle.

Sizes are a ratchet, not a ceiling (issue 41). A unit is a module (its lines), a class (``class``
to its last line) or a function or method (``def`` to its last line). Each kind has a *target*
(``TARGET_*``: where a unit should be split, along a concern) and a *bound for new code*
(``MAX_*``). ``tools/size_ratchet.json`` records every unit of the package longer than its target
at its length: that is its own limit. So, held by ``tests/test_structure_figures.py``:

* a listed unit may not grow past its record (shorten it, or split it: a record is never raised
  by ``--ratchet``);
* a listed unit shorter than its record, at or under its target, or gone, fails until the file is
  lowered by ``--ratchet``, so the limits only go down;
* a unit not listed may not be longer than the bound for new code; one longer than its target
  (new code, or a unit that grew past its target) is recorded by ``--ratchet`` at its length.

``--ratchet --accept-growth`` records every unit at its length, a grown one included: a raise
made on purpose (merging branches written before the ratchet), seen in the file's diff.
"""

from __future__ import annotations

import argparse
import ast
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final, NamedTuple

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "compat" / "mcp_tasks_compat"

RATCHET = ROOT / "tools" / "size_ratchet.json"
"""The recorded lengths: each unit longer than its target, its own limit."""
RATCHET_COMMAND: Final = "python -m tools.structure_figures --ratchet"
"""What rewrites :data:`RATCHET` (run from the repository root); the failures name it."""

MAX_MODULE_LINES: Final = 600
"""The bound for a module not in the ratchet file, in lines: past it, a module holds more than one
concern."""
MAX_CLASS_LINES: Final = 200
"""The bound for a class not in the ratchet file (``class`` to its last line): one screenful of
reasons to read."""
MAX_FUNCTION_LINES: Final = 80
"""The bound for a function or method not in the ratchet file (``def`` to its last line)."""
TARGET_MODULE_LINES: Final = 400
"""A module longer than this is recorded in the ratchet file, and should be split along a concern."""
TARGET_CLASS_LINES: Final = 150
"""A class longer than this is recorded in the ratchet file."""
TARGET_FUNCTION_LINES: Final = 60
"""A function or method longer than this is recorded in the ratchet file."""
MAX_IMPORT_CYCLES: Final = 0
"""Import cycles allowed (type-only imports included): none, so the layers stay layers."""

Figure = tuple[int, str]
"""A unit's length in lines and its name: a module's path in the package (``server.py``), a class's
``module.Class``, a function's ``module:Class.method`` (``module:function.inner``)."""

Records = dict[str, dict[str, int]]
"""The ratchet file's records: kind (``modules``, ``classes``, ``functions``) to unit name to length."""


KINDS: Final = ("modules", "classes", "functions")
"""The kinds of unit, in the ratchet file's order."""


class Kind(NamedTuple):
    """One kind of unit: its figures (longest first), its bound for new code and its target."""

    kind: str
    found: list[Figure]
    limit: int
    target: int


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

    def by_kind(self) -> list[Kind]:
        """Modules, classes and functions, each with its bound for new code and its target."""
        return [
            Kind("modules", self.modules, MAX_MODULE_LINES, TARGET_MODULE_LINES),
            Kind("classes", self.classes, MAX_CLASS_LINES, TARGET_CLASS_LINES),
            Kind("functions", self.functions, MAX_FUNCTION_LINES, TARGET_FUNCTION_LINES),
        ]


def over(found: list[Figure], limit: int) -> list[Figure]:
    """The units of ``found`` longer than ``limit`` lines."""
    return [figure for figure in found if figure[0] > limit]


def listed(found: list[Figure]) -> str:
    """``name lines, ...``: how a failure message and the printout name units."""
    return ", ".join(f"{name} {lines}" for lines, name in found)


def lengths(found: list[Figure]) -> dict[str, int]:
    """Unit name to length; a name defined more than once (``@overload``s, a property's getter and
    setter) is its longest definition."""
    longest: dict[str, int] = {}
    for length, name in found:
        longest[name] = max(length, longest.get(name, 0))
    return longest


def ratcheted(
    records: Mapping[str, Mapping[str, int]], found: Figures, *, accept_growth: bool = False
) -> Records:
    """What ``--ratchet`` writes: every unit longer than its target at its length, where a listed
    unit keeps its record if it grew (records only go down, unless ``accept_growth``) and a unit
    not listed is recorded only within the bound for new code (past it, it fails as it is)."""
    written: Records = {}
    for kind in found.by_kind():
        recorded = records.get(kind.kind, {})
        kept: dict[str, int] = {}
        for name, length in lengths(kind.found).items():
            if length <= kind.target:
                continue
            if name in recorded and not accept_growth:
                kept[name] = min(length, recorded[name])
            elif length <= kind.limit:
                kept[name] = length
        written[kind.kind] = dict(sorted(kept.items()))
    return written


@dataclass(frozen=True)
class Ratchet:
    """How a package's units stand against the ratchet file, per kind (each list ``name length``)."""

    grew: dict[str, list[str]]
    """Listed units longer than their record: ``name length (recorded N)``."""
    over: dict[str, list[str]]
    """Units not listed longer than the bound for new code."""
    stale: dict[str, list[str]]
    """What ``--ratchet`` would change: records to lower (``name N -> length``), to drop (``name N
    -> gone`` or ``-> length``, at or under the target) and to add (``name + length``)."""

    def failures(self) -> list[str]:
        """One message per kind and way of failing, naming each unit; none when the ratchet holds."""
        messages: list[str] = []
        for kind, names in self.grew.items():
            if names:
                messages.append(
                    f"{kind} longer than their record in {RATCHET.name} (shorten or split them along a "
                    f"concern; a record only goes down): {', '.join(names)}"
                )
        for kind, names in self.over.items():
            if names:
                messages.append(
                    f"{kind} not in {RATCHET.name}, over the bound for new code: {', '.join(names)}"
                )
        for kind, names in self.stale.items():
            if names:
                messages.append(
                    f"{RATCHET.name} is not up to date ({kind}: {', '.join(names)}); run {RATCHET_COMMAND}"
                )
        return messages


def ratchet_of(records: Mapping[str, Mapping[str, int]], found: Figures) -> Ratchet:
    """``found`` against ``records``."""
    written = ratcheted(records, found)
    grew: dict[str, list[str]] = {}
    over_bound: dict[str, list[str]] = {}
    stale: dict[str, list[str]] = {}
    for kind in found.by_kind():
        now = lengths(kind.found)
        recorded = dict(records.get(kind.kind, {}))
        expected = written[kind.kind]
        grew[kind.kind] = [
            f"{name} {now[name]} (recorded {limit})"
            for name, limit in recorded.items()
            if now.get(name, 0) > limit
        ]
        over_bound[kind.kind] = [
            f"{name} {length}" for name, length in now.items() if name not in recorded and length > kind.limit
        ]
        stale[kind.kind] = changes(recorded, expected, now)
    return Ratchet(grew=grew, over=over_bound, stale=stale)


def changes(before: Mapping[str, int], after: Mapping[str, int], now: Mapping[str, int]) -> list[str]:
    """The records of one kind that differ, by name: ``name + length`` (added), ``name N -> length``
    (lowered, raised, or dropped at or under the target), ``name N -> gone``."""
    found: list[str] = []
    for name in sorted(before.keys() | after.keys()):
        if before.get(name) == after.get(name):
            continue
        if name not in before:
            found.append(f"{name} + {after[name]}")
        else:
            found.append(f"{name} {before[name]} -> {now.get(name, 'gone')}")
    return found


def read_records(path: Path = RATCHET) -> Records:
    """The ratchet file's records (none for a file that does not exist yet)."""
    if not path.exists():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return {kind: {str(name): int(length) for name, length in data.get(kind, {}).items()} for kind in KINDS}


def write_records(records: Records, path: Path = RATCHET) -> None:
    """The file as ``--ratchet`` writes it: a note, then each kind's units by name, one a line."""
    data: dict[str, object] = {
        "about": (
            f"Written by `{RATCHET_COMMAND}`: each unit of the package longer than its target "
            "(tools/structure_figures.py), at its length in lines, its own limit. The command "
            "only lowers, drops and adds records; a record is raised on purpose only, with --accept-growth."
        ),
        **{kind: records.get(kind, {}) for kind in KINDS},
    }
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


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


def rewrite(found: Figures, *, accept_growth: bool = False) -> int:
    """``--ratchet``: write the file, say what changed; 1 when a unit still fails (grew, or is new
    and over the bound), which the file cannot fix."""
    records = read_records()
    written = ratcheted(records, found, accept_growth=accept_growth)
    write_records(written)
    for kind in found.by_kind():
        for change in changes(records.get(kind.kind, {}), written[kind.kind], lengths(kind.found)):
            print(f"{kind.kind}: {change}")
    after = ratchet_of(written, found)
    for message in after.failures():
        print(message)
    return 1 if after.failures() else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.structure_figures",
        description="Print the structural figures; --ratchet rewrites the size records.",
    )
    parser.add_argument("package", nargs="?", type=Path, help="a package directory (default: the library's)")
    parser.add_argument(
        "--ratchet", action="store_true", help=f"rewrite {RATCHET.relative_to(ROOT)} (the library only)"
    )
    parser.add_argument(
        "--accept-growth", action="store_true", help="with --ratchet: record grown units at their length too"
    )
    args = parser.parse_args(argv)
    package = args.package.resolve() if args.package else PACKAGE
    if args.accept_growth and not args.ratchet:
        parser.error("--accept-growth goes with --ratchet")
    if args.ratchet and package != PACKAGE:
        parser.error(f"--ratchet records the library's units ({PACKAGE.relative_to(ROOT)}) only")
    found = figures(package)
    if args.ratchet:
        return rewrite(found, accept_growth=args.accept_growth)
    for kind, units_found, limit, target in found.by_kind():
        print(f"longest {kind} (target {target} lines, bound for new code {limit}):", listed(units_found[:3]))
        for what, lines in (("target", target), ("bound", limit)):
            too_long = over(units_found, lines)
            print(f"  {kind} over the {what}, {lines} lines: {len(too_long)}", listed(too_long))
    if package == PACKAGE:
        failures = ratchet_of(read_records(), found).failures()
        print(f"size ratchet ({RATCHET.relative_to(ROOT)}):", "failing" if failures else "holds")
        for message in failures:
            print(f"  {message}")
    print(f"places comparing SDK majors (outside _detect): {len(found.comparing)}", found.comparing)
    print(
        f"import cycles (type-only imports included; limit {MAX_IMPORT_CYCLES}): {len(found.cycles)}",
        found.cycles,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
