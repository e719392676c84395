"""The rules header of ``_server/__init__.py`` names every module of the server's task protocol.

As for the engine (``tests/engine/test_rules_header.py``): the header is what a newcomer reads
first, and a module added without a line there is a concern nobody was told about. Each module is
named as ``name`` at the start of a bullet of the module list, in the package docstring, read
with ``ast`` (nothing imported).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import mcp_tasks_compat._server

SERVER = Path(mcp_tasks_compat._server.__file__).resolve().parent


def server_modules() -> list[str]:
    """Every module under ``_server/`` but the header's own."""
    return sorted(path.stem for path in SERVER.glob("*.py") if path.name != "__init__.py")


def named_modules() -> set[str]:
    """The modules the header's module list names (each bullet starts with one)."""
    docstring = ast.get_docstring(ast.parse((SERVER / "__init__.py").read_text(encoding="utf-8")))
    assert docstring is not None, "_server/__init__.py has no docstring"
    section = docstring.partition("One concern per module")[2]
    return set(re.findall(r"^\* ``(\w+)``", section, re.MULTILINE))


def test_the_server_layer_has_the_modules_this_test_expects_to_find() -> None:
    """The walk finds the modules (so an empty list cannot pass the tests below)."""
    assert {"caller", "service_2025", "service_2026", "listen_2026", "tool_input"} <= set(server_modules())
    assert not any(SERVER.glob("*/__init__.py")), "_server/ grew a subpackage: walk it here too"


def test_the_rules_header_names_every_server_module() -> None:
    missing = sorted(set(server_modules()) - named_modules())
    assert missing == [], f"_server/__init__.py's docstring does not name: {missing}"


def test_the_rules_header_names_no_module_that_is_gone() -> None:
    """A module named there that no longer exists (renamed, merged) misleads as much as a missing one."""
    stale = sorted(named_modules() - set(server_modules()))
    assert stale == [], f"_server/__init__.py's docstring names modules that do not exist: {stale}"
