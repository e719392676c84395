"""The framework adapters (``mcp_tasks_compat.integrations``) import without their framework and
refuse loudly when one of their classes is used without it.

The frameworks themselves are exercised by ``nox -s integrations`` (integrations/); the default run
installs none of them, which is the case checked here.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import re
import subprocess
import sys
import textwrap

import pytest

from mcp_tasks_compat.integrations.pydantic_ai import fastmcp_install

MCP_VERSION = importlib.metadata.version("mcp")

# (adapter module, a class it builds, the module it imports for it, its distribution, what to pip install)
ADAPTED = [
    ("openai_agents", "TaskMCPServerStdio", "agents.mcp", "openai-agents", "openai-agents"),
    ("openai_agents", "TaskMCPServerSse", "agents.mcp", "openai-agents", "openai-agents"),
    ("openai_agents", "TaskMCPServerStreamableHttp", "agents.mcp", "openai-agents", "openai-agents"),
    (
        "pydantic_ai",
        "TaskClient",
        "fastmcp",
        "fastmcp",
        "'fastmcp>=3.3,<4'" if MCP_VERSION.startswith("1.") else "fastmcp",
    ),
]


def adapter(name: str) -> object:
    return importlib.import_module(f"mcp_tasks_compat.integrations.{name}")


@pytest.mark.parametrize("name", sorted({name for name, *_ in ADAPTED}))
def test_importing_an_adapter_imports_neither_its_framework_nor_the_sdk(name: str) -> None:
    code = f"""
        import sys
        import mcp_tasks_compat.integrations.{name}
        print("LOADED", sorted(m for m in sys.modules if m.split(".")[0] in ("agents", "fastmcp", "mcp")))
        """
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "LOADED []" in result.stdout, result.stdout


@pytest.mark.parametrize(("name", "attribute", "framework", "distribution", "install"), ADAPTED)
def test_a_class_without_its_framework_is_refused_naming_the_install(
    name: str, attribute: str, framework: str, distribution: str, install: str
) -> None:
    if importlib.util.find_spec(framework.split(".")[0]) is not None:
        pytest.skip(f"{distribution} is installed here (nox -s integrations uses it)")
    with pytest.raises(ImportError, match=re.escape(f"`pip install {install}`")) as refused:
        getattr(adapter(name), attribute)
    assert refused.value.name == framework
    assert f"mcp_tasks_compat.integrations.{name} adapts {distribution}" in str(refused.value)


@pytest.mark.parametrize("mcp_version", ["1.23.0", "1.30.0"])
def test_fastmcp_is_named_in_its_3_line_on_mcp_1(mcp_version: str) -> None:
    """A bare ``pip install fastmcp`` takes fastmcp 4 (mcp>=2.3) and would replace mcp 1.x; every
    fastmcp 3 needs mcp>=1.24,<2 (PyPI metadata), and pydantic-ai's MCPToolset takes fastmcp>=3.3."""
    install, why = fastmcp_install(mcp_version)
    assert install == "'fastmcp>=3.3,<4'"
    assert f"keeps the installed mcp {mcp_version} on 1.x" in why
    assert "would replace mcp 1.x with 2.x" in why


def test_fastmcp_is_named_bare_on_mcp_2() -> None:
    assert fastmcp_install("2.3.0") == ("fastmcp", "")


@pytest.mark.parametrize("name", sorted({name for name, *_ in ADAPTED}))
def test_an_unknown_name_is_an_attribute_error(name: str) -> None:
    with pytest.raises(AttributeError, match="TaskWebSocket"):
        getattr(adapter(name), "TaskWebSocket")  # noqa: B009 - the name is the point
