"""Hold the public API to the snapshot of the last release: ``python -m tools.api_check [--update]``.

The public API is what docs/stability.md promises: the ``__all__`` of every public module (no
part of its path after ``mcp_tasks_compat`` starts with ``_``), each name taken at its home
(re-exports resolved, so ``client.call_tool`` is compared as the function it is). griffe reads it
from the source (nothing is imported, so no ``mcp`` is needed) and its breaking-change check
compares it with ``api/<release>.json``, the newest snapshot committed: a removed name, a
parameter removed or made required, a default changed, a class that lost a base... A break fails
the check unless CHANGELOG.md's newest section announces it: a ``### Breaking...`` heading under
which the object's path (or its class's, or its module's) is written in backticks.

``--update`` writes the snapshot of this release (``api/<version>.json``), at release time only.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import griffe

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "mcp_tasks_compat"
SNAPSHOTS = ROOT / "api"

__all__ = ["Break", "announced_paths", "check", "latest_snapshot", "main", "public_api", "snapshot_json"]


@dataclass(frozen=True)
class Break:
    """One incompatible change of a public object, as griffe names it."""

    path: str
    kind: str
    old: str
    new: str

    def line(self) -> str:
        return f"{self.path}: {self.kind} ({self.old} -> {self.new})"


def _public_modules(package: griffe.Module) -> list[griffe.Module]:
    found: list[griffe.Module] = [package]
    for member in package.modules.values():
        if not member.name.startswith("_") and not member.is_alias:  # a submodule, not `from . import x`
            found.extend(_public_modules(member))
    return found


def public_api(search_path: Path) -> griffe.Module:
    """A module tree holding only the public names, each its home object (aliases resolved)."""
    loader = griffe.GriffeLoader(
        search_paths=[str(search_path)], modules_collection=griffe.ModulesCollection()
    )
    package = loader.load(PACKAGE)
    assert isinstance(package, griffe.Module)
    loader.resolve_aliases(external=False)
    picked: list[tuple[str, str, griffe.Object]] = []
    for module in _public_modules(package):
        for name in sorted(str(export) for export in (module.exports or [])):
            member = module[name]
            target = member.final_target if member.is_alias else member
            assert isinstance(target, griffe.Object), f"{module.path}.{name} does not resolve"
            picked.append((module.path, name, target))
    root = griffe.Module(PACKAGE)
    built = {PACKAGE: root}
    for module_path in sorted({path for path, _, _ in picked} | {m.path for m in _public_modules(package)}):
        if module_path == PACKAGE:
            continue
        parent = built[module_path.rpartition(".")[0]]
        built[module_path] = griffe.Module(module_path.rpartition(".")[2], parent=parent)
        parent.set_member(built[module_path].name, built[module_path])
    for module_path, name, target in picked:
        built[module_path].set_member(name, target)  # the object now sits at its public path
    return root


_NOT_API = frozenset({"docstring", "filepath", "relative_filepath", "git_info"})
"""Fields of griffe's dump that are not the API (prose, files): left out of the snapshot."""


def _api_only(value: object) -> object:
    if isinstance(value, dict):
        fields = cast("dict[str, object]", value)
        return {key: _api_only(item) for key, item in fields.items() if key not in _NOT_API}
    if isinstance(value, list):
        return [_api_only(item) for item in cast("list[object]", value)]
    return value


def snapshot_json(api: griffe.Module) -> str:
    """The snapshot as committed: griffe's JSON of the public tree, without prose or line numbers."""
    return json.dumps(_api_only(json.loads(api.as_json())), indent=1, sort_keys=True) + "\n"


def latest_snapshot() -> tuple[str, Path]:
    """The newest ``api/<version>.json`` (by version number) and its version."""
    versions: list[tuple[tuple[int, ...], Path]] = []
    for path in SNAPSHOTS.glob("*.json"):
        if re.fullmatch(r"\d+(\.\d+)*", path.stem):
            versions.append((tuple(int(part) for part in path.stem.split(".")), path))
    if not versions:
        raise SystemExit(f"no snapshot in {SNAPSHOTS}: write one with python -m tools.api_check --update")
    _, path = max(versions)
    return path.stem, path


def announced_paths(changelog: str) -> set[str]:
    """The backticked names under the ``### Breaking...`` headings of the newest ``## `` section."""
    newest = changelog.split("\n## ", 2)[1] if "\n## " in changelog else ""
    names: set[str] = set()
    for part in re.split(r"\n(?=### )", newest):
        if part.startswith("### Breaking"):
            names.update(re.findall(r"`([\w.]+)`", part))
    return names


def _shown(value: object) -> str:
    """A breakage's kind (an enum: its sentence) or an old/new value (a parameter: its name)."""
    if isinstance(value, griffe.BreakageKind):
        sentence: object = getattr(value, "value", value)
        return str(sentence)
    return str(getattr(value, "name", value))


def check(snapshot: str, search_path: Path, changelog: str) -> tuple[list[Break], list[Break]]:
    """(unannounced, announced) breaks of the API under ``search_path`` against ``snapshot``."""
    old = griffe.Module.from_json(snapshot)
    new = public_api(search_path)
    announced = announced_paths(changelog)
    unannounced: list[Break] = []
    accepted: list[Break] = []
    for breakage in griffe.find_breaking_changes(old, new):
        kind = _shown(getattr(breakage, "kind", None))  # an enum: its .value is the sentence
        found = Break(breakage.obj.path, kind, _shown(breakage.old_value), _shown(breakage.new_value))
        prefixes = {".".join(found.path.split(".")[:end]) for end in range(2, found.path.count(".") + 2)}
        (accepted if prefixes & announced else unannounced).append(found)
    return unannounced, accepted


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.api_check", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument("--update", action="store_true", help="write api/<this version>.json (at a release)")
    options = parser.parse_args(argv)
    source = ROOT / "compat"
    if options.update:
        version = re.search(r'__version__ = "([^"]+)"', (source / PACKAGE / "_version.py").read_text())
        assert version is not None
        SNAPSHOTS.mkdir(exist_ok=True)
        target = SNAPSHOTS / f"{version.group(1)}.json"
        target.write_text(snapshot_json(public_api(source)), encoding="utf-8")
        print(f"wrote {target.relative_to(ROOT)}")
        return 0
    version, path = latest_snapshot()
    unannounced, accepted = check(
        path.read_text(encoding="utf-8"), source, (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    )
    names = sum(
        1
        for module in _modules_of(json.loads(path.read_text(encoding="utf-8")))
        for member in _members(module).values()
        if member.get("kind") != "module"
    )
    breaks = len(unannounced) + len(accepted)
    print(f"public API against the {version} snapshot ({names} exports): {breaks} breaks")
    for found in accepted:
        print(f"  announced in CHANGELOG.md: {found.line()}")
    for found in unannounced:
        print(f"  NOT announced: {found.line()}")
    if unannounced:
        print(
            "fix: keep the old form (a deprecated alias, docs/stability.md), or announce the break under a "
            "'### Breaking' heading of CHANGELOG.md's newest section naming the path in backticks"
        )
        return 1
    return 0


def _members(tree: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return cast("dict[str, dict[str, Any]]", tree.get("members") or {})


def _modules_of(tree: dict[str, Any]) -> list[dict[str, Any]]:
    found = [tree]
    for member in _members(tree).values():
        if member.get("kind") == "module":
            found.extend(_modules_of(member))
    return found


if __name__ == "__main__":
    sys.exit(main())
