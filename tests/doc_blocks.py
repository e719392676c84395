"""The ```` ```python ```` blocks of README.md and docs/*.md, and how tests run them.

A block's fence info string says what it is (``tests/test_doc_examples.py`` explains the rules):

* ```` ```python ````: a complete example. ``<!-- test: NAME -->`` on the line before names the
  test that runs it (``run_doc_block(page, "NAME")``); a block without a name is run as it stands.
* ```` ```python fragment ````: part of something larger; compiled only.
* ```` ```python mcp1 ```` / ```` ```python mcp2 ````: runs only where that SDK major is installed.

Tests run the block's own text (``exec`` of the page), so a doc example cannot drift from what the
library does.
"""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

FRAGMENT = "fragment"
MAJOR_TAGS = {"mcp1": 1, "mcp2": 2}
KNOWN_TAGS = frozenset({FRAGMENT, *MAJOR_TAGS})
PYTHON_LANGUAGES = frozenset({"python", "py", "python3"})

__all__ = [
    "FRAGMENT",
    "KNOWN_TAGS",
    "MAJOR_TAGS",
    "ROOT",
    "PythonBlock",
    "compile_block",
    "doc_block",
    "doc_pages",
    "parse_python_blocks",
    "python_blocks",
    "run_doc_block",
    "run_doc_block_async",
]

_FENCE = re.compile(r"^(`{3,}|~{3,})(.*)$")
_TEST_NAME = re.compile(r"^<!-- test: (\S+) -->$")


@dataclass(frozen=True)
class PythonBlock:
    """One fenced Python block: where it is, its tags, its test name (if any) and its code."""

    page: str
    line: int  # of the opening fence, 1-based
    tags: frozenset[str]
    name: str | None
    source: str

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def is_fragment(self) -> bool:
        return FRAGMENT in self.tags

    @property
    def major(self) -> int | None:
        """The SDK major the block needs, or ``None`` for both."""
        majors = [MAJOR_TAGS[tag] for tag in self.tags if tag in MAJOR_TAGS]
        return majors[0] if len(majors) == 1 else None


def parse_python_blocks(page: str, text: str) -> list[PythonBlock]:
    """The Python blocks of one Markdown text (fences of any other language are skipped whole)."""
    lines = text.splitlines()
    blocks: list[PythonBlock] = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        fence, info = opening.group(1), opening.group(2).split()
        end = index + 1
        while end < len(lines) and not (
            lines[end].startswith(fence) and lines[end].strip() == fence[0] * len(lines[end].strip())
        ):
            end += 1
        if info and info[0] in PYTHON_LANGUAGES:
            before = lines[index - 1].strip() if index > 0 else ""
            named = _TEST_NAME.match(before)
            source = "".join(f"{line}\n" for line in lines[index + 1 : end])
            blocks.append(
                PythonBlock(
                    page=page,
                    line=index + 1,
                    tags=frozenset(info[1:]),
                    name=named.group(1) if named else None,
                    source=source,
                )
            )
        index = end + 1
    return blocks


def doc_pages() -> list[str]:
    """Every page whose Python blocks the rules cover, relative to the repository root."""
    return ["README.md", *sorted(path.relative_to(ROOT).as_posix() for path in (ROOT / "docs").glob("*.md"))]


def python_blocks(pages: Iterable[str] | None = None) -> list[PythonBlock]:
    """The Python blocks of ``pages`` (default: :func:`doc_pages`)."""
    return [
        block
        for page in (doc_pages() if pages is None else pages)
        for block in parse_python_blocks(page, (ROOT / page).read_text(encoding="utf-8"))
    ]


def doc_block(page: str, name: str) -> str:
    """The code of the block marked ``<!-- test: name -->`` in ``page`` (relative to the repository root)."""
    found = [block for block in python_blocks([page]) if block.name == name]
    if not found:
        raise LookupError(f"{page} has no Python block marked <!-- test: {name} -->")
    return found[0].source


def compile_block(source: str, filename: str, *, top_level_await: bool = False) -> Any:
    """The block compiled as a module (with ``top_level_await``, as the body of an ``async def`` may be)."""
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT if top_level_await else 0
    return compile(source, filename, "exec", flags=flags, dont_inherit=True)


def _namespace(name: str, names: Mapping[str, Any] | None) -> dict[str, Any]:
    return {"__name__": f"doc_block_{name.replace('-', '_').replace('.', '_')}", **(names or {})}


def run_doc_block(page: str, name: str, names: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Execute the block as a module would run (not as ``__main__``), ``names`` predefined; its globals."""
    namespace = _namespace(name, names)
    exec(compile_block(doc_block(page, name), f"{page}:{name}"), namespace)
    return namespace


async def run_doc_block_async(page: str, name: str, names: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Execute a block written as the body of an ``async def`` (top-level ``await``, ``async with``)."""
    namespace = _namespace(name, names)
    code = compile_block(doc_block(page, name), f"{page}:{name}", top_level_await=True)
    outcome = eval(code, namespace)
    if inspect.iscoroutine(outcome):
        await outcome
    return namespace
