"""Test your task tools and clients on whichever mcp major is installed: a pytest plugin and helpers.

Installed with the library, the plugin (entry point ``pytest11``) gives every pytest run these
fixtures (anyio fixtures: use them from ``@pytest.mark.anyio`` tests):

* ``mcp_tasks_session``: a ``ClientSession`` built with ``session_kwargs()`` and negotiated, to
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

from ._testkit.matrix import SDK_VERSIONS, SDK_VERSIONS_DATE, dialects, nox_sdk_versions
from ._testkit.options import COMPOSED_SESSION_OPTIONS, SessionOptionsError, merged_session_options
from ._testkit.processes import HttpServerProcess, child_environment, http_server_process
from ._testkit.serve import server_command
from ._testkit.sessions import SessionSetupError, connect_http, connect_in_memory, connect_stdio
from ._testkit.toolsets import (
    APPLICATION_ERROR,
    DEFAULT_SERVER_NAME,
    EXAMPLE_TOOLSET,
    ToolSet,
    build_task_server,
    echo,
    load_toolset,
    rpc_error,
)

__all__ = [
    "APPLICATION_ERROR",
    "COMPOSED_SESSION_OPTIONS",
    "DEFAULT_SERVER_NAME",
    "EXAMPLE_TOOLSET",
    "SDK_VERSIONS",
    "SDK_VERSIONS_DATE",
    "HttpServerProcess",
    "SessionOptionsError",
    "SessionSetupError",
    "ToolSet",
    "build_task_server",
    "child_environment",
    "connect_http",
    "connect_in_memory",
    "connect_stdio",
    "dialects",
    "echo",
    "http_server_process",
    "load_toolset",
    "merged_session_options",
    "nox_sdk_versions",
    "rpc_error",
    "server_command",
]

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
