"""Check a built sdist and wheel against pyproject.toml and the source tree, so a release misses nothing.

    python -m tools.check_dist DIST_DIR        # from the repository root; `nox -s package` runs it

``DIST_DIR`` holds one ``.whl`` and one ``.tar.gz`` (``uv build --out-dir DIST_DIR``). Checked: the
file names; the wheel's METADATA against ``[project]`` (name, version, summary, requires-python,
dependencies, every extra, license, classifiers, URLs, the README as the long description, with no
relative link or image in it: PyPI shows it with no repository around it, so one would break); its
entry points (the console script, the pytest plugin); that the wheel holds exactly the files of
the package folder (a module left out fails, and so does anything else: tests/, .nox, caches), with
``py.typed``; that RECORD lists every file; and that the sdist holds PKG-INFO, pyproject.toml,
the README and every file of the package folder, and no environment or cache. Reads files only:
nothing is built, installed or imported from the package. A repository tool, not in the wheel.
"""

from __future__ import annotations

import argparse
import configparser
import email.message
import email.parser
import importlib
import re
import sys
import tarfile
import zipfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any, Final, cast

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

__all__ = [
    "Expected",
    "check_sdist",
    "check_wheel",
    "link_targets",
    "main",
    "relative_links",
    "source_files",
]

ROOT: Final = Path(__file__).resolve().parent.parent
NOT_SHIPPED: Final = ("__pycache__", ".nox", ".venv", ".git", "node_modules", ".pytest_cache", ".hypothesis")
"""Folder names that never belong in a distribution (environments, caches, VCS)."""
NOT_SHIPPED_SUFFIXES: Final = (".pyc", ".pyo")
DESCRIPTION: Final = "Check a built sdist and wheel against pyproject.toml and the source tree."


_FENCED_CODE: Final = re.compile(r"^ {0,3}(`{3,}|~{3,}).*?^ {0,3}\1", re.DOTALL | re.MULTILINE)
_INLINE_CODE: Final = re.compile(r"(`+).+?\1", re.DOTALL)
_LINK_TARGET_PATTERNS: Final = (
    re.compile(r"\]\(\s*(?:<([^>\n]*)>|([^)\s]+))"),  # [text](target), ![alt](target), [![alt](i)](target)
    re.compile(r"^ {0,3}\[[^\]]+\]:\s*(?:<([^>\n]*)>|(\S+))", re.MULTILINE),  # [label]: target
    re.compile(r"""\b(?:href|src)\s*=\s*["']([^"']+)["']"""),  # <a href=...>, <img src=...>
)
_SCHEME: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


def link_targets(markdown: str) -> list[str]:
    """Every link and image target of a Markdown text, in order; code blocks and code spans are not links."""
    prose = _INLINE_CODE.sub("", _FENCED_CODE.sub("", markdown))
    found: list[tuple[int, str]] = []
    for pattern in _LINK_TARGET_PATTERNS:
        found += [
            (match.start(), next(filter(None, match.groups()), "")) for match in pattern.finditer(prose)
        ]
    return [target for _, target in sorted(found)]


def relative_links(markdown: str) -> list[str]:
    """The link and image targets that name no scheme (``docs/x.md``, ``../a.png``, ``/x``).

    They resolve on GitHub, next to the file; on PyPI, which shows the README as the long
    description with no repository around it, they break. A bare ``#anchor`` stays on the page.
    """
    return [
        target
        for target in link_targets(markdown)
        if not _SCHEME.match(target) and not target.startswith(("#", "//"))
    ]


def _load_toml(text: str) -> dict[str, Any]:
    """``tomllib`` (3.11+) or ``tomli`` (3.10), without a version-dependent import for the type checker."""
    module = importlib.import_module("tomllib" if sys.version_info >= (3, 11) else "tomli")
    loads = cast("Callable[[str], dict[str, Any]]", module.loads)
    return loads(text)


def source_files(package_dir: Path) -> set[str]:
    """Every file of the package folder, relative and POSIX, minus bytecode caches."""
    files: set[str] = set()
    for path in package_dir.rglob("*"):
        relative = path.relative_to(package_dir)
        if path.is_file() and not _not_shipped(PurePosixPath(relative.as_posix())):
            files.add(relative.as_posix())
    return files


