"""tools/check_dist.py (run by ``nox -s package``) on a small project: it passes a whole release and
names what a broken one lacks or carries (a module, an extra, a stray folder, a README link PyPI
cannot follow), so the session's green means something."""

from __future__ import annotations

import io
import sys
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # a repository tool (tools/), not in the wheel
    sys.path.insert(0, str(ROOT))

from tools.check_dist import Expected, check_sdist, check_wheel, relative_links  # noqa: E402

PYPROJECT = """\
[project]
name = "demo-pkg"
dynamic = ["version"]
description = "A demo."
readme = "README.md"
requires-python = ">=3.10"
license = "MIT"
dependencies = ["anyio>=4"]
classifiers = ["Typing :: Typed"]

[project.optional-dependencies]
http = ["uvicorn>=0.30"]

[project.urls]
Homepage = "https://github.com/demo-org/demo-pkg"

[project.scripts]
demo = "demo_pkg.cli:main"

[tool.hatch.version]
path = "src/demo_pkg/_version.py"

[tool.hatch.build.targets.wheel]
packages = ["src/demo_pkg"]
"""
README = (
    "# demo\n\nA demo package. [Docs](https://github.com/demo-org/demo-pkg/blob/main/docs/index.md#use), "
    "[install](#demo), ![logo](https://raw.githubusercontent.com/demo-org/demo-pkg/main/logo.png)\n"
)
PACKAGE_FILES = {
    "__init__.py": "",
    "_version.py": '__version__ = "1.2.3"\n',
    "cli.py": "def main() -> None: ...\n",
    "py.typed": "",
}
METADATA = f"""\
Metadata-Version: 2.4
Name: demo-pkg
Version: 1.2.3
Summary: A demo.
Project-URL: Homepage, https://github.com/demo-org/demo-pkg
License-Expression: MIT
Classifier: Typing :: Typed
Requires-Python: >=3.10
Requires-Dist: anyio>=4
Provides-Extra: http
Requires-Dist: uvicorn>=0.30; extra == 'http'
Description-Content-Type: text/markdown

{README}"""
WHEEL = "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
ENTRY_POINTS = "[console_scripts]\ndemo = demo_pkg.cli:main\n"
DIST_INFO = "demo_pkg-1.2.3.dist-info"


