"""The docs stay true: the generated support matrix is current and relative links resolve."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the generator is a repository tool (tools/), not in the wheel
    sys.path.insert(0, str(ROOT))

from tools import support_matrix  # noqa: E402

DOCS = ROOT / "docs"
PAGES = sorted([*DOCS.glob("*.md"), ROOT / "README.md", ROOT / "CHANGELOG.md"])


def test_support_matrix_is_current() -> None:
    committed = (DOCS / "support-matrix.md").read_text(encoding="utf-8")
    assert committed == support_matrix.render(), (
        "docs/support-matrix.md is stale; regenerate it from the repository root with: "
        f"{support_matrix.REGENERATE}"
    )


def test_the_matrix_check_command_agrees(tmp_path: Path) -> None:
    stale = tmp_path / "support-matrix.md"
    stale.write_text("# old\n", encoding="utf-8")
    assert support_matrix.main(["--check", "--output", str(stale)]) == 1
    assert support_matrix.main(["--output", str(stale)]) == 0
    assert support_matrix.main(["--check", "--output", str(stale)]) == 0
    assert stale.read_text(encoding="utf-8") == support_matrix.render()


def test_the_generator_lists_what_it_exports_and_imports_no_sdk() -> None:
    assert [name for name in support_matrix.__all__ if not hasattr(support_matrix, name)] == []
    # A fresh interpreter (this one has long since imported mcp), from the root like the docs say.
    code = (
        "import sys, tools.support_matrix\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]", "the page must not depend on the installed mcp"


def _anchors(page: Path) -> set[str]:
    text = page.read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    headings = re.findall(r"^#{1,6}\s+(.+?)\s*$", text, flags=re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.relative_to(ROOT).as_posix())
def test_relative_links_resolve(page: Path) -> None:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    broken: list[str] = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue  # external
        path_text, _, anchor = target.partition("#")
        path = (page.parent / path_text).resolve() if path_text else page
        if not path.exists() or (anchor and path.suffix == ".md" and anchor not in _anchors(path)):
            broken.append(target)
    assert broken == [], f"{page.relative_to(ROOT)} links to missing files or anchors: {broken}"


def test_error_messages_point_at_the_documented_urls_and_anchors_that_exist() -> None:
    import re

    from mcp_tasks_compat import errors

    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    documentation = re.findall(r'^Documentation = "([^"]+)"$', pyproject, flags=re.MULTILINE)
    assert documentation, "pyproject.toml's [project.urls] names no Documentation"
    assert documentation[0].rstrip("/") + "/errors.md" == errors.DOCS_URL
    page = (DOCS / "errors.md").read_text(encoding="utf-8")
    anchors = set(re.findall(r"^## ([a-z-]+)$", page, flags=re.MULTILINE))
    codes = {
        cls.code
        for cls in vars(errors).values()
        if isinstance(cls, type) and issubclass(cls, errors.CompatError)
    }
    assert codes <= anchors