def _not_shipped(path: PurePosixPath) -> bool:
    return any(part in NOT_SHIPPED for part in path.parts) or path.suffix in NOT_SHIPPED_SUFFIXES


class Expected:
    """What pyproject.toml and the source tree say the distributions must contain."""

    def __init__(self, root: Path) -> None:
        pyproject = _load_toml((root / "pyproject.toml").read_text(encoding="utf-8"))
        self.root = root
        self.project: dict[str, Any] = pyproject["project"]
        hatch: dict[str, Any] = pyproject["tool"]["hatch"]
        self.name: str = self.project["name"]
        self.version = _version_of(root / hatch["version"]["path"])
        (package,) = hatch["build"]["targets"]["wheel"]["packages"]
        self.package_dir: Path = root / package
        self.import_name = self.package_dir.name
        self.files = source_files(self.package_dir)
        self.readme: str = (root / self.project["readme"]).read_text(encoding="utf-8")
        self.stem = f"{canonicalize_name(self.name).replace('-', '_')}-{self.version}"

    def requirements(self) -> set[tuple[str, str, str]]:
        """(extra or "", name, specifier) of every dependency, the extras' included."""
        rows = {_requirement_row(text, "") for text in self.project.get("dependencies", [])}
        extras: dict[str, list[str]] = self.project.get("optional-dependencies", {})
        for extra, texts in extras.items():
            rows |= {_requirement_row(text, extra) for text in texts}
        return rows

    def entry_points(self) -> dict[str, dict[str, str]]:
        groups: dict[str, dict[str, str]] = {
            group: dict(points) for group, points in self.project.get("entry-points", {}).items()
        }
        if "scripts" in self.project:
            groups["console_scripts"] = dict(self.project["scripts"])
        if "gui-scripts" in self.project:
            groups["gui_scripts"] = dict(self.project["gui-scripts"])
        return groups


def _version_of(path: Path) -> str:
    found = re.search(r"""^__version__\s*=\s*["']([^"']+)["']""", path.read_text(encoding="utf-8"), re.M)
    if found is None:
        raise SystemExit(f"no __version__ in {path}")
    return found.group(1)


def _requirement_row(text: str, extra: str) -> tuple[str, str, str]:
    requirement = Requirement(text)
    return (extra, canonicalize_name(requirement.name), str(requirement.specifier))


def _metadata_requirement_row(text: str) -> tuple[str, str, str]:
    """A ``Requires-Dist`` line as (extra, name, specifier); the extra is read from its marker."""
    requirement = Requirement(text)
    marker = str(requirement.marker) if requirement.marker else ""
    extra = re.search(r"""extra\s*==\s*["']([^"']+)["']""", marker)
    return (extra.group(1) if extra else "", canonicalize_name(requirement.name), str(requirement.specifier))


def _compare(problems: list[str], what: str, found: object, expected: object) -> None:
    if found != expected:
        problems.append(f"{what}: {found!r}, expected {expected!r}")


