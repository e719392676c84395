"""Tool sets for a test server, the example one, and the server that serves one."""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from .._adapters import get_adapter
from .._engine.policy import SUPPORT_VALUES
from .._examples import EXAMPLE_TASK_SUPPORT, EXAMPLE_TOOLS
from ..dialects import TaskSupport
from ..server import TaskServer

__all__ = [
    "APPLICATION_ERROR",
    "DEFAULT_SERVER_NAME",
    "EXAMPLE_TOOLSET",
    "ToolFunction",
    "ToolSet",
    "build_task_server",
    "echo",
    "load_toolset",
    "rpc_error",
]

DEFAULT_SERVER_NAME: Final = "mcp-tasks-compat-testing"

ToolFunction = Callable[..., Awaitable[Any]]


@dataclass(frozen=True)
class ToolSet:
    """Tools for a test server, and how each may run as a task.

    ``support`` maps tool names to ``"optional" | "required" | "forbidden"``; a tool it leaves out
    is ``"forbidden"`` (a plain tool). ``name`` and ``version`` are the server's ``serverInfo``
    (``version=None``: the SDK's default). To serve it from a subprocess (stdio, HTTP), put it at
    module level and name it ``"package.module:ATTRIBUTE"``.
    """

    tools: Mapping[str, ToolFunction]
    support: Mapping[str, TaskSupport] = field(default_factory=lambda: dict[str, TaskSupport]())
    name: str = DEFAULT_SERVER_NAME
    version: str | None = None

    def __post_init__(self) -> None:
        unknown = sorted(set(self.support) - set(self.tools))
        if unknown:
            raise ValueError(f"task support given for tools the set does not have: {unknown}")
        bad = {tool: value for tool, value in self.support.items() if value not in SUPPORT_VALUES}
        if bad:
            raise ValueError(f"task support must be one of {SUPPORT_VALUES}; got {bad}")


APPLICATION_ERROR: Final = -32050
"""The JSON-RPC code :func:`rpc_error` answers by default (in the implementation-defined range)."""


async def echo(text: str) -> str:
    """Return ``text`` at once; the example tool set declares it ``forbidden`` (never a task)."""
    return text


async def rpc_error(message: str, code: int = APPLICATION_ERROR) -> str:
    """Answer a JSON-RPC error instead of a result.

    As a task it ends ``failed`` with that error on mcp 2.x servers. mcp 1.x ``FastMCP`` turns
    every exception of a tool into an ``isError`` result, so there it behaves like ``fail``.
    """
    raise get_adapter().app.jsonrpc_exception(code, message)


EXAMPLE_TOOLSET: Final = ToolSet(
    tools={**EXAMPLE_TOOLS, "echo": echo, "rpc_error": rpc_error},
    support={**EXAMPLE_TASK_SUPPORT, "echo": "forbidden", "rpc_error": "optional"},
)
"""The command line's example tools (``slow_echo``, ``fail`` and ``ask`` optional, ``must_task``
required) plus ``echo`` (forbidden: one tool of each kind of task support) and ``rpc_error``
(optional); ``build_task_server()`` and the fixtures serve it by default, and it extends:
Example: ``ToolSet(tools={**EXAMPLE_TOOLSET.tools, "lint": lint}, support=EXAMPLE_TOOLSET.support)``."""


def load_toolset(spec: str) -> ToolSet:
    """The :class:`ToolSet` named by ``"package.module:ATTRIBUTE"`` (or a function returning one).

    Example::

        toolset = load_toolset("mylib_tools:TOOLS")
        async with connect_in_memory(build_task_server(toolset)) as session:
            result = await call_tool(session, "build", {"target": "docs"})
    """
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise ValueError(f"a tool set is named 'package.module:ATTRIBUTE', not {spec!r}")
    found: object = importlib.import_module(module_name)
    for part in attribute.split("."):
        found = getattr(found, part)
    if not isinstance(found, ToolSet) and callable(found):
        found = found()
    if not isinstance(found, ToolSet):
        raise TypeError(f"{spec} is a {type(found).__name__}, not a mcp_tasks_compat.testing.ToolSet")
    return found


def build_task_server(
    toolset: ToolSet = EXAMPLE_TOOLSET, *, host: str = "127.0.0.1", **server_tasks_options: Any
) -> Any:
    """The SDK server of a :class:`~mcp_tasks_compat.server.TaskServer` serving ``toolset``.

    mcp 1.x: a ``FastMCP`` (2025-11-25); mcp 2.x: an ``MCPServer`` (both dialects); built the way
    a server author builds one. ``server_tasks_options`` go to ``TaskServer`` (``store``,
    ``poll_policy``, ``dialects``...); ``host`` is where it will listen over HTTP.
    """
    identity: dict[str, Any] = {} if toolset.version is None else {"version": toolset.version}
    app = TaskServer(toolset.name, host=host, **identity, **server_tasks_options)
    for name, tool in toolset.tools.items():
        app.tool(name=name, task=toolset.support.get(name, "forbidden"))(tool)
    return app.sdk_server
