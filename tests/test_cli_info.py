"""``python -m mcp_tasks_compat info``, and the public modules' ``__all__``."""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import inspect
import json
import re
import subprocess
import sys
from types import ModuleType

import pytest
from packaging.version import Version

from mcp_tasks_compat.__main__ import main
from mcp_tasks_compat._version import __version__

INSTALLED = Version(importlib.metadata.version("mcp"))
BOTH = ["2025-11-25", "2026-07-28"]
EXPECTED_DIALECTS = ["2025-11-25"] if INSTALLED.major == 1 else BOTH


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcp_tasks_compat", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_info_json_describes_the_installed_sdk() -> None:
    result = run_cli("info", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert {"mcp_version", "major", "client_dialects", "server_dialects", "opt_ins"} <= set(data)
    assert Version(data["mcp_version"]) == INSTALLED
    assert data["major"] == INSTALLED.major
    assert data["client_dialects"] == EXPECTED_DIALECTS
    assert data["server_dialects"] == EXPECTED_DIALECTS
    if INSTALLED.major == 1:
        assert data["opt_ins"] == []
    else:
        assert "dialect='2026-07-28'" in data["opt_ins"]
        assert "MCPServer" in data["opt_ins"]


def test_info_prints_a_table_for_people(capsys: pytest.CaptureFixture[str]) -> None:
    # In-process (the JSON test above already covers ``python -m``): detection is cached here.
    assert main(["info"]) == 0
    output = capsys.readouterr().out
    rows = dict(re.split(r"\s{2,}", line.strip(), maxsplit=1) for line in output.splitlines() if line.strip())
    assert rows["mcp-tasks-compat"] == __version__
    assert rows["mcp"] == f"{INSTALLED} (major {INSTALLED.major})"
    assert rows["client dialects"] == ", ".join(EXPECTED_DIALECTS)
    assert rows["server dialects"] == ", ".join(EXPECTED_DIALECTS)


def test_no_command_is_a_usage_error() -> None:
    result = run_cli()
    assert result.returncode == 2
    assert "usage: mcp-tasks-compat" in result.stderr


# --- __all__ ------------------------------------------------------------------------------------

PUBLIC = [
    "mcp_tasks_compat",
    "mcp_tasks_compat.errors",
    "mcp_tasks_compat.dialects",
    "mcp_tasks_compat.server",
    "mcp_tasks_compat.client",
    "mcp_tasks_compat.core",
    "mcp_tasks_compat.core._model",
    "mcp_tasks_compat.core._lifecycle",
    "mcp_tasks_compat.core._codec_2025",
    "mcp_tasks_compat.core._codec_2026",
    "mcp_tasks_compat._detect",
    "mcp_tasks_compat._engine",
    "mcp_tasks_compat._cli",
    "mcp_tasks_compat.__main__",
]
# Modules whose every public class and function must be listed (the foundation's own).
COMPLETE = {
    "mcp_tasks_compat.errors",
    "mcp_tasks_compat.dialects",
    "mcp_tasks_compat.core._model",
    "mcp_tasks_compat.core._lifecycle",
    "mcp_tasks_compat.core._codec_2025",
    "mcp_tasks_compat.core._codec_2026",
    "mcp_tasks_compat._detect",
}


def existing(names: list[str]) -> list[str]:
    return [name for name in names if importlib.util.find_spec(name) is not None]


def load(name: str) -> ModuleType:
    return importlib.import_module(name)


@pytest.mark.parametrize("name", existing(PUBLIC))
def test_all_lists_only_existing_names_once(name: str) -> None:
    module = load(name)
    exported = list(getattr(module, "__all__", None) or [])
    assert exported, f"{name} has no __all__"
    assert len(exported) == len(set(exported)), f"{name}.__all__ repeats a name"
    missing = [item for item in exported if not hasattr(module, item)]
    assert missing == [], f"{name}.__all__ lists names that do not exist: {missing}"


@pytest.mark.parametrize("name", sorted(COMPLETE))
def test_all_lists_every_public_class_and_function(name: str) -> None:
    module = load(name)
    defined_here = [
        attribute
        for attribute, value in vars(module).items()
        if not attribute.startswith("_")
        and (inspect.isclass(value) or inspect.isfunction(value))
        and getattr(value, "__module__", None) == name
    ]
    assert sorted(set(defined_here) - set(module.__all__)) == []


def test_the_top_level_package_reexports_what_it_lists() -> None:
    import mcp_tasks_compat
    from mcp_tasks_compat import errors

    error_classes = {name for name in errors.__all__ if name.endswith("Error")}
    assert error_classes <= set(mcp_tasks_compat.__all__)
