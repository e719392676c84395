"""mcp 1.x servers: task-capable tools in the 2025-11-25 dialect, run by our engine.

The SDK's own runtime (``enable_tasks`` / ``run_task`` / ``TaskSupport`` / its in-memory store)
is never used: its crash and hang paths (docs/server.md lists them) cannot be patched from outside.
Instead :func:`install` wraps a few things *on the user's server instance* (never the SDK
classes):

* ``run``, entered once per session on every transport (stdio, in-memory, one per streamable HTTP
  session). Around the SDK's own ``run`` it keeps a per-session task group for the runs (never one
  shared across sessions), the ``capabilities.tasks`` of ``initialize``, and a watch on the read
  stream so a disconnect releases blocked ``tasks/result`` waiters at once. The engine's host
  (background, re-runs) is the process's where one serves (a ``TaskServer``'s stdio loop or HTTP
  app, the CLI, a worker); a bare :func:`install` on a server you run yourself keeps the
  first-session fallback: its first session hosts the engine, the next takes over when it ends.
  A session's end stops none of its runs (the rule of ``_server.Launch``): on streamable HTTP the
  server outlives the session, so its ``run`` returns once they end or the server stops; on stdio
  and in memory the session's end is the server's stop, which stops them;
* the ``tools/list``, ``tools/call`` and ``tasks/get|result|list|cancel`` request handlers
  (:mod:`.task_handlers`).

The input functions and the exact-wire-JSON messages are in :mod:`.messages`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast
from weakref import WeakKeyDictionary

import anyio
import anyio.abc
import mcp.types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.server.lowlevel.server import Server, request_ctx
from mcp.server.models import InitializationOptions
from mcp.shared.context import RequestContext
from mcp.shared.message import ServerMessageMetadata, SessionMessage

from ..._detect import refuse_unsupported, sdk_info
from ..._engine import TaskPolicy, ToolRunner, Work
from ...errors import METHOD_NOT_FOUND, UnsupportedSdkError
from ..no_session import NoClientSession
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

NO_REQUEST = "this run was started with no request (a re-run or a worker's run)"

ReadStream = MemoryObjectReceiveStream[SessionMessage | Exception]
WriteStream = MemoryObjectSendStream[SessionMessage]

_installed: WeakKeyDictionary[Server[Any, Any], _Installation] = WeakKeyDictionary()


def install(policy: TaskPolicy, server: Any) -> None:
    """Enable task-capable tools on an mcp 1.x low-level ``Server`` or ``FastMCP``.

    Call it once, before the server runs; tools may be registered before or after. With no host
    of its own (``TaskServer`` and the CLI host the engine for the whole process), the engine is
    hosted by the server's first client session, and by the next one once it ends: until a
    client connects, such a replica does not sweep or re-run.
    """
    lowlevel = lowlevel_server_of(server)
    if lowlevel in _installed:
        raise ValueError(f"tasks are already installed on server {lowlevel.name!r}")
    installation = _Installation(policy, lowlevel)
    _installed[lowlevel] = installation
    installation.wrap_handlers()
    lowlevel.run = installation.run


def tool_runner(server: Any) -> ToolRunner:
    """How a host (a worker, the server's lifespan or app) runs the tools of ``server`` (tasks
    installed) with no request: the tool's own ``tools/call`` handler (:func:`_run_without_request`)."""
    installation = _installed.get(lowlevel_server_of(server))
    if installation is None:
        raise ValueError("tasks are not installed on this server: build it with TaskServer or ServerTasks")
    installation.wrap_handlers()  # tools registered since are seen, once per host
    return installation.run_tool


def hosted_by_lifespan(server: Any) -> None:
    """``server``'s lifespan hosts its engine (``TaskServer``'s): its sessions run no background
    of their own (the first-session fallback of a bare :func:`install`)."""
    installation = _installed.get(lowlevel_server_of(server))
    if installation is not None:
        installation.hosted_by_lifespan = True


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


def _run_without_request(
    original: RequestHandler, tool_name: str, arguments: Mapping[str, Any], lifespan_context: Any
) -> Work:
    """A tool run with no request (a re-run, a worker's run): the tool's own handler, called with
    a request context of its own (the SDK's ``request_ctx``) whose ``lifespan_context`` is the
    host's lifespan value and whose session refuses by name what cannot cross
    (:mod:`..no_session`)."""
    request = types.CallToolRequest(
        method="tools/call", params=types.CallToolRequestParams(name=tool_name, arguments=dict(arguments))
    )

    async def work() -> dict[str, Any]:
        context = RequestContext[Any, Any, Any](
            request_id=f"no-request-{tool_name}",
            meta=None,
            session=NoClientSession(NO_REQUEST, ToolError),
            lifespan_context=lifespan_context,
        )
        token = request_ctx.set(context)
        try:
            return await call_original(original, request)
        finally:
            request_ctx.reset(token)

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
        self.host_lock = anyio.Lock()
        self.call_tool: RequestHandler | None = None
        """The server's own ``tools/call`` handler (before ours wraps it): how a tool runs with no request."""
        self.hosted_by_lifespan = False
        """Set by ``TaskServer``: the server's lifespan hosts the engine, so sessions host nothing."""

    def run_tool(self, tool_name: str, arguments: Mapping[str, Any], lifespan_context: Any) -> Work | None:
        """A tool run with no request (:func:`_run_without_request`); ``None`` before a tool is registered."""
        if self.call_tool is None:
            return None
        return _run_without_request(self.call_tool, tool_name, arguments, lifespan_context)

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
                    self.call_tool = current
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
        inner_send, inner_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        async with anyio.create_task_group() as group:
            async with anyio.create_task_group() as runs:
                if not self.hosted_by_lifespan and self.engine.serving.hosts.process is None:
                    await self._host_fallback(group, runs)
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

    async def _host_fallback(self, group: anyio.abc.TaskGroup, runs: anyio.abc.TaskGroup) -> None:
        """A bare :func:`install`'s engine has no host of its own (a ``TaskServer``'s lifespan, a
        worker, the CLI host one): the first session hosts it, re-runs among its ``runs`` (an
        HTTP session's end waits for them too), and the next session takes over when it ends.
        The first one's host is up (the store recovered) before its first request is read."""
        if self.host_lock.locked():
            group.start_soon(self._host_while_serving, runs, name="mcp-tasks host")
        else:
            await group.start(self._host_while_serving, runs, name="mcp-tasks host")

    async def _host_while_serving(
        self,
        runs: anyio.abc.TaskGroup,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        async with self.host_lock, self.engine.hosted(tools=self.run_tool, runs_in=runs):
            task_status.started()
            await anyio.sleep_forever()
