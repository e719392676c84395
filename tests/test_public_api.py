"""The 1.0 public surface: what is public, how wide it is, where each name lives, and the old names.

A module is public when no part of its dotted path after ``mcp_tasks_compat`` starts with ``_``;
its public names are its ``__all__`` (docs/stability.md says the same). The surface is counted as
issue 35 counted it (every public module's ``__all__``, deduplicated), so a new name has to be
weighed against the bound; each lives in one home module and is re-exported, if at all, once
from the top-level package. Each pre-1.0 name still answers, with a ``DeprecationWarning`` that
names its replacement, and CHANGELOG.md's "Upgrading to 1.0" lists it.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import pkgutil
import re
import warnings
from pathlib import Path

import pytest

import mcp_tasks_compat
from mcp_tasks_compat import _deprecated

ROOT = Path(__file__).resolve().parents[1]
MAX_PUBLIC_NAMES = 80
TOP = "mcp_tasks_compat"


def public_modules() -> list[str]:
    found = [TOP]
    for info in pkgutil.walk_packages(mcp_tasks_compat.__path__, f"{TOP}."):
        if not any(part.startswith("_") for part in info.name.split(".")[1:]):
            found.append(info.name)
    return sorted(found)


def exported(module: str) -> list[str]:
    return list(getattr(importlib.import_module(module), "__all__", []))


def surface() -> dict[str, list[str]]:
    """Each public name, with the public modules that export it."""
    names: dict[str, list[str]] = {}
    for module in public_modules():
        for name in exported(module):
            names.setdefault(name, []).append(module)
    return names


def test_the_public_modules_are_the_ones_the_docs_name() -> None:
    assert public_modules() == [
        "mcp_tasks_compat",
        "mcp_tasks_compat.client",
        "mcp_tasks_compat.core",
        "mcp_tasks_compat.dialects",
        "mcp_tasks_compat.errors",
        "mcp_tasks_compat.integrations",
        "mcp_tasks_compat.integrations.openai_agents",
        "mcp_tasks_compat.integrations.pydantic_ai",
        "mcp_tasks_compat.server",
        "mcp_tasks_compat.testing",
    ]


def test_the_surface_is_at_most_80_names() -> None:
    names = surface()
    print(f"public names: {len(names)} (bound {MAX_PUBLIC_NAMES})")
    assert len(names) <= MAX_PUBLIC_NAMES, sorted(names)


def test_a_name_lives_in_one_module_and_at_most_the_top_level_too() -> None:
    for name, modules in surface().items():
        homes = [module for module in modules if module != TOP]
        assert len(homes) <= 1, f"{name} is exported from {modules}"


def test_every_public_name_has_a_docstring_of_its_own() -> None:
    """Read from the source (nothing imported): a class's or function's docstring, or the string
    right after a constant's assignment; ``if TYPE_CHECKING:`` stubs count (names made on first use)."""
    undocumented = [
        f"{module}.{name}"
        for module in public_modules()
        for name in exported(module)
        if not docstring_of(module, name)
    ]
    assert undocumented == []


def test_every_public_name_has_an_example() -> None:
    """In its docstring (an ``Example`` or a ``::`` block), or used in a doc page's Python block
    (which tests/test_doc_examples.py runs or compiles)."""
    from tests.doc_blocks import python_blocks

    blocks = "\n".join(block.source for block in python_blocks())
    without = [
        f"{module}.{name}"
        for module in public_modules()
        for name in exported(module)
        if not re.search(rf"\b{re.escape(name)}\b", blocks)
        and not re.search(r"Example|::\n|>>>", docstring_of(module, name) or "")
    ]
    assert without == []


def _module_tree(module: str) -> ast.Module:
    spec = importlib.util.find_spec(module)
    assert spec is not None
    assert spec.origin is not None
    return ast.parse(Path(spec.origin).read_text(encoding="utf-8"))


def _statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """``body`` with the statements of its ``if`` blocks (``if TYPE_CHECKING:``) spliced in."""
    flat: list[ast.stmt] = []
    for statement in body:
        flat.append(statement)
        if isinstance(statement, ast.If):
            flat.extend(_statements(statement.body))
    return flat


