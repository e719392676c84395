"""What the mcp 1.x server tests need from the 1.x SDK: test servers and real sessions in memory.

* :func:`connect` runs ``server.run`` against a real ``ClientSession`` through a tap that records
  every message as wire JSON (what stdio or HTTP would send) in a :class:`~tests.server.harness.Wire`;
  it reports how ``server.run`` ended (returned, raised, or still running).
* :func:`raw_connect` opens a :class:`~tests.server.harness.RawPeer` on ``server.run``, for wire
  checks the SDK client would reject or never send.
* :class:`Controls` and the server builders give event-driven tools (no sleeps).
* ``bare_sdk_server`` is the SDK's own pattern (``enable_tasks`` + ``run_task``), used only by
  the tests that show a crash path is real.

What is the same on both majors is in :mod:`tests.server.harness`.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel
import mcp.types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.experimental.tasks import ExperimentalClientFeatures
from mcp.client.session import ClientSession, MessageHandlerFnT
from mcp.server.fastmcp import Context, FastMCP
from mcp.server.lowlevel import Server
from mcp.shared.message import SessionMessage

from mcp_tasks_compat.server import ServerTasks, current_call, report_status

from ..harness import RawPeer, Wire

__all__ = [
    "TASK_TOOLS",
    "Connection",
    "Controls",
    "ServerOutcome",
    "StatusWatch",
    "bare_sdk_server",
    "connect",
    "decode",
    "encode",
    "experimental",
    "fastmcp_server",
    "lowlevel_server",
    "raw_connect",
    "run_server",
    "wire_of",
]

TASK_TOOLS = {
    "wait": "optional",
    "stubborn": "optional",
    "echo": "optional",
    "soft_fail": "optional",
    "boom": "optional",
    "needs_task": "required",
    "no_task": "forbidden",
}

SessionStreams = tuple[
    MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]
]


def experimental(session: ClientSession) -> ExperimentalClientFeatures:
    """``session.experimental`` without the 1.28+ deprecation warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return session.experimental


def wire_of(message: SessionMessage | Exception) -> dict[str, Any]:
    if isinstance(message, Exception):
        return {"<exception>": repr(message)}
    return message.message.model_dump(by_alias=True, mode="json", exclude_none=True)


@dataclass
class Controls:
    """Events that drive the test tools: a tool waits on ``release``; ``started`` says it runs."""

    started: anyio.Event = field(default_factory=anyio.Event)
    release: anyio.Event = field(default_factory=anyio.Event)
    stopped: anyio.Event = field(default_factory=anyio.Event)
    """Set when a waiting tool body was cancelled."""
    returned: anyio.Event = field(default_factory=anyio.Event)
    """Set when the stubborn tool body returns (after ignoring a cancel)."""
    seen_tasks: list[str | None] = field(default_factory=lambda: list[str | None]())
    """``current_call().task`` id per tool call (``None`` in a plain call)."""


async def _wait_tool(controls: Controls) -> str:
    task = current_call().task
    controls.seen_tasks.append(task.task_id if task else None)
    await report_status("started")
    controls.started.set()
    try:
        await controls.release.wait()
    except anyio.get_cancelled_exc_class():
        controls.stopped.set()
        raise
    await report_status("released")
    return "released"


async def _stubborn_tool(controls: Controls) -> str:
    """Ignores cancellation and returns normally: the run that crashed the SDK (section 6 #1)."""
    controls.started.set()
    with anyio.CancelScope(shield=True):
        await controls.release.wait()
    controls.returned.set()
    return "finished anyway"


def lowlevel_server(
    tasks: ServerTasks | None, controls: Controls, *, name: str = "v1-lowlevel"
) -> Server[Any, Any]:
    """A low-level Server with the test tools; tasks installed *before* the tools are registered."""
    server: Server[Any, Any] = Server(name)
    if tasks is not None:
        tasks.install(server)

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        return [types.Tool(name=name, inputSchema={"type": "object"}) for name in [*TASK_TOOLS, "plain"]]

    @server.call_tool()
    async def call_tool(name: str, arguments: dict[str, Any]) -> Any:
        if name == "wait":
            return [types.TextContent(type="text", text=await _wait_tool(controls))]
        if name == "stubborn":
            return [types.TextContent(type="text", text=await _stubborn_tool(controls))]
        if name == "soft_fail":
            return types.CallToolResult(
                content=[types.TextContent(type="text", text="soft failure")], isError=True
            )
        if name == "boom":
            raise RuntimeError("boom")
        task = current_call().task
        controls.seen_tasks.append(task.task_id if task else None)
        await report_status(f"echoing {arguments.get('text')}")  # a no-op in a plain call
        return {"echo": arguments.get("text"), "as_task": task is not None}

    return server


