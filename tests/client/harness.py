"""The client tests' harness: one way to get a client session to every server kind on the installed major.

``open_harness(kind, knobs)`` starts a server and yields a :class:`Harness` whose ``session()``
opens a fresh ``ClientSession`` to it (the server's tasks are shared by all of them). A kind names
the server and the task dialect the connection speaks:

* ``"sdk-2025"`` (mcp 1.x): the SDK's own experimental task server, 2025-11-25;
* ``"2026"`` (mcp 2.x): the scripted SEP-2663 server, 2026-07-28;
* ``"2025"`` (mcp 2.x): the same server behind a transport that refuses ``server/discover``, so
  the connection is 2025-11-25;
* ``"project-2025"`` (mcp 2.x): the project's own server (the testing kit's ``build_task_server``)
  behind that transport.

:func:`structured_server` is a low-level server of either major whose tools answer a given
``structuredContent`` unchecked (the output-schema tests).

The scripted servers are in :mod:`.scripted_servers`; the project's server runs
:func:`project_toolset`. This is the one module of the client tests that reads the SDK major.
"""

from __future__ import annotations

import glob
import importlib
import itertools
import os
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import anyio
from packaging.version import Version

from mcp_tasks_compat._adapters import get_adapter
from mcp_tasks_compat._client_api import session_kwargs
from mcp_tasks_compat._detect import sdk_info
from mcp_tasks_compat.dialects import TaskSupport
from mcp_tasks_compat.server import ServerTasks, report_status
from mcp_tasks_compat.testing import ToolSet, build_task_server

from .scripted_servers import STDIO_KINDS, Knobs, Script

__all__ = [
    "DIALECT_OF",
    "KINDS",
    "PROJECT_SERVER_NAME",
    "PROJECT_TOOLS",
    "STDIO_KIND",
    "TESTS_DIR",
    "CountingWrite",
    "Harness",
    "Knobs",
    "Script",
    "gaps",
    "is_error",
    "mcp1_python",
    "open_harness",
    "project_toolset",
    "scripted_stdio_command",
    "structured_of",
    "structured_server",
    "text_of",
]

_MAJOR = get_adapter().major
KINDS = {1: ("sdk-2025",), 2: ("2026", "2025")}[_MAJOR]
"""The scripted server kinds of the installed major, for parametrizing."""
DIALECT_OF = {
    "sdk-2025": "2025-11-25",
    "2026": "2026-07-28",
    "2025": "2025-11-25",
    "project-2025": "2025-11-25",
}
STDIO_KIND = KINDS[0]
"""The scripted kind the stdio tests serve on this major (its newest dialect)."""
assert STDIO_KIND in STDIO_KINDS
SCOPED_SINCE = Version("1.27.2")
"""The first mcp 1.x whose own task server scopes tasks to the session that created them."""

_DEFAULT = object()


# --- reading results ---------------------------------------------------------------------------------


def text_of(result: Any) -> str:
    """The text blocks of a ``CallToolResult``, joined."""
    return "".join(block.text for block in result.content if getattr(block, "type", None) == "text")


def is_error(result: Any) -> bool:
    """``isError`` (mcp 1.x) or ``is_error`` (mcp 2.x) of a ``CallToolResult``."""
    value = getattr(result, "is_error", None)
    if value is None:
        value = getattr(result, "isError", None)
    return bool(value)


def gaps(times: list[float]) -> list[float]:
    return [later - earlier for earlier, later in itertools.pairwise(times)]


# --- the project's own server --------------------------------------------------------------------------

PROJECT_TOOLS: dict[str, TaskSupport] = {
    "gated": "optional",
    "tool_error": "optional",
    "hang": "optional",
    "echo": "forbidden",
}
PROJECT_SERVER_NAME = "client-tests-project-server"
_TOOL_ERROR_MODULE = {1: "mcp.server.fastmcp.exceptions", 2: "mcp.server.mcpserver.exceptions"}


def project_toolset(script: Script) -> ToolSet:
    """The script's tools for the kit: ``gated`` waits for ``script.release``; ``tool_error`` raises."""
    tool_error_class: type[Exception] = importlib.import_module(_TOOL_ERROR_MODULE[_MAJOR]).ToolError

    async def gated(label: str) -> str:
        await report_status("started")
        await script.release.wait()
        return f"done {label}"

    async def tool_error() -> str:
        raise tool_error_class("bad input")

    async def hang() -> str:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def echo(text: str) -> str:
        return text

    tools = {"gated": gated, "tool_error": tool_error, "hang": hang, "echo": echo}
    return ToolSet(tools=tools, support=PROJECT_TOOLS, name=PROJECT_SERVER_NAME)