def check_metadata(
    problems: list[str], where: str, metadata: email.message.Message, expected: Expected
) -> None:
    """Core metadata (METADATA or PKG-INFO) against ``[project]``."""
    project = expected.project

    def field(name: str, wanted: object, *, many: bool = False) -> None:
        found = sorted(metadata.get_all(name, [])) if many else metadata.get(name)
        _compare(problems, f"{where} {name}", found, wanted)

    _compare(
        problems,
        f"{where} Name",
        canonicalize_name(metadata.get("Name", "")),
        canonicalize_name(expected.name),
    )
    field("Version", expected.version)
    field("Summary", project.get("description"))
    field("Requires-Python", project.get("requires-python"))
    found_rows = {_metadata_requirement_row(text) for text in metadata.get_all("Requires-Dist", [])}
    _compare(problems, f"{where} Requires-Dist", sorted(found_rows), sorted(expected.requirements()))
    field("Provides-Extra", sorted(project.get("optional-dependencies", {})), many=True)
    license_ = project.get("license")
    if isinstance(license_, str):
        field("License-Expression", license_)
    else:
        problems.append(f"pyproject's license is {license_!r}: expected an SPDX expression (a string)")
    for license_file in project.get("license-files", []):  # the notice MIT asks to go with every copy
        if license_file not in metadata.get_all("License-File", []):
            problems.append(f"{where} metadata names no License-File {license_file!r}")
    field("Classifier", sorted(project.get("classifiers", [])), many=True)
    urls: Mapping[str, str] = project.get("urls", {})
    field("Project-URL", sorted(f"{label}, {url}" for label, url in urls.items()), many=True)
    readme = str(project.get("readme", ""))
    field("Description-Content-Type", "text/markdown" if readme.endswith(".md") else "text/x-rst")
    description = str(metadata.get_payload() or "")
    if description.strip() != expected.readme.strip():
        problems.append(f"{where} long description is not {readme} ({len(description)} characters)")
    relative = relative_links(description)
    if relative:
        problems.append(
            f"{where} long description ({readme}) has relative links or images, which break on PyPI "
            f"(no repository around the page): {relative}; make them absolute, "
            f"{_absolute_link_hint(urls)}"
        )


def _absolute_link_hint(urls: Mapping[str, str]) -> str:
    """How to write a repository link absolutely, with this project's repository when it is on GitHub."""
    for url in urls.values():
        repository = re.fullmatch(r"https://github\.com/([^/]+/[^/]+?)/?", url)
        if repository:
            owner_name = repository.group(1)
            return (
                f"https://github.com/{owner_name}/blob/main/<file>[#anchor], "
                f"https://github.com/{owner_name}/tree/main/<folder>, and for an image "
                f"https://raw.githubusercontent.com/{owner_name}/main/<file>"
            )
    return "a file's or an image's full https:// address in the repository"


class _EntryPointsParser(configparser.ConfigParser):
    """entry_points.txt, whose names keep their case (ConfigParser lowers them)."""

    def optionxform(self, optionstr: str) -> str:
        return optionstr


def _parse_metadata(text: str) -> email.message.Message:
    return email.parser.Parser().parsestr(text)


def check_wheel(wheel: Path, expected: Expected) -> list[str]:
    """Problems of the wheel (empty: none): name, metadata, entry points, files, RECORD."""
    problems: list[str] = []
    _compare(problems, "wheel file name", wheel.name, f"{expected.stem}-py3-none-any.whl")
    dist_info = f"{expected.stem}.dist-info"
    with zipfile.ZipFile(wheel) as archive:
        names = [info.filename for info in archive.infolist() if not info.is_dir()]

        def read(name: str) -> str:
            return archive.read(name).decode("utf-8")

        required = [f"{dist_info}/{name}" for name in ("METADATA", "WHEEL", "RECORD", "entry_points.txt")]
        missing = [name for name in required if name not in names]
        if missing:
            return [f"wheel lacks {', '.join(missing)}"]
        check_metadata(problems, "wheel", _parse_metadata(read(f"{dist_info}/METADATA")), expected)
        wheel_info = _parse_metadata(read(f"{dist_info}/WHEEL"))
        _compare(problems, "WHEEL Root-Is-Purelib", wheel_info.get("Root-Is-Purelib"), "true")
        _compare(problems, "WHEEL Tag", wheel_info.get_all("Tag", []), ["py3-none-any"])
        parser = _EntryPointsParser(delimiters=("=",), interpolation=None)
        parser.read_string(read(f"{dist_info}/entry_points.txt"))
        found_points = {group: dict(parser[group]) for group in parser.sections()}
        _compare(problems, "wheel entry points", found_points, expected.entry_points())
        recorded = {line.split(",")[0] for line in read(f"{dist_info}/RECORD").splitlines() if line}
        unlisted, absent_listed = _difference(names, recorded)
        if unlisted or absent_listed:
            problems.append(f"RECORD does not list {unlisted} and lists absent {absent_listed}")
    prefix = f"{expected.import_name}/"
    shipped = {name[len(prefix) :] for name in names if name.startswith(prefix)}
    others = sorted(name for name in names if not name.startswith((prefix, f"{dist_info}/")))
    absent = sorted(expected.files - shipped)
    extra = sorted(shipped - expected.files)
    if absent:
        source = expected.package_dir.relative_to(expected.root).as_posix()
        problems.append(f"wheel lacks {len(absent)} file(s) of {source}/: {absent}")
    if extra or others:
        problems.append(f"wheel holds files that are not in the package folder: {sorted(extra) + others}")
    if "py.typed" not in shipped:
        problems.append("wheel lacks py.typed (the Typing :: Typed classifier promises it)")
    return problems