def fastmcp_server(tasks: ServerTasks | None, controls: Controls, **settings: Any) -> FastMCP[Any]:
    """A FastMCP with the test tools; tasks installed after the tools. ``settings`` go to FastMCP."""
    server: FastMCP[Any] = FastMCP("v1-fastmcp", **settings)

    @server.tool()
    async def wait(ctx: Context[Any, Any, Any]) -> str:
        await ctx.info("waiting")  # a FastMCP Context works inside a task body
        return await _wait_tool(controls)

    @server.tool()
    async def echo(text: str) -> dict[str, Any]:
        task = current_call().task
        controls.seen_tasks.append(task.task_id if task else None)
        await report_status(f"echoing {text}")
        return {"echo": text, "as_task": task is not None}

    @server.tool()
    async def boom() -> str:
        raise RuntimeError("boom")

    @server.tool()
    async def needs_task() -> str:
        return "ran"

    @server.tool()
    async def no_task() -> str:
        return "ran"

    if tasks is not None:
        tasks.install(server)
    return server


def bare_sdk_server(controls: Controls) -> Server[Any, Any]:
    """The SDK's own documented pattern: enable_tasks + run_task. For bug demos only."""
    from mcp.server.experimental.task_context import ServerTaskContext

    server: Server[Any, Any] = Server("bare-sdk")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        server.experimental.enable_tasks()

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        execution = types.ToolExecution(taskSupport="optional")
        return [types.Tool(name=n, inputSchema={"type": "object"}, execution=execution) for n in TASK_TOOLS]

    @server.call_tool()
    async def call_tool(name: str, arguments: dict[str, Any]) -> Any:
        context = server.request_context

        async def work(task: ServerTaskContext) -> types.CallToolResult:
            if name == "boom":
                raise RuntimeError("boom")
            if name == "soft_fail":
                return types.CallToolResult(
                    content=[types.TextContent(type="text", text="soft failure")], isError=True
                )
            controls.started.set()
            await controls.release.wait()
            if name == "wait":
                await task.update_status("released")
            return types.CallToolResult(content=[types.TextContent(type="text", text="done")])

        return await context.experimental.run_task(work)

    return server


class StatusWatch:
    """A ``message_handler`` collecting ``notifications/tasks/status``; tests wait on a status."""

    def __init__(self) -> None:
        self.statuses: list[tuple[str, str, str | None]] = []
        self._changed = anyio.Event()

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ServerNotification) and isinstance(
            message.root, types.TaskStatusNotification
        ):
            params = message.root.params
            self.statuses.append((params.taskId, params.status, params.statusMessage))
            self._changed.set()
            self._changed = anyio.Event()

    def of(self, task_id: str) -> list[tuple[str, str | None]]:
        return [(status, text) for tid, status, text in self.statuses if tid == task_id]

    async def wait_for(self, task_id: str, status: str) -> None:
        while status not in [seen for seen, _ in self.of(task_id)]:
            await self._changed.wait()


async def _forward(
    source: MemoryObjectReceiveStream[Any], sink: MemoryObjectSendStream[Any], direction: str, wire: Wire
) -> None:
    async with source, sink:
        async for message in source:
            wire.record(direction, wire_of(message))
            try:
                await sink.send(message)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                return


@dataclass
class ServerOutcome:
    """How ``server.run`` ended."""

    done: anyio.Event = field(default_factory=anyio.Event)
    error: BaseException | None = None


