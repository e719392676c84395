"""``nox -s api``'s check (tools/api_check.py): the committed snapshot holds, and a break is caught.

The check reads the source with griffe (nothing imported), so these tests change a copy of the
package and run the real check on it: a default changed and a public name removed fail it, and
the same break announced in CHANGELOG.md's newest section passes.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

pytest.importorskip("griffe", reason="griffelib needs Python 3.11+ (nox -s api runs the check there)")

from tools import api_check

ROOT = Path(__file__).resolve().parents[1]

T = TypeVar("T")


def _parsed(function: Callable[..., T], *args: Any) -> T:
    """``function(*args)`` (a griffe parse), tried again when CPython 3.11's compiler reports
    "AST constructor recursion depth mismatch": its recursion depth is kept per interpreter, so a
    module compiled by another thread at the same moment (an import in a worker thread an earlier
    test of this process left running) fails a parse that is sound. Any other error is raised."""
    for attempt in range(3):
        try:
            return function(*args)
        except SystemError as exc:
            if "recursion depth mismatch" not in str(exc) or attempt == 2:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


CHANGELOG = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")


def test_the_source_keeps_the_api_of_the_last_snapshot() -> None:
    version, path = api_check.latest_snapshot()
    unannounced, _ = _parsed(api_check.check, path.read_text(encoding="utf-8"), ROOT / "compat", CHANGELOG)
    assert unannounced == [], f"breaks against the {version} snapshot"


def test_the_snapshot_is_the_public_surface_the_tests_count() -> None:
    """Every name of every public ``__all__`` is in the snapshot, at its public path, or is new
    since it and announced (backticked) in CHANGELOG.md's newest section, until the next
    release's snapshot records it; every name of the snapshot is still public."""
    _, path = api_check.latest_snapshot()
    snapshot = set(_paths(api_check.griffe.Module.from_json(path.read_text(encoding="utf-8"))))
    current = set(_paths(_parsed(api_check.public_api, ROOT / "compat")))
    newest = CHANGELOG.split("\n## ", 2)[1] if "\n## " in CHANGELOG else ""
    unannounced = sorted(name for name in current - snapshot if f"`{name.rsplit('.', 1)[1]}`" not in newest)
    assert unannounced == [], "public names neither in the snapshot nor announced in CHANGELOG.md"
    assert sorted(snapshot - current) == []


def _paths(module: object) -> list[str]:
    found: list[str] = []
    for name, member in module.members.items():  # type: ignore[attr-defined]
        if getattr(member, "kind", None) is not None and member.kind.value == "module":
            found.extend(_paths(member))
        else:
            found.append(f"{module.path}.{name}")  # type: ignore[attr-defined]
    return found


@pytest.fixture
def changed_copy(tmp_path: Path) -> Path:
    """A copy of the package with call_tool's default mode changed and negotiate no longer exported."""
    copy = tmp_path / "compat"
    shutil.copytree(ROOT / "compat" / "mcp_tasks_compat", copy / "mcp_tasks_compat")
    api_source = copy / "mcp_tasks_compat" / "_client_api.py"
    text = api_source.read_text(encoding="utf-8")
    marker = (
        "async def call_tool(\n    session: Any,\n    name: str,\n"
        '    arguments: dict[str, Any] | None = None,\n    *,\n    mode: Mode = "auto",'
    )
    assert marker in text
    api_source.write_text(text.replace(marker, marker.replace('"auto"', '"task"')), encoding="utf-8")
    client = copy / "mcp_tasks_compat" / "client.py"
    text = client.read_text(encoding="utf-8")
    assert '    "negotiate",\n' in text
    client.write_text(text.replace('    "negotiate",\n', "", 1), encoding="utf-8")
    return copy


def test_a_changed_default_and_a_removed_name_fail_the_check(changed_copy: Path) -> None:
    _, path = api_check.latest_snapshot()
    unannounced, accepted = _parsed(
        api_check.check, path.read_text(encoding="utf-8"), changed_copy, CHANGELOG
    )
    assert accepted == []
    assert {(found.path, found.kind) for found in unannounced} == {
        ("mcp_tasks_compat.client.call_tool", "Parameter default was changed"),
        ("mcp_tasks_compat.client.negotiate", "Public object was removed"),
    }


def test_a_break_announced_in_the_newest_changelog_section_passes(changed_copy: Path) -> None:
    announced = (
        "# Changelog\n\n## Unreleased\n\n### Breaking: the client\n\n"
        "- `mcp_tasks_compat.client.call_tool` runs a task by default.\n\n"
        "### Fixed\n\n- `mcp_tasks_compat.client.negotiate` (named outside a Breaking heading)\n\n"
        "## 1.0.0\n\n### Breaking\n\n- `mcp_tasks_compat.client.negotiate`\n"
    )
    _, path = api_check.latest_snapshot()
    unannounced, accepted = _parsed(
        api_check.check, path.read_text(encoding="utf-8"), changed_copy, announced
    )
    assert [found.path for found in accepted] == ["mcp_tasks_compat.client.call_tool"]
    assert [found.path for found in unannounced] == ["mcp_tasks_compat.client.negotiate"]


def test_the_command_fails_on_an_unannounced_break_and_says_how_to_fix_it(
    changed_copy: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(api_check, "ROOT", changed_copy.parent)
    shutil.copytree(ROOT / "api", changed_copy.parent / "api")
    monkeypatch.setattr(api_check, "SNAPSHOTS", changed_copy.parent / "api")
    (changed_copy.parent / "CHANGELOG.md").write_text(CHANGELOG, encoding="utf-8")
    assert api_check.main([]) == 1
    out = capsys.readouterr().out
    assert "NOT announced: mcp_tasks_compat.client.negotiate: Public object was removed" in out
    assert "'### Breaking' heading of CHANGELOG.md's newest section" in out