def docstring_of(module: str, name: str, depth: int = 0) -> str | None:
    """``name``'s docstring in ``module``, following ``from X import name`` to its home."""
    statements = _statements(_module_tree(module).body)
    for index, statement in enumerate(statements):
        if (
            isinstance(statement, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and statement.name == name
        ):
            doc = ast.get_docstring(statement)
            if doc:
                return doc
        targets: list[ast.expr] = []
        if isinstance(statement, ast.Assign):
            targets = statement.targets
        elif isinstance(statement, ast.AnnAssign):
            targets = [statement.target]
        if any(isinstance(target, ast.Name) and target.id == name for target in targets):
            following = statements[index + 1] if index + 1 < len(statements) else None
            if (
                isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
            ):
                return following.value.value
    if depth > 5:
        return None
    package = module if _is_package(module) else module.rpartition(".")[0]
    for statement in statements:
        if isinstance(statement, ast.ImportFrom) and any(alias.name == name for alias in statement.names):
            target = importlib.util.resolve_name("." * statement.level + (statement.module or ""), package)
            if statement.level == 0:
                target = statement.module or ""
            if target.startswith(TOP):
                found = docstring_of(target, name, depth + 1)
                if found:
                    return found
    return None


def _is_package(module: str) -> bool:
    spec = importlib.util.find_spec(module)
    return spec is not None and spec.submodule_search_locations is not None


# --- the pre-1.0 names ---------------------------------------------------------------------------

ALIASES = {
    "mcp_tasks_compat.client": ["session_kwargs", "with_tasks", "TaskSessionWrapper", "tasks_extension"],
    "mcp_tasks_compat.server": ["current_task", "ActiveLimitReached", "StoreConflict", "TaskSupport"],
    "mcp_tasks_compat.testing": ["connect_in_memory", "connect_stdio", "connect_http", "SessionSetupError"],
}


def _alias_table(module: str) -> dict[str, _deprecated.Alias]:
    table: dict[str, _deprecated.Alias] = importlib.import_module(module)._ALIASES  # pyright: ignore
    return table


@pytest.mark.parametrize("module", sorted(ALIASES))
def test_an_old_name_warns_naming_its_replacement_and_still_works(module: str) -> None:
    loaded = importlib.import_module(module)
    table = _alias_table(module)
    assert set(ALIASES[module]) <= set(table)
    for name, alias in table.items():
        assert name not in loaded.__all__
        with pytest.warns(DeprecationWarning, match=f"{module}.{name} is deprecated") as caught:
            value = getattr(loaded, name)
        message = str(caught[0].message)
        assert (
            f"{module}.{name} is deprecated since 1.0 and is removed in {_deprecated.REMOVED_IN}" in message
        )
        assert alias.replacement in message
        assert caught[0].filename == __file__  # the warning points at the line that used the name
        assert value is alias.value()


def test_the_old_session_forms_are_the_1_0_ones_underneath() -> None:
    from mcp_tasks_compat import client

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert client.tasks_extension is client.TaskClientSession.extension  # pyright: ignore


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    from mcp_tasks_compat import client, server, testing

    for module in (client, server, testing):
        with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
            module.no_such_name  # pyright: ignore  # noqa: B018


def test_the_changelog_lists_every_old_name_with_its_replacement() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    section = changelog.split("### Upgrading to 1.0", 1)[1].split("\n## ", 1)[0]
    for module in sorted(ALIASES):
        for name in _alias_table(module):
            row = f"| `{module}.{name}` |"
            assert row in section, f"CHANGELOG.md 'Upgrading to 1.0' lacks a row for {module}.{name}"


def test_stability_md_states_the_surface_and_the_sdk_matrix_as_they_are() -> None:
    """The figures docs/stability.md quotes: the count of names, the mcp range and the tested releases."""
    page = (ROOT / "docs" / "stability.md").read_text(encoding="utf-8")
    assert f"**{len(surface())} public names**" in page
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    requirement = re.search(r'"mcp(>=[^"]+)"', pyproject)
    assert requirement is not None
    assert f"`{requirement.group(1)}`" in page
    from mcp_tasks_compat.testing import nox_sdk_versions

    assert ", ".join(nox_sdk_versions()) in page
    from mcp_tasks_compat._testkit.matrix import SDK_VERSIONS_DATE

    assert f"checked against PyPI on {SDK_VERSIONS_DATE}" in page
    version = re.search(
        r'__version__ = "(\d+\.\d+)', (ROOT / "compat/mcp_tasks_compat/_version.py").read_text()
    )
    assert version is not None
    assert f"| {version.group(1)}.x |" in page


OLD_SESSION_FORMS = ("session_kwargs", "with_tasks", "TaskSessionWrapper", "tasks_extension", "current_task")


def _user_facing_files() -> list[Path]:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    examples = sorted((ROOT / "examples").rglob("*.py"))
    return [*pages, *examples]


def test_readme_docs_and_examples_use_only_the_1_0_names() -> None:
    """No page or example imports a deprecated alias or names a pre-1.0 session form (stability.md
    quotes the warning one of them raises: that quote is the one exception)."""
    aliases = {(module, name) for module in ALIASES for name in _alias_table(module)}
    found: list[str] = []
    for path in _user_facing_files():
        text = path.read_text(encoding="utf-8")
        if path.name == "stability.md":
            text = text.replace("mcp_tasks_compat.client.session_kwargs is deprecated", "")
            text = text.replace("ClientSession(read, write, **session_kwargs())", "")
        for name in OLD_SESSION_FORMS:
            if re.search(rf"(?<![\w.:]){name}\b", text):
                found.append(f"{path.relative_to(ROOT)}: {name}")
        for module, names in re.findall(r"from (mcp_tasks_compat[\w.]*) import \(?([\w ,\n]+)\)?", text):
            for name in re.split(r"[\s,]+", names.strip()):
                if (module, name) in aliases:
                    found.append(f"{path.relative_to(ROOT)}: from {module} import {name}")
    assert found == []
