"""The docs stay true: the generated support matrix is current, links into the repository (relative,
or absolute on GitHub as README.md's must be for PyPI) name files and anchors that exist."""

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
from tools.check_dist import link_targets, relative_links  # noqa: E402

DOCS = ROOT / "docs"
README = ROOT / "README.md"
PAGES = sorted([*DOCS.glob("*.md"), README, ROOT / "CHANGELOG.md"])


def _repository() -> str:
    """pyproject's Homepage: the GitHub repository absolute links point into."""
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    homepage = re.findall(r'^Homepage = "(https://github\.com/[^/"]+/[^/"]+?)/?"$', pyproject, flags=re.M)
    assert homepage, "pyproject.toml's [project.urls] Homepage is not a GitHub repository"
    return homepage[0]


REPOSITORY = _repository()
BRANCH = "main"
FILE_PREFIXES = (
    f"{REPOSITORY}/blob/{BRANCH}/",
    f"https://raw.githubusercontent.com/{REPOSITORY.removeprefix('https://github.com/')}/{BRANCH}/",
)
"""A file (``blob``, a page keeps its ``#anchor``) or an image (``raw``, which PyPI renders)."""
FOLDER_PREFIX = f"{REPOSITORY}/tree/{BRANCH}/"


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


def _local_target(page: Path, target: str) -> tuple[Path, bool | None] | None:
    """The checkout path a link names, and whether it must be a folder (None: either); None if external."""
    if target.startswith(FOLDER_PREFIX):
        return ROOT / target.removeprefix(FOLDER_PREFIX), True
    for prefix in FILE_PREFIXES:
        if target.startswith(prefix):
            return ROOT / target.removeprefix(prefix), False
    if re.match(r"[a-z]+:", target):
        return None  # external, or elsewhere on GitHub (an issue, another branch)
    return (page.parent / target if target else page), None


def broken_links(page: Path, text: str) -> list[str]:
    """Links of ``text`` (read as ``page``) into the repository whose file, folder or anchor is missing."""
    broken: list[str] = []
    for target in link_targets(text):
        path_text, _, anchor = target.partition("#")
        local = _local_target(page, path_text)
        if local is None:
            continue
        path, folder = local
        path = path.resolve()
        exists = path.exists() and (folder is None or path.is_dir() == folder)
        if not exists or (anchor and path.suffix == ".md" and anchor not in _anchors(path)):
            broken.append(target)
    return broken


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.relative_to(ROOT).as_posix())
def test_links_into_the_repository_resolve(page: Path) -> None:
    broken = broken_links(page, page.read_text(encoding="utf-8"))
    assert broken == [], f"{page.relative_to(ROOT)} links to missing files, folders or anchors: {broken}"


def test_an_absolute_link_into_the_repository_is_checked_like_a_relative_one() -> None:
    blob, raw = FILE_PREFIXES
    good = [
        f"{blob}docs/server.md",
        f"{blob}README.md#install",
        f"{FOLDER_PREFIX}docs",
        f"{raw}pyproject.toml",
        f"{REPOSITORY}/issues/27",  # not a file: not checked
        "https://example.org/missing.md",
    ]
    bad = [
        f"{blob}docs/no-such-page.md",
        f"{blob}docs/server.md#no-such-heading",
        f"{blob}docs",  # a folder is a tree/ link
        f"{FOLDER_PREFIX}docs/server.md",  # a file is a blob/ link
        f"{FOLDER_PREFIX}no-such-folder",
        f"{raw}docs/no-such-image.png",
        "docs/no-such-page.md",
    ]
    text = "\n".join(f"[link {index}]({target})" for index, target in enumerate(good + bad))
    assert broken_links(README, text) == bad


def test_readme_has_no_relative_links_as_pypi_shows_it() -> None:
    relative = relative_links(README.read_text(encoding="utf-8"))
    assert relative == [], (
        "README.md is the long description on PyPI, which shows it with no repository around it, so a "
        f"relative link or image there breaks: {relative}. Write a file as {FILE_PREFIXES[0]}<path> "
        f"(#anchor kept), a folder as {FOLDER_PREFIX}<path>, an image as {FILE_PREFIXES[1]}<path>"
    )


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
