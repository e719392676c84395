"""A kit tool set that reports its server's environment, for ``call --env`` and the inherited one."""

from __future__ import annotations

import os

from mcp_tasks_compat.testing import ToolSet


async def env_of(names: list[str]) -> str:
    return ";".join(f"{name}={os.environ.get(name, '<unset>')}" for name in names)


TOOLS = ToolSet(tools={"env_of": env_of})