# --- a server that sends structured content as its tool gave it ------------------------------------------


def structured_server(
    structured: Mapping[str, Mapping[str, Any]],
    output_schemas: Mapping[str, Mapping[str, Any]],
    support: TaskSupport = "optional",
) -> Any:
    """A low-level server of the installed major with the project's tasks installed: each tool of
    ``structured`` answers that ``structuredContent`` (checked by no one on the server: the SDKs'
    decorated servers check their own output), declaring ``output_schemas[name]`` where given.

    Every tool runs as a task when asked (``support``), on 2026-07-28 too (no inline grace).
    """
    tasks = ServerTasks(tools=dict.fromkeys(structured, support), inline_grace_s=0)
    server = _STRUCTURED_SERVERS[_MAJOR](structured, output_schemas)
    tasks.install(server)
    return server


def _structured_server_v1(
    structured: Mapping[str, Mapping[str, Any]], output_schemas: Mapping[str, Mapping[str, Any]]
) -> Any:
    import mcp.types as types
    from mcp.server.lowlevel import Server

    server: Any = Server("structured")

    @server.list_tools()  # type: ignore[misc]
    async def list_tools() -> list[types.Tool]:
        return [
            types.Tool(
                name=name,
                inputSchema={"type": "object"},
                outputSchema=dict(output_schemas[name]) if name in output_schemas else None,
            )
            for name in structured
        ]

    @server.call_tool()  # type: ignore[misc]
    async def call_tool(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        content = dict(structured[name])
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=str(content))], structuredContent=content
        )

    return server


def _structured_server_v2(
    structured: Mapping[str, Mapping[str, Any]], output_schemas: Mapping[str, Mapping[str, Any]]
) -> Any:
    import mcp_types as types
    from mcp.server.lowlevel.server import Server

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=name,
                    input_schema={"type": "object"},
                    output_schema=dict(output_schemas[name]) if name in output_schemas else None,
                )
                for name in structured
            ]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        content = dict(structured[params.name])
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=str(content))], structured_content=content
        )

    return Server("structured", on_list_tools=list_tools, on_call_tool=call_tool)


_STRUCTURED_SERVERS = {1: _structured_server_v1, 2: _structured_server_v2}


def structured_of(result: Any) -> Any:
    """``structuredContent`` (mcp 1.x) or ``structured_content`` (mcp 2.x) of a ``CallToolResult``."""
    return getattr(result, "structured_content", getattr(result, "structuredContent", None))


# --- scripted servers over stdio -----------------------------------------------------------------------

TESTS_DIR = Path(__file__).resolve().parent.parent
"""The working directory of a scripted stdio server (``client.scripted_servers`` is importable there)."""
PEER_ENV = "MCP_TASKS_COMPAT_PEER_PYTHON"


def scripted_stdio_command(kind: str, *, gets: int, python: str = sys.executable) -> list[str]:
    """``python -m client.scripted_servers KIND GETS``: a scripted stdio server (run in :data:`TESTS_DIR`)."""
    return [python, "-m", "client.scripted_servers", kind, str(gets)]


def _mcp_major_of(python: str) -> int | None:
    probe = "import importlib.metadata as m; print(m.version('mcp'))"
    try:
        found = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return Version(found.stdout.strip()).major


def mcp1_python() -> str | None:
    """An interpreter with mcp 1.x for a cross-major test: $MCP1_PY, the nox session's peer if it has
    mcp 1.x, else a sibling virtual environment named ``mcp1.*``."""
    explicit = os.environ.get("MCP1_PY")
    if explicit:
        return explicit
    peer = os.environ.get(PEER_ENV)
    if peer and _mcp_major_of(peer) == 1:
        return peer
    found = sorted(glob.glob(str(Path(sys.prefix).parent / "mcp1.*" / "bin" / "python")))
    return found[-1] if found else None


# --- the harness -------------------------------------------------------------------------------------


