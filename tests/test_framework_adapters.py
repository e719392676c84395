"""The framework adapters (``mcp_tasks_compat.integrations``) import without their framework and
refuse loudly when one of their classes is used without it.

The frameworks themselves are exercised by ``nox -s integrations`` (integrations/); the default run
installs none of them, which is the case checked here.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap

import pytest

from mcp_tasks_compat.integrations import openai_agents

OPENAI_AGENTS_MISSING = importlib.util.find_spec("agents") is None


def test_importing_an_adapter_imports_neither_its_framework_nor_the_sdk() -> None:
    code = """
        import sys
        import mcp_tasks_compat.integrations.openai_agents
        print("LOADED", sorted(m for m in sys.modules if m.split(".")[0] in ("agents", "mcp")))
        """
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "LOADED []" in result.stdout, result.stdout


@pytest.mark.skipif(not OPENAI_AGENTS_MISSING, reason="openai-agents is installed here")
@pytest.mark.parametrize("name", sorted(openai_agents.FRAMEWORK_CLASSES))
def test_a_class_without_its_framework_is_refused_naming_the_install(name: str) -> None:
    with pytest.raises(ImportError, match=r"pip install openai-agents") as refused:
        getattr(openai_agents, name)
    assert refused.value.name == "agents.mcp"
    assert "mcp_tasks_compat.integrations.openai_agents adapts openai-agents" in str(refused.value)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="TaskMCPServerWebSocket"):
        getattr(openai_agents, "TaskMCPServerWebSocket")  # noqa: B009 - the name is the point