@pytest.fixture
def project(tmp_path: Path) -> Expected:
    (tmp_path / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    (tmp_path / "README.md").write_text(README, encoding="utf-8")
    package = tmp_path / "src" / "demo_pkg"
    (package / "__pycache__").mkdir(parents=True)
    (package / "__pycache__" / "cli.cpython-311.pyc").write_bytes(b"\0")  # never shipped, never expected
    for name, text in PACKAGE_FILES.items():
        (package / name).write_text(text, encoding="utf-8")
    return Expected(tmp_path)


def wheel_files(metadata: str = METADATA) -> dict[str, str]:
    files = {f"demo_pkg/{name}": text for name, text in PACKAGE_FILES.items()}
    files |= {f"{DIST_INFO}/METADATA": metadata, f"{DIST_INFO}/WHEEL": WHEEL}
    files[f"{DIST_INFO}/entry_points.txt"] = ENTRY_POINTS
    return files


def write_wheel(folder: Path, files: dict[str, str]) -> Path:
    path = folder / "demo_pkg-1.2.3-py3-none-any.whl"
    record = "".join(f"{name},," + "\n" for name in [*files, f"{DIST_INFO}/RECORD"])
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in {**files, f"{DIST_INFO}/RECORD": record}.items():
            archive.writestr(name, text)
    return path


def write_sdist(folder: Path, files: dict[str, str]) -> Path:
    path = folder / "demo_pkg-1.2.3.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        for name, text in files.items():
            data = text.encode("utf-8")
            info = tarfile.TarInfo(f"demo_pkg-1.2.3/{name}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def sdist_files() -> dict[str, str]:
    files = {f"src/demo_pkg/{name}": text for name, text in PACKAGE_FILES.items()}
    return {**files, "PKG-INFO": METADATA, "pyproject.toml": PYPROJECT, "README.md": README}


def test_a_whole_release_passes(project: Expected, tmp_path: Path) -> None:
    assert check_wheel(write_wheel(tmp_path, wheel_files()), project) == []
    assert check_sdist(write_sdist(tmp_path, sdist_files()), project) == []


def without(name: str) -> Callable[[dict[str, str]], None]:
    def remove(files: dict[str, str]) -> None:
        del files[name]

    return remove


BROKEN_WHEELS: dict[str, tuple[Callable[[dict[str, str]], None], str]] = {
    "a module left out": (without("demo_pkg/cli.py"), "wheel lacks 1 file(s) of src/demo_pkg/: ['cli.py']"),
    "py.typed left out": (without("demo_pkg/py.typed"), "wheel lacks py.typed"),
    "the tests shipped": (
        lambda files: files.update({"tests/test_demo.py": ""}),
        "wheel holds files that are not in the package folder: ['tests/test_demo.py']",
    ),
    "a bytecode cache shipped": (
        lambda files: files.update({"demo_pkg/__pycache__/cli.cpython-311.pyc": ""}),
        "not in the package folder: ['__pycache__/cli.cpython-311.pyc']",
    ),
    "an extra lost": (
        lambda files: files.update({f"{DIST_INFO}/METADATA": METADATA.replace("Provides-Extra: http\n", "")}),
        "wheel Provides-Extra: [], expected ['http']",
    ),
    "another Python floor": (
        lambda files: files.update({f"{DIST_INFO}/METADATA": METADATA.replace(">=3.10", ">=3.9")}),
        "wheel Requires-Python: '>=3.9', expected '>=3.10'",
    ),
    "another long description": (
        lambda files: files.update({f"{DIST_INFO}/METADATA": METADATA.replace("A demo package.", "Old.")}),
        "wheel long description is not README.md",
    ),
    "the command lost": (
        lambda files: files.update({f"{DIST_INFO}/entry_points.txt": ""}),
        "wheel entry points: {}",
    ),
}


@pytest.mark.parametrize("breakage", list(BROKEN_WHEELS))
def test_a_broken_wheel_is_named(project: Expected, tmp_path: Path, breakage: str) -> None:
    change, problem = BROKEN_WHEELS[breakage]
    files = wheel_files()
    change(files)
    problems = check_wheel(write_wheel(tmp_path, files), project)
    assert any(problem in found for found in problems), problems


def test_an_sdist_without_a_module_or_with_a_cache_is_named(project: Expected, tmp_path: Path) -> None:
    files = sdist_files()
    del files["src/demo_pkg/cli.py"]
    files[".nox/lint/bin/python"] = ""
    problems = check_sdist(write_sdist(tmp_path, files), project)
    assert "sdist lacks 1 file(s) of src/demo_pkg: ['cli.py']" in problems
    assert "sdist holds environments or caches: ['.nox/lint/bin/python']" in problems


def test_a_readme_with_a_relative_link_is_named_in_both_metadata(project: Expected, tmp_path: Path) -> None:
    readme = README + "\nSee [the server guide](docs/server.md) and ![the flow](docs/flow.png).\n"
    (project.root / "README.md").write_text(readme, encoding="utf-8")
    project = Expected(project.root)  # the same description as METADATA: only the links are wrong
    metadata = METADATA.replace(README, readme)
    wheel_problems = check_wheel(write_wheel(tmp_path, wheel_files(metadata)), project)
    sdist = write_sdist(tmp_path, {**sdist_files(), "PKG-INFO": metadata, "README.md": readme})
    sdist_problems = check_sdist(sdist, project)
    for where, problems in (("wheel", wheel_problems), ("sdist PKG-INFO", sdist_problems)):
        (problem,) = problems
        assert problem.startswith(
            f"{where} long description (README.md) has relative links or images, which break on PyPI"
        ), problem
        assert "['docs/server.md', 'docs/flow.png']" in problem
        assert "https://github.com/demo-org/demo-pkg/blob/main/<file>" in problem
        assert "https://raw.githubusercontent.com/demo-org/demo-pkg/main/<file>" in problem


RELATIVE_LINKS = {
    "[a](docs/a.md)": ["docs/a.md"],
    "![a](img/a.png)": ["img/a.png"],
    "[a](../up.md#part)": ["../up.md#part"],
    "[a](/rooted.md)": ["/rooted.md"],
    '[a](<docs/with space.md> "title")': ["docs/with space.md"],
    "[![badge](badge.svg)](https://ci.example/run)": ["badge.svg"],
    "[a][ref]\n\n[ref]: docs/ref.md": ["docs/ref.md"],
    '<img src="shot.png" alt="a shot"> <a href="CHANGELOG.md">changes</a>': ["shot.png", "CHANGELOG.md"],
    "[a](https://github.com/o/r/blob/main/a.md) [b](mailto:x@example.org) [c](#same-page)": [],
    "[d](//cdn.example/x.png) [e](HTTP://EXAMPLE.ORG)": [],
    "`[not a link](a.md)` and\n\n```\n[nor this](b.md)\n```\n\n~~~\n![nor](c.png)\n~~~\n": [],
}


@pytest.mark.parametrize("markdown", list(RELATIVE_LINKS))
def test_relative_links_are_found_in_prose_and_html_not_in_code(markdown: str) -> None:
    assert relative_links(markdown) == RELATIVE_LINKS[markdown]
