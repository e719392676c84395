"""Test your task tools and clients on whichever mcp major is installed: a pytest plugin and helpers.

Installed with the library, the plugin (entry point ``pytest11``) gives every pytest run these
fixtures (anyio fixtures: use them from ``@pytest.mark.anyio`` tests):

* ``mcp_tasks_session``: a negotiated ``ClientSession`` with the library's settings, to
  ``mcp_tasks_server`` (a task-capable server of the installed major) in memory;
* ``mcp_tasks_stdio_session`` / ``mcp_tasks_http_session``: the same to a server subprocess;
* what they are built from, each one overridable: ``mcp_tasks_toolset_spec`` (your
  :class:`ToolSet` as ``"package.module:ATTRIBUTE"``), ``mcp_tasks_toolset``,
  ``mcp_tasks_server_options``, ``mcp_tasks_dialect``, ``mcp_tasks_server``,
  ``mcp_tasks_server_command``, ``mcp_tasks_http_url``.

For a noxfile, :func:`nox_sdk_versions` lists the mcp releases the library is tested on, so your
suite runs on the same matrix. docs/testing.md shows both.

Importing this module loads no ``mcp``; without pytest (e.g. in a noxfile) the helpers still import.
"""

from __future__ import annotations

import sys
from typing import Any, Final

from . import _testkit, errors
from ._deprecated import Alias, answer
from ._testkit.matrix import dialects, nox_sdk_versions
from ._testkit.processes import HttpServerProcess, http_server_process
from ._testkit.serve import server_command
from ._testkit.toolsets import EXAMPLE_TOOLSET, ToolSet, build_task_server, load_toolset

__all__ = [
    "EXAMPLE_TOOLSET",
    "HttpServerProcess",
    "ToolSet",
    "build_task_server",
    "dialects",
    "http_server_process",
    "load_toolset",
    "nox_sdk_versions",
    "server_command",
]


def _kit(module: str, name: str) -> Alias:
    replacement = (
        f"mcp_tasks_compat.client.{name} (session_options= is client_session_kwargs= there; for "
        "bare=True open the SDK's own ClientSession)"
    )
    return Alias(replacement, lambda: getattr(getattr(_testkit, module), name))


def _kept(module: str, name: str, replacement: str) -> Alias:
    return Alias(replacement, lambda: getattr(getattr(_testkit, module), name))


_ALIASES: Final = {
    "connect_in_memory": _kit("sessions", "connect_in_memory"),
    "connect_stdio": _kit("sessions", "connect_stdio"),
    "connect_http": _kit("sessions", "connect_http"),
    "SessionSetupError": Alias("mcp_tasks_compat.errors.SessionSetupError", lambda: errors.SessionSetupError),
    "SessionOptionsError": Alias(
        "mcp_tasks_compat.errors.SessionOptionsError", lambda: errors.SessionOptionsError
    ),
    "SDK_VERSIONS": _kept("matrix", "SDK_VERSIONS", "nox_sdk_versions()"),
    "SDK_VERSIONS_DATE": _kept("matrix", "SDK_VERSIONS_DATE", "docs/stability.md's supported versions"),
    "APPLICATION_ERROR": _kept("toolsets", "APPLICATION_ERROR", "a tool of your own"),
    "DEFAULT_SERVER_NAME": _kept("toolsets", "DEFAULT_SERVER_NAME", "ToolSet(name=...)"),
    "COMPOSED_SESSION_OPTIONS": _kept("options", "COMPOSED_SESSION_OPTIONS", "TaskClientSession's keywords"),
    "merged_session_options": _kept("options", "merged_session_options", "TaskClientSession's keywords"),
    "child_environment": _kept("processes", "child_environment", "os.environ with PYTHONPATH set"),
    "echo": _kept("toolsets", "echo", "EXAMPLE_TOOLSET.tools['echo']"),
    "rpc_error": _kept("toolsets", "rpc_error", "EXAMPLE_TOOLSET.tools['rpc_error']"),
}


def __getattr__(name: str) -> Any:
    """The pre-1.0 names answer with a ``DeprecationWarning`` naming the 1.0 one."""
    return answer(__name__, name, _ALIASES)


# The fixtures, where pytest is importable and this is not the `serve` subprocess (which needs no
# pytest). pytest finds fixtures by name in a plugin module, so they are imported here.
if __name__ != "__main__":
    try:
        from ._pytest_plugin import *  # noqa: F403
    except ModuleNotFoundError as missing:  # e.g. a noxfile's environment: the helpers still work
        if missing.name not in ("pytest", "_pytest"):
            raise

if __name__ == "__main__":
    from mcp_tasks_compat._testkit.serve import main

    sys.exit(main())
