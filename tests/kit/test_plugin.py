"""The plugin as a downstream project meets it: a fresh pytest run in a project of its own (pytester).

Each run is a subprocess of this interpreter, so the plugin arrives the way it does downstream:
through the ``pytest11`` entry point of the installed library, on whichever mcp major is installed.
The downstream suite is the one docs/testing.md shows (its code blocks are run as they stand).
"""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import pytest


def _installed_dialects() -> int:
    from mcp_tasks_compat.testing import dialects

    return len(dialects())


CHECK_NO_SDK = """
import sys


def test_the_plugin_is_loaded_without_the_sdk(request):
    assert request.config.pluginmanager.has_plugin("mcp_tasks_compat")
    request.getfixturevalue("mcp_tasks_toolset")
    loaded = [name for name in sys.modules if name.split(".")[0] in ("mcp", "mcp_types")]
    assert loaded == []


def test_the_example_tool_set_is_the_default(mcp_tasks_toolset):
    from mcp_tasks_compat._examples import EXAMPLE_TASK_SUPPORT, EXAMPLE_TOOLS

    assert set(mcp_tasks_toolset.tools) == {*EXAMPLE_TOOLS, "echo", "rpc_error"}
    expected = {**EXAMPLE_TASK_SUPPORT, "echo": "forbidden", "rpc_error": "optional"}
    assert dict(mcp_tasks_toolset.support) == expected
"""


def test_the_plugin_loads_no_mcp_into_a_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_no_sdk=CHECK_NO_SDK)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q", timeout=120)
    result.assert_outcomes(passed=2)


def test_the_plugin_can_be_switched_off(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_off="def test_off(mcp_tasks_toolset):\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:mcp_tasks_compat", timeout=120)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*fixture 'mcp_tasks_toolset' not found*"])


def test_without_autoload_it_is_named_with_p(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(
        test_named="def test_named(mcp_tasks_toolset):\n    assert 'slow_echo' in mcp_tasks_toolset.tools\n"
    )
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "mcp_tasks_compat.testing", timeout=120
    )
    result.assert_outcomes(passed=1)


MARKED = """
import pytest


@pytest.mark.mcp1
def test_on_1x():
    pass


@pytest.mark.mcp2
def test_on_2x():
    pass


@pytest.mark.anyio
@pytest.mark.parametrize("mcp_tasks_dialect", ["2025-11-25", "2026-07-28"])
async def test_pinned(mcp_tasks_session, mcp_tasks_dialect):
    from mcp_tasks_compat.client import negotiate

    assert (await negotiate(mcp_tasks_session)).dialect == mcp_tasks_dialect
"""


def test_the_major_markers_and_an_unspoken_dialect_skip_with_the_reason(pytester: pytest.Pytester) -> None:
    import importlib.metadata

    pytester.makepyfile(test_marked=MARKED)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--strict-markers", "-rs", timeout=120)
    version = importlib.metadata.version("mcp")
    backends = 2 if importlib.util.find_spec("trio") is not None else 1
    spoken = _installed_dialects()
    result.assert_outcomes(passed=1 + backends * spoken, skipped=1 + backends * (2 - spoken))
    other = "2" if version.startswith("1.") else "1"
    result.stdout.fnmatch_lines([f"*needs mcp {other}.x; installed mcp {version}*"])
    if spoken == 1:
        result.stdout.fnmatch_lines(
            [
                f"*mcp {version} cannot speak the 2026-07-28 task dialect "
                "(it speaks 2025-11-25, as client and server)*"
            ]
        )


# --- docs/testing.md ------------------------------------------------------------------------------

DOCS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "testing.md"


def _doc_files() -> dict[str, str]:
    """The page's Python blocks that start with ``# <file name>``, by file name."""
    blocks = re.findall(r"```python\n(.*?)```", DOCS_PAGE.read_text(encoding="utf-8"), flags=re.DOTALL)
    files: dict[str, str] = {}
    for block in blocks:
        first, _, rest = block.partition("\n")
        if first.startswith("# ") and first.endswith(".py"):
            files[first.removeprefix("# ")] = rest
    return files


def test_the_documented_example_runs(pytester: pytest.Pytester) -> None:
    files = _doc_files()
    names = ("mylib_tools.py", "conftest.py", "test_mylib.py", "test_own_server.py")
    assert {*names, "noxfile.py"} <= set(files)
    for name in names:
        pytester.path.joinpath(name).write_text(files[name], encoding="utf-8")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q", "--strict-markers", timeout=120)
    # anyio's plugin runs each anyio test on every backend installed: trio too, where it is (the
    # test group installs it), and the kit's fixtures work there as well.
    backends = 2 if importlib.util.find_spec("trio") is not None else 1
    on_2x = _installed_dialects() - 1  # the mcp2-marked test runs on 2.x, skips on 1.x
    result.assert_outcomes(
        passed=(_installed_dialects() + 2 + 1 + on_2x) * backends, skipped=(1 - on_2x) * backends
    )


def test_the_documented_noxfile_parametrizes_with_our_versions() -> None:
    tree = ast.parse(_doc_files()["noxfile.py"])
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    assert any(isinstance(call.func, ast.Name) and call.func.id == "nox_sdk_versions" for call in calls)
    imports = [node for node in tree.body if isinstance(node, ast.ImportFrom)]
    assert any(node.module == "mcp_tasks_compat.testing" for node in imports)
