"""The reference site covers the public API: every public name has an entry, and an anchor in the build.

    python -m tools.check_reference SITE_DIR     # from the repository root; `nox -s docs` runs it

A module of ``mcp_tasks_compat`` is public when no part of its dotted path after the package starts
with ``_``; its public names are its ``__all__``. A reference page (docs/reference/*.md) covers them
with ``::: module`` (mkdocstrings renders the module's ``__all__``), or a name alone with
``::: module.name``. tests/test_reference_site.py holds the entries (no mkdocs needed); this command
checks the built site: each covered name's anchor (``id="mcp_tasks_compat.client.call_tool"``) is in
its page's HTML. Reads the package through imports (the installed one); a repository tool, not in
the wheel.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import re
import sys
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Final, cast

__all__ = [
    "NOT_IN_REFERENCE",
    "entries",
    "expected_anchors",
    "main",
    "missing_anchors",
    "nav_pages",
    "public_modules",
    "public_names",
    "stale_entries",
    "uncovered_names",
]

ROOT: Final = Path(__file__).resolve().parent.parent
DOCS: Final = ROOT / "docs"
MKDOCS_YML: Final = ROOT / "mkdocs.yml"
PACKAGE: Final = "mcp_tasks_compat"

NOT_IN_REFERENCE: Final[dict[str, str]] = {}
"""Public modules left out of the reference on purpose, each with why. A module here that is no
longer public (or gone) fails tests/test_reference_site.py, so the list cannot outlive its reason."""

_DIRECTIVE: Final = re.compile(r"^::: *(mcp_tasks_compat(?:\.\w+)*) *$", re.MULTILINE)
_NAV_PAGE: Final = re.compile(r"(?:^|[\s:])([\w./-]+\.md)\s*$")


def public_modules() -> list[str]:
    """Every public module of the package, found on disk (private folders are never imported)."""
    package = importlib.import_module(PACKAGE)
    found = [PACKAGE]
    pending = [(PACKAGE, list(package.__path__))]
    while pending:
        prefix, paths = pending.pop()
        for info in pkgutil.iter_modules(paths):
            if info.name.startswith("_"):
                continue
            name = f"{prefix}.{info.name}"
            found.append(name)
            if info.ispkg:
                pending.append((name, list(importlib.import_module(name).__path__)))
    return sorted(found)


def public_names() -> dict[str, list[str]]:
    """Each public module's ``__all__`` (an empty list for a module that declares none)."""
    names: dict[str, list[str]] = {}
    for module in public_modules():
        exported: object = getattr(importlib.import_module(module), "__all__", [])
        listed = cast("Sequence[object]", exported) if isinstance(exported, (list, tuple)) else ()
        names[module] = [str(name) for name in listed]
    return names


def entries(docs: Path = DOCS) -> dict[str, str]:
    """Every ``::: identifier`` of the docs pages, to its page (docs-relative, ``reference/client.md``)."""
    found: dict[str, str] = {}
    for page in sorted(docs.rglob("*.md")):
        for identifier in _DIRECTIVE.findall(page.read_text(encoding="utf-8")):
            found.setdefault(identifier, page.relative_to(docs).as_posix())
    return found


def uncovered_names() -> list[str]:
    """``module.name`` of every public name with neither its module's entry nor its own."""
    covered = entries()
    return [
        f"{module}.{name}"
        for module, names in public_names().items()
        if module not in covered and module not in NOT_IN_REFERENCE
        for name in names
        if f"{module}.{name}" not in covered
    ]


def stale_entries() -> list[str]:
    """Entries that name neither a public module nor a public name (a page left behind by a rename)."""
    names = public_names()
    public = set(names) | {f"{module}.{name}" for module, exported in names.items() for name in exported}
    return sorted(identifier for identifier in entries() if identifier not in public)


def nav_pages(config: Path = MKDOCS_YML) -> list[str]:
    """The pages mkdocs.yml's ``nav:`` names (read as text: the file carries mkdocs' own YAML tags)."""
    pages: list[str] = []
    inside = False
    for line in config.read_text(encoding="utf-8").splitlines():
        if re.match(r"^\S", line):
            inside = line.startswith("nav:")
            continue
        match = _NAV_PAGE.search(line) if inside else None
        if match:
            pages.append(match.group(1))
    return pages


def expected_anchors() -> dict[str, set[str]]:
    """The anchors each reference page must hold, by page (docs-relative): the entry and its names."""
    names = public_names()
    expected: dict[str, set[str]] = {}
    for identifier, page in entries().items():
        anchors = expected.setdefault(page, set())
        anchors.add(identifier)
        anchors.update(f"{identifier}.{name}" for name in names.get(identifier, []))
    return expected


def page_html(site: Path, page: str) -> Path:
    """The built file of a docs page (mkdocs' directory URLs: ``reference/client.md`` ->
    ``reference/client/index.html``; ``index.md`` -> ``index.html``)."""
    path = PurePosixPath(page)
    folder = path.parent if path.stem == "index" else path.parent / path.stem
    return site.joinpath(*folder.parts, "index.html")


def missing_anchors(site: Path, expected: dict[str, set[str]] | None = None) -> list[str]:
    """``page: anchor`` for every expected anchor that the built site lacks (or its page is missing)."""
    missing: list[str] = []
    for page, anchors in sorted((expected if expected is not None else expected_anchors()).items()):
        built = page_html(site, page)
        if not built.is_file():
            missing.append(f"{page}: (no {built.relative_to(site).as_posix()} in the site)")
            continue
        ids = set(re.findall(r'\bid="([^"]+)"', built.read_text(encoding="utf-8")))
        missing += [f"{page}: {anchor}" for anchor in sorted(anchors - ids)]
    return missing


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("site", type=Path, help="the built site (mkdocs build --site-dir)")
    site: Path = parser.parse_args(argv).site
    problems = [f"no reference entry: {name}" for name in uncovered_names()]
    problems += [f"entry names nothing public: {identifier}" for identifier in stale_entries()]
    problems += [f"not in the built site: {anchor}" for anchor in missing_anchors(site)]
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        return 1
    count = sum(len(anchors) for anchors in expected_anchors().values())
    print(f"reference: {count} public names and modules, each with its anchor in {site}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