async def run_server(
    server: Server[Any, Any], streams: SessionStreams, outcome: ServerOutcome, *, stateless: bool = False
) -> None:
    read_stream, write_stream = streams
    try:
        await server.run(
            read_stream, write_stream, server.create_initialization_options(), stateless=stateless
        )
    except Exception as exc:  # the crash we look for in the bare-SDK demonstrations
        outcome.error = exc
    finally:
        outcome.done.set()


@dataclass
class Connection:
    session: ClientSession
    wire: Wire
    outcome: ServerOutcome
    _client_write: MemoryObjectSendStream[SessionMessage]

    @property
    def tasks(self) -> ExperimentalClientFeatures:
        return experimental(self.session)

    async def close_client(self) -> None:
        """Disconnect now, as a dropped transport does: the server's read stream ends.

        The client's own pending requests then fail with "connection closed" once the server
        closes its side.
        """
        self._client_write.close()
        await anyio.lowlevel.checkpoint()


@asynccontextmanager
async def connect(
    server: FastMCP[Any] | Server[Any, Any],
    *,
    stateless: bool = False,
    message_handler: MessageHandlerFnT | None = None,
    server_grace_s: float = 2.0,
    **callbacks: Any,
) -> AsyncIterator[Connection]:
    """A real ``ClientSession`` connected to ``server.run`` over tapped in-memory streams.

    ``callbacks`` go to the ``ClientSession`` (``elicitation_callback``, ``sampling_callback``...).

    On exit the client disconnects; ``server.run`` gets ``server_grace_s`` to end on its own
    (``outcome.done``) before it is cancelled, so a hanging server fails a test instead of it.
    """
    lowlevel: Server[Any, Any] = server._mcp_server if isinstance(server, FastMCP) else server  # pyright: ignore[reportPrivateUsage]
    wire = Wire()
    outcome = ServerOutcome()
    client_write, tap_client_in = anyio.create_memory_object_stream[SessionMessage](16)
    tap_client_out, server_read = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    server_write, tap_server_in = anyio.create_memory_object_stream[SessionMessage](16)
    tap_server_out, client_read = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    async with anyio.create_task_group() as group:
        group.start_soon(_forward, tap_client_in, tap_client_out, "C->S", wire)
        group.start_soon(_forward, tap_server_in, tap_server_out, "S->C", wire)
        group.start_soon(
            functools.partial(run_server, lowlevel, (server_read, server_write), outcome, stateless=stateless)
        )
        async with ClientSession(
            client_read,
            client_write,
            read_timeout_seconds=timedelta(seconds=5),
            message_handler=message_handler,
            **callbacks,
        ) as session:
            await session.initialize()
            yield Connection(session, wire, outcome, client_write)
        with anyio.move_on_after(server_grace_s):
            await outcome.done.wait()
        group.cancel_scope.cancel()


def encode(frame: dict[str, Any]) -> SessionMessage:
    """A raw frame as the 1.x in-memory streams carry it."""
    return SessionMessage(types.JSONRPCMessage.model_validate(frame))


def decode(item: SessionMessage | Exception) -> dict[str, Any] | None:
    """An item of the 1.x in-memory streams as a raw frame (``None``: a transport exception)."""
    return None if isinstance(item, Exception) else wire_of(item)


@asynccontextmanager
async def raw_connect(
    server: FastMCP[Any] | Server[Any, Any], *, stateless: bool = False
) -> AsyncIterator[tuple[RawPeer, dict[str, Any]]]:
    """An initialized raw peer on ``server.run``; yields it and the ``initialize`` answer."""
    lowlevel: Server[Any, Any] = server._mcp_server if isinstance(server, FastMCP) else server  # pyright: ignore[reportPrivateUsage]
    outcome = ServerOutcome()
    client_write, server_read = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    server_write, client_read = anyio.create_memory_object_stream[SessionMessage](16)
    async with anyio.create_task_group() as group, client_write, client_read:
        serve = functools.partial(
            run_server, lowlevel, (server_read, server_write), outcome, stateless=stateless
        )
        group.start_soon(serve)
        peer = RawPeer(client_read, client_write, encode, decode)
        group.start_soon(peer.pump)
        initialized = await peer.initialize(types.LATEST_PROTOCOL_VERSION, client_name="raw")
        yield peer, initialized
        group.cancel_scope.cancel()
