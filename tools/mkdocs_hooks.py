"""mkdocs hooks of the reference site (mkdocs.yml ``hooks:``): fence tags, outside links, Sphinx roles.

A code fence's info string may carry a word for the docs tests after the language (```` ```python
fragment ````, ```` ```python mcp2 ````: tests/doc_blocks.py); Markdown takes one word there, so the
site sees the language alone.

A guide page links to files beside docs/ relatively (``../CHANGELOG.md``, ``../tests/...``), which
is right on GitHub; the site holds only docs/, so such a link becomes the file's (or folder's)
address on GitHub, under pyproject's Homepage and the ``main`` branch. A link whose target does not
exist in the checkout is left as written, for mkdocs' link validation to report (the build is
strict).

The docstrings are prose with Sphinx roles (``:func:`call_tool```, ``:class:`~mcp_tasks_compat.core.Task```),
which Markdown renders as ``:func:`` and a code span. On the reference pages each role becomes its
code span (``~`` keeps the last part), linked to the object's entry where the site has one: the
name is looked up in the module the docstring's object lives in (Python's own objects, imported
from the installed package), from the object outwards, and handed to mkdocs-autorefs as an
optional reference under its canonical path (mkdocstrings registers an entry under its canonical
path too); a name the site does not render (a private helper, the SDK's) stays plain code.
A repository tool, not in the wheel.
"""

from __future__ import annotations

import html
import importlib
import re
from bisect import bisect_right
from pathlib import Path, PurePosixPath
from typing import Any, Final

ROOT: Final = Path(__file__).resolve().parent.parent
DOCS: Final = ROOT / "docs"
BRANCH: Final = "main"

# [text](target) and [text](target "title"); images too. Code is skipped by the caller.
_INLINE_LINK: Final = re.compile(r"(\]\()(\s*)([^)\s#]+)(#[^)\s]*)?")
_FENCE: Final = re.compile(r"^ {0,3}(`{3,}|~{3,}).*?^ {0,3}\1[^\n]*$", re.DOTALL | re.MULTILINE)
_CODE_SPAN: Final = re.compile(r"(`+).+?\1", re.DOTALL)
_FENCE_TAGS: Final = re.compile(r"^( {0,3}(?:`{3,}|~{3,})[\w+#.-]+)[ \t]+[\w -]+$", re.MULTILINE)


