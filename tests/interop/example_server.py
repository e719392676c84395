"""The example tools served in-process by this library on the installed SDK major, for the peers.

The server is the testing kit's (:func:`~mcp_tasks_compat.testing.build_task_server`: ``ServerTasks``
with ``install`` on mcp 1.x ``FastMCP``, ``mcpserver_kwargs`` on mcp 2.x ``MCPServer``), built the
way a user would, and served over streamable HTTP on 127.0.0.1 inside the test's event loop, with
every JSON-RPC request it receives noted. Over stdio the tests spawn the real command-line server
instead (:data:`CLI_STDIO_SERVER`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from mcp_tasks_compat._examples import EXAMPLE_TASK_SUPPORT, EXAMPLE_TOOLS
from mcp_tasks_compat.testing import ToolSet, build_task_server
from server.harness import serve_asgi

__all__ = [
    "CLI_STDIO_SERVER",
    "EXAMPLE_TOOLS_SET",
    "HELD_TOOLS_SET",
    "SeenRequest",
    "build_example_server",
    "held",
    "marks_in",
    "serve_http",
]

EXAMPLE_TOOLS_SET = ToolSet(
    tools=EXAMPLE_TOOLS, support=EXAMPLE_TASK_SUPPORT, name="mcp-tasks-compat-interop"
)
"""The command line's example tools, with their task support, under this server's name."""


async def held(mark: str, seconds: float = 10.0) -> str:
    """A long tool that shows what happened to it: it appends ``started`` to the file ``mark``,
    runs until the file ``<mark>.go`` exists (at most ``seconds``), then appends ``finished``;
    cancelled, it appends ``stopped``. Answers ``released`` or ``ran <seconds> s``."""
    marks = Path(mark)
    go = marks.with_name(marks.name + ".go")
    _mark(marks, "started")
    released = False
    try:
        with anyio.move_on_after(seconds):
            while not go.exists():  # noqa: ASYNC110 - a file another process creates, seen every 20 ms
                await anyio.sleep(0.02)
            released = True
    except anyio.get_cancelled_exc_class():
        _mark(marks, "stopped")
        raise
    _mark(marks, "finished")
    return "released" if released else f"ran {seconds:g} s"


def _mark(marks: Path, word: str) -> None:
    with marks.open("a", encoding="utf-8") as sink:
        sink.write(word + "\n")


def marks_in(mark: str | Path) -> list[str]:
    """What :func:`held` wrote to ``mark`` so far (nothing yet: ``[]``)."""
    try:
        return Path(mark).read_text(encoding="utf-8").split()
    except FileNotFoundError:
        return []


HELD_TOOLS_SET = ToolSet(
    tools={**EXAMPLE_TOOLS, "held": held},
    support={**EXAMPLE_TASK_SUPPORT, "held": "optional"},
    name="mcp-tasks-compat-interop",
)
"""The example tools and :func:`held` (task-optional): for the plain hand-off's peers."""

CLI_STDIO_SERVER = [sys.executable, "-m", "mcp_tasks_compat", "example-server", "--transport", "stdio"]
"""``mcp-tasks-compat example-server`` over stdio with this interpreter (same tools, same support)."""


def build_example_server(toolset: ToolSet = EXAMPLE_TOOLS_SET, **server_tasks_options: Any) -> Any:
    """FastMCP (1.x) or MCPServer (2.x) with the example tools, tasks enabled (the kit's server)."""
    return build_task_server(toolset, **server_tasks_options)


@dataclass(frozen=True)
class SeenRequest:
    """One JSON-RPC request POSTed to the server: its method, params and ``mcp-*`` headers."""

    method: str
    params: dict[str, Any]
    headers: dict[str, str]


def _recording(app: Any, seen: list[SeenRequest]) -> Any:
    """ASGI wrapper that notes each POSTed JSON-RPC request, then replays the body to ``app``."""

    async def wrapped(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        headers = {
            name.decode("latin-1").lower(): value.decode("latin-1")
            for name, value in scope["headers"]
            if name.lower().startswith(b"mcp-")
        }
        try:
            decoded = json.loads(body)
        except ValueError:
            decoded = None
        for item in decoded if isinstance(decoded, list) else [decoded]:
            if isinstance(item, dict) and isinstance(item.get("method"), str):
                params = item.get("params")
                seen.append(SeenRequest(item["method"], params if isinstance(params, dict) else {}, headers))
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await app(scope, replay, send)

    return wrapped


@asynccontextmanager
async def serve_http(server: Any, *, seen: list[SeenRequest] | None = None) -> AsyncIterator[str]:
    """Serve ``server`` over streamable HTTP on 127.0.0.1 (free port) for the block; yield its URL.

    The socket is bound and listening before the block starts, so a client may connect at once:
    its connection waits in the backlog until uvicorn accepts it. ``seen`` collects every
    JSON-RPC request the server receives (method, params, ``mcp-*`` headers).
    """
    app = server.streamable_http_app()
    if seen is not None:
        app = _recording(app, seen)
    async with serve_asgi(app, lifespan="on") as url:
        yield url
