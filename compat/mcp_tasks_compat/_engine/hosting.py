"""Who an engine serves in: the host that runs tasks without a request, and the lifespan they see.

Every form that brings an engine to life (an mcp 2.x lifespan, an mcp 1.x server's stdio or HTTP
app, a worker, a bare 1.x ``install()``'s first session) enters the one entry
:meth:`.serving.Serving.hosted`; what differs between them is only what they hand it: how to run
a tool with no request (:data:`ToolRunner`) and the value of the server's lifespan. A run started
without a request (a re-run, a worker's run) lives in the host's task group and calls its tool
through the host, so it sees the same lifespan value as a run started by a request.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Mapping
from contextlib import AbstractAsyncContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

import anyio.abc

__all__ = ["EngineHost", "Hosts", "Lifespan", "ToolRunner", "Work"]

Lifespan = Callable[[Any], AbstractAsyncContextManager[Any]]
"""A server's ``lifespan(server)``, as ``FastMCP`` and ``MCPServer`` take it (the user's ``lifespan=``)."""

Work = Callable[[], Awaitable[Mapping[str, Any]]]
"""A tool's work: called once, its result (wire JSON) or exception ends the task."""

ToolRunner = Callable[[str, Mapping[str, Any], Any], Work | None]
"""How a host runs a tool with no request: ``(tool_name, arguments, lifespan_context)`` to its
work, or ``None`` when that tool cannot be run so here (the adapter's: it calls the SDK's own tool
chain, giving the tool the server lifespan's value as a request would)."""


@dataclass(frozen=True, eq=False)
class EngineHost:
    """One entry of an engine into serving: where runs with no request live and how they run.

    ``process``: entered once for the whole process (a server's stdio or HTTP app, a worker, the
    CLI), so a lifespan or session that comes later joins it rather than hosting again.
    """

    runs: anyio.abc.TaskGroup
    """The task group of runs started with no request (re-runs); the background lives here too."""
    tools: ToolRunner | None
    """How a tool runs with no request here; ``None``: nothing can re-run here (failed instead)."""
    lifespan_context: Any = None
    """The server lifespan's value, as a tool sees it in ``ctx.request_context.lifespan_context``."""
    process: bool = False

    def run_tool(self, tool_name: str, arguments: Mapping[str, Any]) -> Work | None:
        """The work of ``tool_name`` run here with no request, seeing this host's lifespan value;
        ``None`` when it cannot be run so here."""
        if self.tools is None:
            return None
        return self.tools(tool_name, arguments, self.lifespan_context)


class Hosts:
    """The hosts an engine serves in now, innermost last (one per process, or one per lifespan)."""

    def __init__(self) -> None:
        self._active: list[EngineHost] = []

    @property
    def process(self) -> EngineHost | None:
        """The host entered for the whole process, if any: later entries join it."""
        return next((host for host in self._active if host.process), None)

    @property
    def current(self) -> EngineHost | None:
        """The host runs with no request start in: the process's when there is one, else the latest."""
        return self.process or (self._active[-1] if self._active else None)

    @contextmanager
    def entered(self, host: EngineHost) -> Generator[EngineHost]:
        """``host`` is active while this lasts."""
        self._active.append(host)
        try:
            yield host
        finally:
            self._active[:] = [active for active in self._active if active is not host]
