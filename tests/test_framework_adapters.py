"""The framework adapters (``mcp_tasks_compat.integrations``) import without their framework and
refuse loudly when one of their classes is used without it.

The frameworks themselves are exercised by ``nox -s integrations`` (integrations/); the default run
installs none of them, which is the case checked here.
"""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys
import textwrap

import pytest

# (adapter module, a class it builds, the module it imports for it, what to pip install)
ADAPTED = [
    ("openai_agents", "TaskMCPServerStdio", "agents.mcp", "openai-agents"),
    ("openai_agents", "TaskMCPServerSse", "agents.mcp", "openai-agents"),
    ("openai_agents", "TaskMCPServerStreamableHttp", "agents.mcp", "openai-agents"),
    ("pydantic_ai", "TaskClient", "fastmcp", "fastmcp"),
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


@pytest.mark.parametrize(("name", "attribute", "framework", "distribution"), ADAPTED)
def test_a_class_without_its_framework_is_refused_naming_the_install(
    name: str, attribute: str, framework: str, distribution: str
) -> None:
    if importlib.util.find_spec(framework.split(".")[0]) is not None:
        pytest.skip(f"{distribution} is installed here (nox -s integrations uses it)")
    with pytest.raises(ImportError, match=rf"pip install {distribution}`") as refused:
        getattr(adapter(name), attribute)
    assert refused.value.name == framework
    assert f"mcp_tasks_compat.integrations.{name} adapts {distribution}" in str(refused.value)


@pytest.mark.parametrize("name", sorted({name for name, *_ in ADAPTED}))
def test_an_unknown_name_is_an_attribute_error(name: str) -> None:
    with pytest.raises(AttributeError, match="TaskWebSocket"):
        getattr(adapter(name), "TaskWebSocket")  # noqa: B009 - the name is the point
