"""SDK-free controls shared by the client tests' servers: what a tool waits on, what the server saw.

Every test server (the mcp 1.x SDK's own task server, the minimal SEP-2663 server and the
handshake-era 2025-11-25 server on mcp 2.x) runs the same tools against one :class:`Script`:

* ``echo(text)``: plain only (``taskSupport`` forbidden / never a task);
* ``gated(label)``: reports status ``"started"``, waits for ``script.release``, returns ``done <label>``;
* ``failing()``: the work fails with an error (``boom``);
* ``tool_error()``: returns a ``CallToolResult`` with ``isError: true`` (``bad input``);
* ``hang()``: never returns on its own (only cancellation ends it);
* ``count_gets()``: returns once the server has answered ``script.gets_needed`` ``tasks/get``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import anyio

TASK_TOOLS = ("gated", "failing", "tool_error", "hang", "count_gets")
PLAIN_TOOLS = ("echo",)


@dataclass
class Knobs:
    """How a test server behaves; the mcp 1.x SDK server honours only ``tasks``."""

    tasks: bool = True
    poll_hints: tuple[int | None, ...] = (100,)
    """``pollInterval(Ms)`` of the i-th answer about a task (creation is answer 0)."""
    ttl_ms: int | None = None
    """Server-imposed TTL (None: 2025-11-25 echoes the client's, 2026-07-28 keeps 60 s)."""
    scoped: bool = False
    """2025-11-25 on mcp 2.x: a task is readable only from the session that created it (as mcp 1.27.2+)."""
    result_refuses_working: bool = False
    """2025-11-25 on mcp 2.x: tasks/result answers an error while the task works (a deviating server)."""
    result_refusal_code: int = -32600
    """The code of that refusal (FastMCP 3 answers -32602 "not completed yet")."""
    discover: Literal["answer", "refuse", "silent", "late"] = "answer"
    """How the transport meets ``server/discover`` (mcp 2.x): answer, -32601 like an old server, never,
    or late (held back until the client's next frame, which it then precedes)."""


@dataclass
class Script:
    release: anyio.Event = field(default_factory=anyio.Event)
    cancel_seen: anyio.Event = field(default_factory=anyio.Event)
    created: list[str] = field(default_factory=lambda: [])
    cancelled: list[str] = field(default_factory=lambda: [])
    get_times: list[float] = field(default_factory=lambda: [])
    gets_needed: int = 3
    enough_gets: anyio.Event = field(default_factory=anyio.Event)
    http_requests: list[tuple[str, dict[str, str]]] = field(default_factory=lambda: [])
    """(JSON-RPC method, mcp-* headers) of every HTTP POST the server received."""

    def saw_get(self) -> None:
        self.get_times.append(anyio.current_time())
        if len(self.get_times) >= self.gets_needed:
            self.enough_gets.set()

    def saw_cancel(self, task_id: str) -> None:
        self.cancelled.append(task_id)
        self.cancel_seen.set()
