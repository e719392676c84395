"""The testing kit without pytest: tool sets, task servers and connected sessions on the installed major.

:mod:`mcp_tasks_compat.testing` re-exports what is public in these modules, and
:mod:`.._pytest_plugin` adds the fixtures; nothing here imports ``pytest`` or ``mcp`` (servers,
transports and serving are the installed major's app facet, from the adapter registry, the same
the command line uses), so a noxfile can read ``nox_sdk_versions`` and a server subprocess starts
without pytest. One concern per module: :mod:`.matrix` (the tested mcp releases, the dialects
spoken), :mod:`.toolsets` (tool sets and the server serving one), :mod:`.options` (a session's
keywords), :mod:`.sessions` (negotiated sessions on each transport), :mod:`.serve` (the serve
command and its command line), :mod:`.processes` (server subprocesses).
"""

from __future__ import annotations

__all__: list[str] = []  # imported from the modules by name, so no list of names is kept twice
