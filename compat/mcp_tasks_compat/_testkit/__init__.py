"""The testing kit without pytest: tool sets, task servers and connected sessions on the installed major.

:mod:`mcp_tasks_compat.testing` re-exports everything public here and adds the pytest fixtures;
this package imports neither ``pytest`` nor ``mcp`` (servers, transports and serving are the
installed major's app facet, from the adapter registry, the same the command line uses), so a
noxfile can read :func:`nox_sdk_versions` and a server subprocess starts without pytest.

One concern per module: :mod:`.matrix` (the tested mcp releases, the dialects spoken),
:mod:`.toolsets` (tool sets and the server serving one), :mod:`.options` (a session's keywords),
:mod:`.sessions` (negotiated sessions on each transport), :mod:`.serve` (the serve command and its
command line), :mod:`.processes` (server subprocesses).

A server subprocess is ``python -m mcp_tasks_compat.testing serve [MODULE:ATTRIBUTE]``
(:func:`server_command` builds the line): the tool set named there, or :data:`EXAMPLE_TOOLSET`.
"""

from __future__ import annotations

from .matrix import SDK_VERSIONS, SDK_VERSIONS_DATE, SdkVersionPolicy, dialects, nox_sdk_versions
from .options import COMPOSED_SESSION_OPTIONS, SessionOptionsError, merged_session_options
from .processes import HttpServerProcess, child_environment, http_server_process
from .serve import LISTENING_PREFIX, SERVE_MODULE, Transport, main, server_command
from .sessions import CONNECT_TIMEOUT_S, SessionSetupError, connect_http, connect_in_memory, connect_stdio
from .toolsets import (
    APPLICATION_ERROR,
    DEFAULT_SERVER_NAME,
    EXAMPLE_TOOLSET,
    ToolFunction,
    ToolSet,
    build_task_server,
    echo,
    load_toolset,
    rpc_error,
)

__all__ = [
    "APPLICATION_ERROR",
    "COMPOSED_SESSION_OPTIONS",
    "CONNECT_TIMEOUT_S",
    "DEFAULT_SERVER_NAME",
    "EXAMPLE_TOOLSET",
    "LISTENING_PREFIX",
    "SDK_VERSIONS",
    "SDK_VERSIONS_DATE",
    "SERVE_MODULE",
    "HttpServerProcess",
    "SdkVersionPolicy",
    "SessionOptionsError",
    "SessionSetupError",
    "ToolFunction",
    "ToolSet",
    "Transport",
    "build_task_server",
    "child_environment",
    "connect_http",
    "connect_in_memory",
    "connect_stdio",
    "dialects",
    "echo",
    "http_server_process",
    "load_toolset",
    "main",
    "merged_session_options",
    "nox_sdk_versions",
    "rpc_error",
    "server_command",
]
