"""One way to get a connected client session for every server kind on the installed major.

``open_harness(kind, knobs)`` starts a test server and yields a :class:`Harness` whose
``session()`` opens a fresh ``ClientSession`` to it (the server's tasks are shared by all of
them). Kinds: ``"v1"`` (mcp 1.x: the SDK's own task server), ``"ext"`` (mcp 2.x: the minimal
SEP-2663 server, 2026-07-28) and ``"legacy"`` (mcp 2.x: the same server behind a transport that
refuses ``server/discover``, so the connection is 2025-11-25).
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any

import anyio
from packaging.version import Version

from mcp_tasks_compat.client import session_kwargs

from ._script import Knobs, Script

MCP_VERSION = Version(importlib.metadata.version("mcp"))
MCP_MAJOR = MCP_VERSION.major
KINDS = ("v1",) if MCP_MAJOR == 1 else ("ext", "legacy")
PROJECT_KINDS = ("project",) if MCP_MAJOR == 1 else ("project-ext", "project-legacy")
DIALECT_OF = {
    "v1": "2025-11-25",
    "ext": "2026-07-28",
    "legacy": "2025-11-25",
    "project": "2025-11-25",
    "project-ext": "2026-07-28",
    "project-legacy": "2025-11-25",
}

_DEFAULT = object()


@dataclass
class Harness:
    kind: str
    script: Script
    knobs: Knobs
    _target: Any

    @property
    def dialect(self) -> str:
        return DIALECT_OF[self.kind]

    @asynccontextmanager
    async def session(self, kwargs: Any = _DEFAULT) -> AsyncIterator[Any]:
        """A new ``ClientSession`` (not negotiated), built with ``session_kwargs()`` unless told otherwise."""
        from mcp.client.session import ClientSession

        options: dict[str, Any] = session_kwargs() if kwargs is _DEFAULT else dict(kwargs)
        if self.kind == "v1":
            from ._servers_v1 import memory_streams as v1_streams

            streams = v1_streams(self._target)
        elif self.kind == "project":
            from ._servers_v1 import memory_streams as v1_streams

            streams = v1_streams(self._target._mcp_server)
        else:
            from ._servers import memory_streams as v2_streams

            server = self._target if self.kind.startswith("project") else self._target.server
            streams = v2_streams(server, self.knobs.discover)
        async with streams as (read, write), ClientSession(read, write, **options) as session:
            yield session


@asynccontextmanager
async def open_harness(kind: str, knobs: Knobs | None = None) -> AsyncIterator[Harness]:
    knobs = knobs or Knobs()
    script = Script()
    if kind.startswith("project"):
        from ._project_server import build_project_server

        if kind == "project-legacy":
            knobs = replace(knobs, discover="refuse")
        yield Harness(kind, script, knobs, build_project_server(script))
        return
    if kind == "v1":
        from ._servers_v1 import build_v1_server

        yield Harness(kind, script, knobs, build_v1_server(script, knobs))
        return
    from ._servers import DualDialectServer

    if kind == "legacy" and knobs.discover == "answer":
        knobs = replace(knobs, discover="refuse")
    async with anyio.create_task_group() as group:
        try:
            yield Harness(kind, script, knobs, DualDialectServer(script, knobs, group))
        finally:
            group.cancel_scope.cancel()
