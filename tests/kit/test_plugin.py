"""The plugin as a downstream project meets it: a fresh pytest run in a project of its own (pytester).

Each run is a subprocess of this interpreter, so the plugin arrives the way it does downstream:
through the ``pytest11`` entry point of the installed library, on whichever mcp major is installed.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

DOWNSTREAM_TOOLS = '''
"""A downstream library's tools: one optional, one required, one plain."""

from mcp_tasks_compat.server import current_task, report_status
from mcp_tasks_compat.testing import ToolSet


async def build(target: str) -> str:
    await report_status(f"building {target}")
    return f"built {target} ({'task' if current_task() else 'plain'})"


async def deploy(target: str) -> str:
    return f"deployed {target}"


async def version() -> str:
    return "1.0"


TOOLS = ToolSet(
    tools={"build": build, "deploy": deploy, "version": version},
    support={"build": "optional", "deploy": "required"},
    name="downstream",
)
'''

DOWNSTREAM_CONFTEST = """
import pytest


@pytest.fixture
def mcp_tasks_toolset_spec():
    return "downstream_tools:TOOLS"
"""

DOWNSTREAM_TESTS = """
import pytest

from mcp_tasks_compat.client import call_tool, negotiate
from mcp_tasks_compat.testing import dialects

pytestmark = pytest.mark.anyio


def text(result):
    return "".join(block.text for block in result.content if block.type == "text")


@pytest.mark.parametrize("mcp_tasks_dialect", dialects())
async def test_build_runs_as_a_task_in_each_dialect(mcp_tasks_session, mcp_tasks_dialect):
    statuses = []
    result = await call_tool(mcp_tasks_session, "build", {"target": "docs"}, on_status=statuses.append)
    assert text(result) == "built docs (task)"
    assert (await negotiate(mcp_tasks_session)).dialect == mcp_tasks_dialect
    assert statuses[-1].status.value == "completed"


async def test_plain_and_required_tools(mcp_tasks_session):
    assert text(await call_tool(mcp_tasks_session, "version")) == "1.0"
    assert text(await call_tool(mcp_tasks_session, "deploy", {"target": "prod"})) == "deployed prod"


async def test_over_stdio(mcp_tasks_stdio_session):
    result = await call_tool(mcp_tasks_stdio_session, "build", {"target": "wheel"}, mode="task")
    assert text(result) == "built wheel (task)"
"""


def _installed_dialects() -> int:
    from mcp_tasks_compat.testing import dialects

    return len(dialects())


def test_a_downstream_suite_runs_on_the_installed_major(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(downstream_tools=DOWNSTREAM_TOOLS)
    pytester.makeconftest(DOWNSTREAM_CONFTEST)
    pytester.makepyfile(test_downstream=DOWNSTREAM_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q", timeout=120)
    result.assert_outcomes(passed=_installed_dialects() + 2)


CHECK_NO_SDK = """
import sys


def test_the_plugin_is_loaded_without_the_sdk(request):
    assert request.config.pluginmanager.has_plugin("mcp_tasks_compat")
    request.getfixturevalue("mcp_tasks_toolset")
    loaded = [name for name in sys.modules if name.split(".")[0] in ("mcp", "mcp_types")]
    assert loaded == []


def test_the_example_tool_set_is_the_default(mcp_tasks_toolset):
    from mcp_tasks_compat.examples import EXAMPLE_TASK_SUPPORT, EXAMPLE_TOOLS

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
    assert {"mylib_tools.py", "conftest.py", "test_mylib.py", "noxfile.py"} <= set(files)
    for name in ("mylib_tools.py", "conftest.py", "test_mylib.py"):
        pytester.path.joinpath(name).write_text(files[name], encoding="utf-8")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q", timeout=120)
    result.assert_outcomes(passed=_installed_dialects() + 2)


def test_the_documented_noxfile_parametrizes_with_our_versions() -> None:
    tree = ast.parse(_doc_files()["noxfile.py"])
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    assert any(isinstance(call.func, ast.Name) and call.func.id == "nox_sdk_versions" for call in calls)
    imports = [node for node in tree.body if isinstance(node, ast.ImportFrom)]
    assert any(node.module == "mcp_tasks_compat.testing" for node in imports)