def _difference(found: Iterable[str], expected: Iterable[str]) -> tuple[list[str], list[str]]:
    found_set, expected_set = set(found), set(expected)
    return sorted(found_set - expected_set), sorted(expected_set - found_set)


def check_sdist(sdist: Path, expected: Expected) -> list[str]:
    """Problems of the sdist (empty: none): name, PKG-INFO, pyproject, README, package files, no caches."""
    problems: list[str] = []
    _compare(problems, "sdist file name", sdist.name, f"{expected.stem}.tar.gz")
    top = expected.stem
    with tarfile.open(sdist) as archive:
        members = [member for member in archive.getmembers() if member.isfile()]
        names = {PurePosixPath(member.name) for member in members}
        outside = sorted(str(name) for name in names if name.parts[0] != top)
        if outside:
            problems.append(f"sdist files outside {top}/: {outside}")
        inner = {PurePosixPath(*name.parts[1:]) for name in names if name.parts[0] == top}
        for needed in ("PKG-INFO", "pyproject.toml", expected.project["readme"]):
            if PurePosixPath(needed) not in inner:
                problems.append(f"sdist lacks {needed}")
        if PurePosixPath("PKG-INFO") in inner:
            extracted = archive.extractfile(f"{top}/PKG-INFO")
            assert extracted is not None
            check_metadata(
                problems, "sdist PKG-INFO", _parse_metadata(extracted.read().decode("utf-8")), expected
            )
    package = PurePosixPath(expected.package_dir.relative_to(expected.root).as_posix())
    shipped = {name.relative_to(package).as_posix() for name in inner if package in name.parents}
    absent = sorted(expected.files - shipped)
    if absent:
        problems.append(f"sdist lacks {len(absent)} file(s) of {package}: {absent}")
    unwanted = sorted(str(name) for name in inner if _not_shipped(name))
    if unwanted:
        problems.append(f"sdist holds environments or caches: {unwanted[:10]}")
    return problems


def _one(folder: Path, pattern: str) -> Path:
    found = sorted(folder.glob(pattern))
    if len(found) != 1:
        raise SystemExit(f"expected one {pattern} in {folder}, found {[path.name for path in found]}")
    return found[0]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.check_dist", description=DESCRIPTION)
    parser.add_argument("dist", type=Path, help="the folder holding one .whl and one .tar.gz")
    parser.add_argument("--root", type=Path, default=ROOT, help="the project (default: this checkout)")
    args = parser.parse_args(argv)
    expected = Expected(Path(args.root).resolve())
    wheel, sdist = _one(args.dist, "*.whl"), _one(args.dist, "*.tar.gz")
    problems = [f"{wheel.name}: {p}" for p in check_wheel(wheel, expected)]
    problems += [f"{sdist.name}: {p}" for p in check_sdist(sdist, expected)]
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    extras = ", ".join(sorted(expected.project.get("optional-dependencies", {})))
    readme = expected.project["readme"]
    print(
        f"{wheel.name}: {len(expected.files)} files of {expected.import_name}/ (py.typed included) and "
        f"nothing else; {sdist.name}: the same files, PKG-INFO, pyproject.toml, {readme}\n"
        f"metadata of both: {expected.name} {expected.version}, requires-python "
        f"{expected.project['requires-python']}, {len(expected.requirements())} requirements, extras "
        f"{extras}, license {expected.project['license']}, {readme} as the "
        f"long description (no relative links), entry points {', '.join(sorted(expected.entry_points()))}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