@dataclass
class Harness:
    kind: str
    script: Script
    knobs: Knobs
    _target: Any

    @property
    def dialect(self) -> str:
        return DIALECT_OF[self.kind]

    @property
    def sdk_task_server(self) -> bool:
        """Whether the server is the mcp 1.x SDK's own task runtime (which keeps only error texts)."""
        return self.kind == "sdk-2025"

    @property
    def scopes_tasks_to_sessions(self) -> bool:
        """Whether another session is refused the tasks of this one (the mcp 1.x SDK's since 1.27.2)."""
        return self.sdk_task_server and Version(sdk_info().mcp_version) >= SCOPED_SINCE

    @asynccontextmanager
    async def session(
        self,
        kwargs: Any = _DEFAULT,
        *,
        requests: Counter[str] | None = None,
        sent: list[tuple[str, Any]] | None = None,
        messages: list[dict[str, Any]] | None = None,
    ) -> AsyncIterator[Any]:
        """A new ``ClientSession`` (not negotiated), built with ``session_kwargs()`` unless told otherwise.

        ``requests``: counts, by method, every request the session writes; ``sent`` (with
        ``requests``) gets each one's (method, params), ``messages`` (with ``requests``) every
        message it writes, notifications too, as wire JSON.
        """
        from mcp.client.session import ClientSession

        from .scripted_servers import dual_dialect_streams, sdk_task_server_streams

        options: dict[str, Any] = session_kwargs() if kwargs is _DEFAULT else dict(kwargs)
        if self.kind == "sdk-2025":
            streams = sdk_task_server_streams(self._target)
        else:
            server = self._target if self.kind == "project-2025" else self._target.server
            streams = dual_dialect_streams(server, self.knobs.discover)
        async with streams as (read, write):
            if requests is not None:
                write = CountingWrite(write, requests, sent, messages)
            async with ClientSession(read, write, **options) as session:
                yield session


class StreamWrapper:
    """Around one of a session's memory streams: entering, leaving and everything not overridden
    go to the wrapped stream (a subclass changes what passes)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    async def __aenter__(self) -> Any:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> Any:
        return await self._stream.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class CountingWrite(StreamWrapper):
    """A client's write stream that counts the requests passing, by method (either major's messages),
    and keeps each one's (method, params) in ``sent`` where given, and every message (requests and
    notifications) as wire JSON in ``messages`` where given."""

    def __init__(
        self,
        stream: Any,
        requests: Counter[str],
        sent: list[tuple[str, Any]] | None = None,
        messages: list[dict[str, Any]] | None = None,
    ) -> None:
        super().__init__(stream)
        self._requests = requests
        self._sent = sent
        self._messages = messages

    def _count(self, message: Any) -> None:
        inner = getattr(message, "message", message)
        root = getattr(inner, "root", inner)  # mcp 1.x wraps the request in a RootModel
        method = getattr(root, "method", None)
        if self._messages is not None and hasattr(root, "model_dump"):
            self._messages.append(root.model_dump(by_alias=True, mode="json", exclude_none=True))
        if isinstance(method, str) and getattr(root, "id", None) is not None:
            self._requests[method] += 1
            if self._sent is not None:
                self._sent.append((method, getattr(root, "params", None)))

    async def send(self, message: Any) -> None:
        self._count(message)
        await self._stream.send(message)

    def send_nowait(self, message: Any) -> None:
        self._count(message)
        self._stream.send_nowait(message)


@asynccontextmanager
async def open_harness(kind: str, knobs: Knobs | None = None) -> AsyncIterator[Harness]:
    if kind not in DIALECT_OF:
        raise ValueError(f"unknown harness kind {kind!r}; one of {sorted(DIALECT_OF)}")
    knobs = knobs or Knobs()
    script = Script()
    if kind == "project-2025":
        yield Harness(
            kind, script, replace(knobs, discover="refuse"), build_task_server(project_toolset(script))
        )
        return
    if kind == "sdk-2025":
        from .scripted_servers import build_sdk_task_server

        yield Harness(kind, script, knobs, build_sdk_task_server(script, knobs))
        return
    from .scripted_servers import DualDialectServer

    if kind == "2025" and knobs.discover == "answer":
        knobs = replace(knobs, discover="refuse")
    async with anyio.create_task_group() as group:
        try:
            yield Harness(kind, script, knobs, DualDialectServer(script, knobs, group))
        finally:
            group.cancel_scope.cancel()
