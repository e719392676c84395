"""The code blocks the docs mark as tested: ``<!-- test: NAME -->`` right before a fenced block.

Tests run the block itself (``exec`` of the page's text), so a doc example cannot drift from
what the library does.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

__all__ = ["ROOT", "doc_block", "run_doc_block"]


def doc_block(page: str, name: str) -> str:
    """The fenced block marked ``<!-- test: name -->`` in ``page`` (relative to the repository root)."""
    text = (ROOT / page).read_text(encoding="utf-8")
    found = re.search(rf"<!-- test: {re.escape(name)} -->\s*```[a-z]*\n(.*?)```", text, flags=re.DOTALL)
    if found is None:
        raise LookupError(f"{page} has no block marked <!-- test: {name} -->")
    return found.group(1)


def run_doc_block(page: str, name: str) -> dict[str, Any]:
    """Execute the block as a module would run; its globals."""
    namespace: dict[str, Any] = {"__name__": f"doc_block_{name.replace('-', '_')}"}
    exec(compile(doc_block(page, name), f"{page}:{name}", "exec"), namespace)
    return namespace