def repository() -> str:
    """pyproject's ``Homepage`` (the GitHub repository), read without a TOML parser (Python 3.10)."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    found = re.search(r'^Homepage = "(https://github\.com/[^"]+?)/?"$', text, flags=re.MULTILINE)
    if found is None:
        raise RuntimeError("pyproject.toml's [project.urls] Homepage is not a GitHub repository")
    return found.group(1)


def outside_link(page_src: str, target: str) -> str | None:
    """The GitHub address of a relative ``target`` (read from docs/``page_src``) that leaves docs/.

    None when the target is not relative, stays inside docs/, or names nothing in the checkout.
    """
    if re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", target) or target.startswith("/"):
        return None
    path = (DOCS / PurePosixPath(page_src).parent / target).resolve()
    if path == DOCS or DOCS in path.parents or ROOT not in path.parents or not path.exists():
        return None
    kind = "tree" if path.is_dir() else "blob"
    return f"{repository()}/{kind}/{BRANCH}/{path.relative_to(ROOT).as_posix()}"


def rewrite_outside_links(markdown: str, page_src: str) -> str:
    """``markdown`` with every relative link that leaves docs/ pointing at GitHub (code left alone)."""

    def link(match: re.Match[str]) -> str:
        address = outside_link(page_src, match.group(3))
        if address is None:
            return match.group(0)
        return f"{match.group(1)}{match.group(2)}{address}{match.group(4) or ''}"

    def prose(text: str) -> str:
        pieces: list[str] = []
        last = 0
        for code in _CODE_SPAN.finditer(text):
            pieces += [_INLINE_LINK.sub(link, text[last : code.start()]), code.group(0)]
            last = code.end()
        return "".join([*pieces, _INLINE_LINK.sub(link, text[last:])])

    pieces: list[str] = []
    last = 0
    for fence in _FENCE.finditer(markdown):
        pieces += [prose(markdown[last : fence.start()]), fence.group(0)]
        last = fence.end()
    return "".join([*pieces, prose(markdown[last:])])


def strip_fence_tags(markdown: str) -> str:
    """``markdown`` with each code fence's info string cut to its language (```` ```python mcp1 ```` ->
    ```` ```python ````)."""
    return _FENCE_TAGS.sub(r"\1", markdown)


_ROLE: Final = re.compile(r":(?:py:)?(?:func|class|meth|attr|data|exc|mod|obj|const):<code>(.*?)</code>")
_OBJECT_ID: Final = re.compile(r'<h[1-6] id="(mcp_tasks_compat(?:\.\w+)*)"')
_DIRECTIVE: Final = re.compile(r"^::: *(mcp_tasks_compat(?:\.\w+)*) *$", re.MULTILINE)
_MISSING: Final = object()
_LITERAL_MARKER: Final = re.compile(r"(?<=\S)::</p>(?=\s*<div class=\"highlight\">)")


def lookup(path: str) -> object:
    """The object a dotted path names (its longest importable module, then attributes), or ``_MISSING``."""
    parts = path.split(".")
    for split in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:split]))
        except Exception:  # not a module; or one that cannot be imported here (the other major's adapter)
            continue
        for attribute in parts[split:]:
            try:
                found = getattr(found, attribute)
            except Exception:  # a module __getattr__ may refuse in its own way
                return _MISSING
        return found
    return _MISSING


def canonical(path: str) -> str:
    """Where the object at ``path`` is defined: ``mcp_tasks_compat._client.task_run.TaskRun.result``
    for ``mcp_tasks_compat.client.TaskRun.result``; ``path`` itself when nothing along it is a class
    or function of this package."""
    parts = path.split(".")
    for end in range(len(parts), 1, -1):
        found = lookup(".".join(parts[:end]))
        module, qualname = getattr(found, "__module__", None), getattr(found, "__qualname__", None)
        if (
            isinstance(module, str)
            and isinstance(qualname, str)
            and module.startswith("mcp_tasks_compat")
            and lookup(f"{module}.{qualname}") is found  # not made at run time (TaskClientSession)
        ):
            return ".".join([module, qualname, *parts[end:]])
    return path


def resolve_role(target: str, scope: str) -> str | None:
    """The identifier of a role's ``target`` read in the docstring of the object at ``scope``."""
    name = target.lstrip("~!").lstrip(".")
    if name.startswith("mcp_tasks_compat.") or name == "mcp_tasks_compat":
        return canonical(name) if lookup(name) is not _MISSING else None
    scopes = [".".join(scope.split(".")[:end]) for end in range(scope.count(".") + 1, 0, -1)]
    home = getattr(lookup(scope), "__module__", None)
    if isinstance(home, str) and home.startswith("mcp_tasks_compat"):
        scopes += [".".join(home.split(".")[:end]) for end in range(home.count(".") + 1, 0, -1)]
    for outer in scopes:
        if lookup(f"{outer}.{name}") is not _MISSING:
            return canonical(f"{outer}.{name}")
    return None


def link_roles(content: str, page_module: str) -> str:
    """``content`` (a reference page's HTML) with each Sphinx role a code span, linked where it resolves."""
    objects = [(match.start(), match.group(1)) for match in _OBJECT_ID.finditer(content)]
    starts = [start for start, _ in objects]

    def role(match: re.Match[str]) -> str:
        target = html.unescape(match.group(1))
        shown = target.lstrip("~!").lstrip(".")
        if target.startswith("~"):
            shown = shown.rsplit(".", 1)[-1]
        code = f"<code>{html.escape(shown)}</code>"
        before = bisect_right(starts, match.start())
        identifier = resolve_role(target, objects[before - 1][1] if before else page_module)
        if identifier is None:
            return code
        return f'<autoref identifier="{html.escape(identifier)}" optional>{code}</autoref>'

    return _ROLE.sub(role, content)


def cut_literal_markers(content: str) -> str:
    """reStructuredText's ``text::`` before a code block reads ``text:`` (the block is already code)."""
    return _LITERAL_MARKER.sub(":</p>", content)


def on_page_content(html_text: str, *, page: Any, config: Any, files: Any) -> str:
    """mkdocs event: a page's HTML, before mkdocs-autorefs resolves the references in it."""
    directive = _DIRECTIVE.search(page.markdown or "")
    if directive is None:
        return html_text
    return cut_literal_markers(link_roles(html_text, directive.group(1)))


def on_page_markdown(markdown: str, *, page: Any, config: Any, files: Any) -> str:
    """mkdocs event: before a page is rendered."""
    return rewrite_outside_links(strip_fence_tags(markdown), page.file.src_uri)
