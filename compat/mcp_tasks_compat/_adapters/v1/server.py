"""mcp 1.x servers: task-capable tools in the 2025-11-25 dialect, run by our engine.

The SDK's own runtime (``enable_tasks`` / ``run_task`` / ``TaskSupport`` / its in-memory store)
is never used: its crash and hang paths (docs/server.md lists them) cannot be patched from outside.
Instead :func:`install` wraps a few things *on the user's server instance* (never the SDK
classes):

* ``run``, entered once per session on every transport (stdio, in-memory, one per streamable HTTP
  session). Around the SDK's own ``run`` it keeps a per-session task group for the runs (never one
  shared across sessions), the one TTL sweeper, the ``capabilities.tasks`` of ``initialize``, and a
  watch on the read stream so a disconnect releases blocked ``tasks/result`` waiters at once.
  A session's end stops none of its runs (the rule of ``_server.Launch``): on streamable HTTP the
  server outlives the session, so its ``run`` returns once they end or the server stops; on stdio
  and in memory the session's end is the server's stop, which stops them;
* the ``tools/list``, ``tools/call`` and ``tasks/get|result|list|cancel`` request handlers
  (:mod:`.task_handlers`).

The input functions and the exact-wire-JSON messages are in :mod:`.messages`.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any, cast
from weakref import WeakKeyDictionary

import anyio
import anyio.abc
import mcp.types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.fastmcp import FastMCP
from mcp.server.lowlevel.server import Server
from mcp.server.models import InitializationOptions
from mcp.shared.message import ServerMessageMetadata, SessionMessage

from ..._detect import refuse_unsupported, sdk_info
from ..._engine import TaskPolicy, Work
from ..._engine.reruns import RerunWork
from ...errors import METHOD_NOT_FOUND, UnsupportedSdkError
from .messages import input_result as input_result
from .messages import plain_input as plain_input
from .messages import undeclared_capability as undeclared_capability
from .runs import RequestHandler, call_original
from .sessions import SessionTasks, current_session
from .task_handlers import TaskHandlers

__all__ = [
    "input_result",
    "install",
    "lowlevel_server_of",
    "mcpserver_kwargs",
    "plain_input",
    "undeclared_capability",
]

ReadStream = MemoryObjectReceiveStream[SessionMessage | Exception]
WriteStream = MemoryObjectSendStream[SessionMessage]

_installed: WeakKeyDictionary[Server[Any, Any], _Installation] = WeakKeyDictionary()


def install(policy: TaskPolicy, server: Any) -> None:
    """Enable task-capable tools on an mcp 1.x low-level ``Server`` or ``FastMCP``.

    Call it once, before the server runs; tools may be registered before or after.
    """
    lowlevel = lowlevel_server_of(server)
    if lowlevel in _installed:
        raise ValueError(f"tasks are already installed on server {lowlevel.name!r}")
    installation = _Installation(policy, lowlevel)
    _installed[lowlevel] = installation
    installation.wrap_handlers()
    lowlevel.run = installation.run


def tool_runner(server: Any) -> RerunWork:
    """How a worker runs the tools of ``server`` (tasks installed) without a request: the tool's
    own ``tools/call`` handler, as a re-run calls it (:func:`_rerun_work`)."""
    installation = _installed.get(lowlevel_server_of(server))
    if installation is None:
        raise ValueError("tasks are not installed on this server: build it with TaskServer or ServerTasks")
    installation.wrap_handlers()  # tools registered since are seen
    runner = installation.engine.rerun_work
    if runner is None:
        raise ValueError("this server has no tools/call handler: register a tool first")
    return runner


def mcpserver_kwargs(policy: TaskPolicy, **user_kwargs: Any) -> dict[str, Any]:
    """mcp 1.x has no ``MCPServer``: refused as ``ServerTasks.mcpserver_kwargs`` refuses it."""
    del policy, user_kwargs
    refuse_unsupported(["MCPServer"], side="server")
    raise UnsupportedSdkError(f"mcp {sdk_info().mcp_version} has no MCPServer; fix: pip install 'mcp>=2,<3'")


def lowlevel_server_of(server: object) -> Server[Any, Any]:
    if isinstance(server, Server):
        return cast("Server[Any, Any]", server)
    if isinstance(server, FastMCP):
        lowlevel: object = getattr(cast("FastMCP[Any]", server), "_mcp_server", None)
        if not isinstance(lowlevel, Server):
            raise UnsupportedSdkError(
                "mcp-tasks-compat needs FastMCP._mcp_server (the low-level Server a FastMCP wraps), "
                f"which mcp {sdk_info().mcp_version} does not have; "
                "fix: pip install 'mcp>=1.23,<=1.30' or install tasks on the low-level Server"
            )
        return cast("Server[Any, Any]", lowlevel)
    raise TypeError(
        "ServerTasks.install() on mcp 1.x takes a mcp.server.lowlevel.Server or a "
        f"mcp.server.fastmcp.FastMCP, not {type(server).__name__}"
    )


def _rerun_work(original: RequestHandler, tool_name: str, arguments: Mapping[str, Any]) -> Work:
    """A lost run of ``tool_name`` started again: the tool's own handler, called without a request
    (a FastMCP tool's ``ctx`` then has no request: the library's ``report_status`` still works)."""
    request = types.CallToolRequest(
        method="tools/call", params=types.CallToolRequestParams(name=tool_name, arguments=dict(arguments))
    )

    async def work() -> dict[str, Any]:
        return await call_original(original, request)

    return work


def _with_tasks_capability(
    options: InitializationOptions, capability: Mapping[str, Any]
) -> InitializationOptions:
    tasks_capability = types.ServerTasksCapability.model_validate(dict(capability))
    capabilities = options.capabilities.model_copy(update={"tasks": tasks_capability})
    return options.model_copy(update={"capabilities": capabilities})


def _over_http(message: SessionMessage | Exception) -> bool:
    """Whether ``message`` came over HTTP (streamable HTTP or SSE attach the starlette request): a
    server that serves many sessions and outlives each of them."""
    metadata = getattr(message, "metadata", None)
    return isinstance(metadata, ServerMessageMetadata) and metadata.request_context is not None


def _discover_refusal(message: SessionMessage | Exception) -> SessionMessage | None:
    """The -32601 answer to a ``server/discover`` request (a 2026-07-28 method 1.x does not serve)."""
    if not isinstance(message, SessionMessage):
        return None
    request = message.message.root
    if not isinstance(request, types.JSONRPCRequest) or request.method != "server/discover":
        return None
    error = types.ErrorData(code=METHOD_NOT_FOUND, message="Method not found: server/discover")
    return SessionMessage(types.JSONRPCMessage(types.JSONRPCError(jsonrpc="2.0", id=request.id, error=error)))


class _Installation:
    """Our handlers in place on one low-level server, and its ``run`` owning each session's runs."""

    def __init__(self, tasks: TaskPolicy, server: Server[Any, Any]) -> None:
        self.handlers = TaskHandlers(tasks)
        self.engine = tasks.engine
        self.server = server
        self.original_run = server.run
        self.ours: dict[type, RequestHandler] = {}
        self.sweeper_lock = anyio.Lock()
        # Expiry is noticed within a tenth of the TTL floor, between 50 ms and 1 s.
        self.sweep_interval_s = max(0.05, min(1.0, self.engine.ttl_floor_ms / 10_000))

    # --- wiring ---------------------------------------------------------------------------------

    def wrap_handlers(self) -> None:
        """Put our handlers in place; idempotent, and run again per session for late registrations."""
        handlers = self.server.request_handlers
        for request_type, make in (
            (types.CallToolRequest, self.handlers.make_call_tool),
            (types.ListToolsRequest, self.handlers.make_list_tools),
        ):
            current = handlers.get(request_type)
            if current is not None and current is not self.ours.get(request_type):
                self.ours[request_type] = handlers[request_type] = make(current)
                if request_type is types.CallToolRequest:
                    self.engine.rerun_work = partial(_rerun_work, current)
        for request_type, handler in (
            (types.GetTaskRequest, self.handlers.get_task),
            (types.GetTaskPayloadRequest, self.handlers.get_task_result),
            (types.ListTasksRequest, self.handlers.list_tasks),
            (types.CancelTaskRequest, self.handlers.cancel_task),
        ):
            handlers[request_type] = handler

    async def run(
        self,
        read_stream: ReadStream,
        write_stream: WriteStream,
        initialization_options: InitializationOptions,
        raise_exceptions: bool = False,
        stateless: bool = False,
    ) -> None:
        """The SDK's ``Server.run`` inside a session that owns its task runs."""
        self.wrap_handlers()
        capability = self.handlers.service.capability()
        if not stateless and capability is not None:
            initialization_options = _with_tasks_capability(initialization_options, capability)
        # The runs a killed server left are failed before this session's first request can read
        # them (the sweeper below would do it too, but concurrently with the requests).
        await self.engine.open()
        await self.engine.recover()
        inner_send, inner_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        async with anyio.create_task_group() as group:
            async with anyio.create_task_group() as runs:
                # re-runs start among the session's runs: an HTTP session's end waits for them too
                group.start_soon(self._sweep_while_serving, runs, name="mcp-tasks sweeper")
                session = SessionTasks(runs=runs, stateless=stateless)
                group.start_soon(
                    self._watch_read_stream,
                    read_stream,
                    inner_send,
                    session,
                    write_stream,
                    name="mcp-tasks reader",
                )
                token = current_session.set(session)
                try:
                    await self.original_run(
                        inner_receive, write_stream, initialization_options, raise_exceptions, stateless
                    )
                finally:
                    current_session.reset(token)
                    inner_receive.close()
                    session.transport_closed()  # whatever ended the run, nothing more reaches this peer
                    if not session.over_http:
                        runs.cancel_scope.cancel()  # stdio, in memory: the session ends with the server
                # Leaving ``runs`` waits for the runs of a streamable HTTP session: a session's end stops
                # none of its runs (docs/server.md), the server's stop (which cancels this) stops them.
            group.cancel_scope.cancel()

    async def _watch_read_stream(
        self,
        source: ReadStream,
        sink: MemoryObjectSendStream[SessionMessage | Exception],
        session: SessionTasks,
        answers: WriteStream,
    ) -> None:
        """Forward the transport's messages to the SDK and notice when the peer goes away.

        ``server/discover`` (the first thing every mcp 2.x client sends) is answered here with a
        clean -32601: the SDK would fail to validate it against its request union, log about a
        hundred lines of validation errors per connection, and answer -32602.
        """
        try:
            async for message in source:
                if not session.over_http and _over_http(message):
                    session.over_http = True
                refusal = _discover_refusal(message)
                if refusal is not None:
                    await answers.send(refusal)
                    continue
                await sink.send(message)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass  # the SDK closed its end first: the session is ending anyway
        finally:
            session.transport_closed()
            sink.close()
            source.close()

    async def _sweep_while_serving(self, runs: anyio.abc.TaskGroup) -> None:
        """One TTL sweeper per server: the first session runs it (its re-runs among the session's
        ``runs``), the next takes over."""
        async with self.sweeper_lock:
            await self.engine.background(max_sleep_s=self.sweep_interval_s, reruns_in=runs)
