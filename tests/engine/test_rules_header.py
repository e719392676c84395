"""The rules header of ``_engine/__init__.py`` names every module of the engine, ``stores/`` included.

The header is what a newcomer reads first; a module added without a line there is a concern
nobody was told about. Each module is named as ``name`` (``engine``, ``stores.sqlite``), in the
package docstring, read with ``ast`` (nothing imported).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import mcp_tasks_compat._engine

ENGINE = Path(mcp_tasks_compat._engine.__file__).resolve().parent


def engine_modules() -> list[str]:
    """Every module under ``_engine/`` as the header names it (``stores`` for ``stores/__init__.py``)."""
    names: list[str] = []
    for path in sorted(ENGINE.rglob("*.py")):
        parts = list(path.relative_to(ENGINE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        if parts:  # the header's own module is the header
            names.append(".".join(parts))
    return names


def header() -> str:
    docstring = ast.get_docstring(ast.parse((ENGINE / "__init__.py").read_text(encoding="utf-8")))
    assert docstring is not None, "_engine/__init__.py has no docstring"
    return docstring


def test_the_engine_has_the_modules_this_test_expects_to_find() -> None:
    """The walk finds the modules (so an empty list cannot pass the test below)."""
    modules = engine_modules()
    assert {"engine", "writer", "stores", "stores.contract", "stores.redis_scripts"} <= set(modules)


def test_the_rules_header_names_every_engine_module() -> None:
    text = header()
    missing = [name for name in engine_modules() if f"``{name}``" not in text]
    assert missing == [], f"_engine/__init__.py's docstring does not name: {missing}"


def test_the_rules_header_names_no_module_that_is_gone() -> None:
    """A module named there that no longer exists (renamed, merged) misleads as much as a missing
    one: each bullet of the module list starts with a module, and every ``stores.*`` is one."""
    text = header()
    section = text.partition("One concern per module")[2]
    named = set(re.findall(r"^\* ``([\w.]+)``", section, re.MULTILINE))
    named |= set(re.findall(r"``(stores\.\w+)``", text))
    assert len(named) > 10  # the patterns still match the header's form
    stale = sorted(named - set(engine_modules()))
    assert stale == [], f"_engine/__init__.py's docstring names modules that do not exist: {stale}"
