"""The client tests' scripted servers: peers that fake server behaviours the project's server never shows.

The project's own server is served by the testing kit (:mod:`.harness` builds it); these are the
other side of the wire, so the client is judged against more than its own server:

* on mcp 1.x, the SDK's own experimental task server (``server.experimental.enable_tasks()`` and
  ``ctx.experimental.run_task``, not the project's runtime): the 2025-11-25 peer the client must
  work with as is, including its fixed 500 ms poll hint, its session-scoped task ids (1.27.2+) and
  its habit of ending an ``isError`` tool result ``completed``;
* on mcp 2.x, :class:`DualDialectServer`, an independent reading of both specifications on one
  ``MCPServer``: a minimal SEP-2663 Tasks extension (2026-07-28) and a handshake-era 2025-11-25
  server, with :class:`Knobs` for poll hints, TTLs, session scoping, refusals of ``tasks/result``
  and how ``server/discover`` is met (answered, refused, never answered, answered late).

Every server runs the same tools against one :class:`Script`:

* ``echo(text)``: plain only (``taskSupport`` forbidden / never a task);
* ``gated(label)``: reports status ``"started"``, waits for ``script.release``, returns ``done <label>``;
* ``failing()``: the work fails with an error (``boom``);
* ``tool_error()``: returns a ``CallToolResult`` with ``isError: true`` (``bad input``);
* ``hang()``: never returns on its own (only cancellation ends it);
* ``count_gets()``: returns once the server has answered ``script.gets_needed`` ``tasks/get``.

The module imports no ``mcp`` at import time (each server imports its major's SDK when built), so
the harness imports it on either major. ``python -m client.scripted_servers KIND GETS`` (run from
``tests/``) serves one over stdio: the kit's ``serve`` command serves the project's server only,
and these tests need the scripted ones (``KIND`` is a harness kind of :data:`STDIO_KINDS`).
"""

import contextvars
import json
import sys
import uuid
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Literal

import anyio
import anyio.abc
from pydantic import BaseModel

if TYPE_CHECKING:
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext  # mcp 2.x
    from mcp.server.experimental.task_context import ServerTaskContext  # mcp 1.x
    from mcp.server.lowlevel import Server  # mcp 1.x
    from mcp.server.mcpserver import MCPServer  # mcp 2.x
    from mcp.shared.message import SessionMessage

# No ``from __future__ import annotations`` here: each SDK's tool decorator reads the tools' return
# annotations at run time, and those name the SDK's types, imported where each server is built.
# Annotations naming an SDK type outside those functions are therefore quoted.

__all__ = [
    "PLAIN_TOOLS",
    "STDIO_KINDS",
    "TASK_TOOLS",
    "DualDialectServer",
    "Knobs",
    "Script",
    "build_sdk_task_server",
    "dual_dialect_streams",
    "http_server",
    "sdk_task_server_streams",
]

TASK_TOOLS = ("gated", "failing", "tool_error", "hang", "count_gets")
PLAIN_TOOLS = ("echo",)
STDIO_KINDS = ("sdk-2025", "2026")
"""The kinds :func:`main` serves: the mcp 1.x SDK's own task server, the mcp 2.x dual-dialect one."""


@dataclass
class Knobs:
    """How a scripted server behaves; the mcp 1.x SDK server honours only ``tasks``."""

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
    cancel_after_gets: int = 0
    """2026-07-28 on mcp 2.x: ``tasks/cancel`` only acknowledges, and the task ends cancelled at the
    n-th ``tasks/get`` after it (work that takes a while to stop); 0: at once."""


@dataclass
class Script:
    """What a tool waits on and what the server saw, shared by the test and the server."""

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


# --- mcp 1.x: the SDK's own experimental task server -----------------------------------------------

_SCHEMAS: dict[str, dict[str, Any]] = {
    "echo": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    "gated": {"type": "object", "properties": {"label": {"type": "string"}}, "required": ["label"]},
}


def build_sdk_task_server(script: Script, knobs: Knobs) -> "Server[Any, Any]":
    """A low-level mcp 1.x ``Server`` running the tools on the SDK's own task runtime."""
    import mcp.types as types
    from mcp.server.lowlevel import Server

    def text(value: str, *, is_error: bool = False) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=value)], isError=is_error)

    server: Server[Any, Any] = Server("client-test-server-v1")
    if knobs.tasks:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            server.experimental.enable_tasks()
        handlers = server.request_handlers
        default_get = handlers[types.GetTaskRequest]
        default_cancel = handlers[types.CancelTaskRequest]

        async def observed_get(request: types.GetTaskRequest) -> Any:
            script.saw_get()
            return await default_get(request)

        async def observed_cancel(request: types.CancelTaskRequest) -> Any:
            script.saw_cancel(request.params.taskId)
            return await default_cancel(request)

        handlers[types.GetTaskRequest] = observed_get  # wrapping this test server's own handlers
        handlers[types.CancelTaskRequest] = observed_cancel

    def tool(name: str) -> types.Tool:
        execution = (
            types.ToolExecution(taskSupport="optional") if knobs.tasks and name in TASK_TOOLS else None
        )
        schema = _SCHEMAS.get(name, {"type": "object", "properties": {}})
        return types.Tool(name=name, inputSchema=schema, execution=execution)

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        return [tool(name) for name in (*PLAIN_TOOLS, *TASK_TOOLS)]

    async def work(
        name: str, arguments: dict[str, Any], task: "ServerTaskContext | None"
    ) -> types.CallToolResult:
        if name == "echo":
            return text(str(arguments["text"]))
        if name == "gated":
            if task is not None:
                await task.update_status("started")
            await script.release.wait()
            return text(f"done {arguments['label']}")
        if name == "failing":
            raise RuntimeError("boom")
        if name == "tool_error":
            return text("bad input", is_error=True)
        if name == "hang":
            await anyio.sleep_forever()
        if name == "count_gets":
            await script.enough_gets.wait()
            return text("counted")
        raise ValueError(f"unknown tool {name}")

    @server.call_tool()
    async def call_tool(name: str, arguments: dict[str, Any]) -> Any:
        ctx = server.request_context
        if knobs.tasks and ctx.experimental.is_task:
            created = await ctx.experimental.run_task(lambda task: work(name, arguments, task))
            script.created.append(created.task.taskId)
            return created
        return await work(name, arguments, None)

    return server


def _only_disconnects(error: BaseException) -> bool:
    """Whether ``error`` (or every leaf of a group) is the server writing to a client that left."""
    leaves: object = getattr(error, "exceptions", None)
    if isinstance(leaves, tuple):
        return all(_only_disconnects(leaf) for leaf in leaves)  # pyright: ignore[reportUnknownVariableType]
    return isinstance(error, (anyio.BrokenResourceError, anyio.ClosedResourceError))


@asynccontextmanager
async def sdk_task_server_streams(server: "Server[Any, Any]") -> AsyncIterator[tuple[Any, Any]]:
    """Client (read, write) streams to an mcp 1.x low-level ``server`` over in-memory JSON-RPC.

    A 1.x server that answers a request after its client left (e.g. a ``tasks/result`` the
    client stopped waiting for) dies writing to the closed stream; that is tolerated here, since
    a server that died while the client still used it fails the client's own requests. (The
    kit's in-memory streams do not tolerate it: they serve the project's server, which does not.)
    """
    from mcp.shared.memory import create_client_server_memory_streams

    async def serve(streams: Any) -> None:
        try:
            await server.run(*streams, server.create_initialization_options())
        except Exception as error:
            if not _only_disconnects(error):
                raise

    async with (
        create_client_server_memory_streams() as (client_streams, server_streams),
        anyio.create_task_group() as group,
    ):
        group.start_soon(serve, server_streams)
        try:
            yield client_streams
        finally:
            # Server.run waits for task work still running; the test is done with it.
            group.cancel_scope.cancel()


# --- mcp 2.x: both dialects on one MCPServer, written for these tests --------------------------------
#
# * 2026-07-28, a minimal SEP-2663 Tasks extension: an ``Extension`` advertises
#   ``io.modelcontextprotocol/tasks`` and answers a declaring client's ``tools/call`` with a flat
#   ``resultType: "task"`` handle while the tool runs in a task group the test owns; ``tasks/get``
#   inlines the result or error; ``tasks/cancel`` acknowledges.
# * 2025-11-25 on a handshake-era connection: a short-circuiting ``Server.middleware`` answers a
#   ``tools/call`` carrying ``params.task`` with the nested ``{"task": {...}}`` (the runner's sieve
#   would reject it from a handler), ``capabilities.tasks`` is added to the initialize options,
#   and ``tasks/get|result|cancel`` are plain request handlers.
#
# To make a 2.x server look handshake-era to a 2.x client, the in-memory transport here can refuse
# ``server/discover`` (-32601, as an old server does) or never answer it, before it reaches the
# server (whose first frame would otherwise settle the connection on 2026-07-28).

TASKS_EXT = "io.modelcontextprotocol/tasks"
RELATED_TASK = "io.modelcontextprotocol/related-task"
TERMINAL = frozenset({"completed", "failed", "cancelled"})
FAILING_ERROR = {"code": -32050, "message": "boom", "data": {"why": "the test tool failed"}}

_running: "contextvars.ContextVar[Record | None]" = contextvars.ContextVar("running", default=None)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


def _text(text: str, *, is_error: bool = False) -> Any:
    import mcp_types

    return mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text=text)], is_error=is_error
    )


def _dump(result: object) -> dict[str, Any]:
    if isinstance(result, BaseModel):
        return result.model_dump(by_alias=True, mode="json", exclude_none=True)
    assert isinstance(result, Mapping)
    return dict(result)  # pyright: ignore[reportUnknownArgumentType]


def _is_modern(protocol_version: str | None) -> bool:
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    return protocol_version in MODERN_PROTOCOL_VERSIONS


@dataclass
class Record:
    task_id: str
    modern: bool
    owner: object
    ttl_ms: int | None
    status: str = "working"
    message: str | None = None
    created: str = field(default_factory=_now)
    updated: str = field(default_factory=_now)
    created_at: float = field(default_factory=anyio.current_time)
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    answers: int = 0
    scope: anyio.CancelScope | None = None
    done: anyio.Event = field(default_factory=anyio.Event)
    cancel_in: int | None = None
    """``tasks/get`` answers left before an acknowledged cancel ends the task (``cancel_after_gets``)."""

    def move(self, status: str, message: str | None = None) -> None:
        if self.status in TERMINAL:
            return  # terminal is final (a late tool outcome after cancel is dropped)
        self.status = status
        if message is not None:
            self.message = message
        self.updated = _now()
        if status in TERMINAL:
            self.done.set()

    def cancel(self) -> None:
        self.move("cancelled", "cancelled by the client")
        if self.scope is not None:
            self.scope.cancel()

    def count_down_cancel(self) -> None:
        """One ``tasks/get`` answered: an acknowledged cancel ends the task once none are left."""
        if self.cancel_in is None:
            return
        self.cancel_in -= 1
        if self.cancel_in <= 0:
            self.cancel_in = None
            self.cancel()

    def expired(self) -> bool:
        return self.ttl_ms is not None and anyio.current_time() > self.created_at + self.ttl_ms / 1000

    def wire(self, knobs: Knobs) -> dict[str, Any]:
        hint = knobs.poll_hints[min(self.answers, len(knobs.poll_hints) - 1)]
        self.answers += 1
        wire: dict[str, Any] = {"taskId": self.task_id, "status": self.status}
        if self.message is not None:
            wire["statusMessage"] = self.message
        wire["createdAt"] = self.created
        wire["lastUpdatedAt"] = self.updated
        if self.modern:
            wire["ttlMs"] = self.ttl_ms
            if hint is not None:
                wire["pollIntervalMs"] = hint
        else:
            wire["ttl"] = self.ttl_ms
            if hint is not None:
                wire["pollInterval"] = hint
        return wire


def _connection_of(ctx: "ServerRequestContext[Any, Any]") -> object:
    """One identity per client connection (``ctx.session`` is built afresh for each request)."""
    return getattr(ctx.session, "_connection", ctx.session)


def report(message: str) -> None:
    """Set the running task's status message (nothing in a plain call)."""
    record = _running.get()
    if record is not None:
        record.move(record.status, message)


class DualDialectServer:
    """Both dialects on one ``MCPServer``; background work runs in ``group`` (owned by the test)."""

    def __init__(self, script: Script, knobs: Knobs, group: anyio.abc.TaskGroup) -> None:
        from mcp.server.mcpserver import MCPServer

        self.script = script
        self.knobs = knobs
        self.group = group
        self.records: dict[str, Record] = {}
        extensions = [_tasks_extension(self)] if knobs.tasks else []
        self.server = MCPServer("client-test-server", extensions=extensions, middleware=[self._middleware])
        self._tools()
        if knobs.tasks:
            self._tasks_methods()

    # --- tools -----------------------------------------------------------------------------

    def _tools(self) -> None:
        import mcp_types
        from mcp.shared.exceptions import MCPError

        server, script = self.server, self.script

        @server.tool()
        async def echo(text: str) -> mcp_types.CallToolResult:
            return _text(text)

        @server.tool()
        async def gated(label: str) -> mcp_types.CallToolResult:
            report("started")
            await script.release.wait()
            return _text(f"done {label}")

        @server.tool()
        async def failing() -> mcp_types.CallToolResult:
            raise MCPError(**FAILING_ERROR)

        @server.tool()
        async def tool_error() -> mcp_types.CallToolResult:
            return _text("bad input", is_error=True)

        @server.tool()
        async def hang() -> mcp_types.CallToolResult:
            await anyio.sleep_forever()
            raise AssertionError("unreachable")

        @server.tool()
        async def count_gets() -> mcp_types.CallToolResult:
            await script.enough_gets.wait()
            return _text("counted")

    # --- task bookkeeping ------------------------------------------------------------------

    def create(self, *, modern: bool, owner: object, requested_ttl: int | None) -> Record:
        ttl = self.knobs.ttl_ms if self.knobs.ttl_ms is not None else (60_000 if modern else requested_ttl)
        record = Record(task_id=f"task-{uuid.uuid4()}", modern=modern, owner=owner, ttl_ms=ttl)
        self.records[record.task_id] = record
        self.script.created.append(record.task_id)
        return record

    def start(self, record: Record, run_tool: Callable[[], Awaitable[object]]) -> None:
        from mcp.shared.exceptions import MCPError

        async def run() -> None:
            _running.set(record)
            with anyio.CancelScope() as scope:
                record.scope = scope
                try:
                    outcome = _dump(await run_tool())
                except MCPError as error:
                    record.error = error.error.model_dump(mode="json", exclude_none=True)
                    record.move("failed", error.message)
                    return
                except Exception as error:
                    record.error = {"code": -32603, "message": str(error)}
                    record.move("failed", str(error))
                    return
                record.result = outcome
                # 2025-11-25: a tool error ends the task failed; the Tasks extension calls it completed.
                failed = outcome.get("isError") is True and not record.modern
                record.move("failed" if failed else "completed")

        self.group.start_soon(run)

    def lookup(self, ctx: "ServerRequestContext[Any, Any]", task_id: str) -> Record:
        from mcp.shared.exceptions import MCPError

        record = self.records.get(task_id)
        if (
            record is not None
            and not record.modern
            and self.knobs.scoped
            and record.owner is not _connection_of(ctx)
        ):
            record = None
        if record is not None and record.expired() and record.status not in TERMINAL:
            record = None
        if record is None:
            raise MCPError(code=-32602, message=f"Task not found: {task_id}")
        return record

    # --- 2025-11-25 (handshake era) --------------------------------------------------------

    async def _middleware(
        self, ctx: "ServerRequestContext[Any, Any]", call_next: "CallNext"
    ) -> "HandlerResult":
        from mcp.shared.exceptions import MCPError

        handshake_era = not _is_modern(ctx.protocol_version)
        params = dict(ctx.params or {})
        if (
            handshake_era
            and self.knobs.tasks
            and ctx.method == "tools/call"
            and params.get("task") is not None
        ):
            if params.get("name") not in TASK_TOOLS:
                raise MCPError(code=-32601, message="This tool does not support task-augmented invocation")
            requested = params["task"].get("ttl")
            record = self.create(modern=False, owner=_connection_of(ctx), requested_ttl=requested)
            self.start(record, lambda: call_next(ctx))
            return {"task": record.wire(self.knobs)}  # short-circuit: the runner trusts middleware output
        result = await call_next(ctx)
        if handshake_era and self.knobs.tasks and ctx.method == "tools/list":
            listing = _dump(result)
            for tool in listing.get("tools", []):
                if tool.get("name") in TASK_TOOLS:
                    tool["execution"] = {"taskSupport": "optional"}
            return listing
        return result

    # --- tasks/* for both dialects ---------------------------------------------------------

    def _tasks_methods(self) -> None:
        import mcp_types
        from mcp.shared.exceptions import MCPError

        class TaskIdParams(mcp_types.RequestParams):
            task_id: str

        low = self.server._lowlevel_server  # pyright: ignore[reportPrivateUsage]
        knobs, script = self.knobs, self.script

        async def tasks_get(ctx: "ServerRequestContext[Any, Any]", params: TaskIdParams) -> dict[str, Any]:
            script.saw_get()
            record = self.lookup(ctx, params.task_id)
            record.count_down_cancel()
            wire = record.wire(knobs)
            if not record.modern:
                return wire
            answer: dict[str, Any] = {"resultType": "complete", **wire}
            if record.status == "completed":
                answer["result"] = record.result
            elif record.status == "failed":
                answer["error"] = record.error
            return answer

        async def tasks_result(ctx: "ServerRequestContext[Any, Any]", params: TaskIdParams) -> dict[str, Any]:
            if _is_modern(ctx.protocol_version):
                raise MCPError(code=-32601, message="Method not found", data="tasks/result")
            record = self.lookup(ctx, params.task_id)
            if knobs.result_refuses_working and record.status not in TERMINAL:
                raise MCPError(code=knobs.result_refusal_code, message="not terminal yet; poll tasks/get")
            await record.done.wait()
            related = {RELATED_TASK: {"taskId": record.task_id}}
            if record.status == "failed" and record.result is None and record.error is not None:
                raise MCPError(**record.error)
            if record.status == "cancelled" or record.result is None:
                return {"_meta": related}
            return {**record.result, "_meta": related}

        async def tasks_cancel(ctx: "ServerRequestContext[Any, Any]", params: TaskIdParams) -> dict[str, Any]:
            script.saw_cancel(params.task_id)
            record = self.lookup(ctx, params.task_id)
            if record.status in TERMINAL:
                if record.modern:
                    return {}
                raise MCPError(code=-32602, message=f"Cannot cancel task in terminal state '{record.status}'")
            if record.modern and knobs.cancel_after_gets:
                record.cancel_in = knobs.cancel_after_gets
                return {}
            record.cancel()
            return {} if record.modern else record.wire(knobs)

        low.add_request_handler("tasks/get", TaskIdParams, tasks_get)
        low.add_request_handler("tasks/result", TaskIdParams, tasks_result)
        low.add_request_handler("tasks/cancel", TaskIdParams, tasks_cancel)

        original = low.create_initialization_options

        def with_tasks_capability(*args: Any, **kwargs: Any) -> Any:
            options = original(*args, **kwargs)
            options.capabilities.tasks = mcp_types.ServerTasksCapability(
                list=mcp_types.TasksListCapability(),
                cancel=mcp_types.TasksCancelCapability(),
                requests=mcp_types.ServerTasksRequestsCapability(
                    tools=mcp_types.TasksToolsCapability(call=mcp_types.TasksCallCapability())
                ),
            )
            return options

        low.create_initialization_options = with_tasks_capability  # this test server's own instance


def _tasks_extension(owner: DualDialectServer) -> Any:
    """The 2026-07-28 half: advertise the extension, answer declaring clients with a task handle."""
    import mcp_types
    from mcp.server.extension import Extension

    class Sep2663(Extension):
        identifier = TASKS_EXT

        def __init__(self, owner: DualDialectServer) -> None:
            self.owner = owner

        def settings(self) -> dict[str, Any]:
            return {}

        async def intercept_tool_call(
            self,
            params: mcp_types.CallToolRequestParams,
            ctx: "ServerRequestContext[Any, Any]",
            call_next: "CallNext",
        ) -> "HandlerResult":
            caps = ctx.session.client_capabilities
            declared = bool(caps and caps.extensions and TASKS_EXT in caps.extensions)
            if not _is_modern(ctx.protocol_version) or not declared or params.name not in TASK_TOOLS:
                return await call_next(ctx)
            record = self.owner.create(modern=True, owner=_connection_of(ctx), requested_ttl=None)
            self.owner.start(record, lambda: call_next(ctx))
            return {"resultType": "task", **record.wire(self.owner.knobs)}

    return Sep2663(owner)


# --- mcp 2.x transports ------------------------------------------------------------------------------


def _discover_filter(mode: str) -> "Callable[[SessionMessage], SessionMessage | bool | None]":
    """What to do with a client frame: forward (True), answer it (a message), or swallow it (None)."""
    import mcp_types
    from mcp.shared.message import SessionMessage
    from mcp_types.jsonrpc import JSONRPCError, JSONRPCRequest

    def decide(message: SessionMessage) -> SessionMessage | bool | None:
        frame = message.message
        if not isinstance(frame, JSONRPCRequest) or frame.method != "server/discover" or mode == "answer":
            return True
        if mode in ("silent", "late"):
            return None
        error = mcp_types.ErrorData(code=-32601, message="Method not found")
        return SessionMessage(message=JSONRPCError(jsonrpc="2.0", id=frame.id, error=error))

    return decide


@asynccontextmanager
async def dual_dialect_streams(
    server: "MCPServer", discover: str = "answer"
) -> AsyncIterator[tuple[Any, Any]]:
    """Client (read, write) streams to an mcp 2.x ``server`` over in-memory JSON-RPC, one server run each.

    ``discover`` says how ``server/discover`` is met before the server sees it (see :class:`Knobs`).
    """
    from mcp.shared.message import SessionMessage

    low = server._lowlevel_server  # pyright: ignore[reportPrivateUsage]
    decide = _discover_filter(discover)
    to_client_send, to_client_recv = anyio.create_memory_object_stream[SessionMessage | Exception](32)
    from_client_send, from_client_recv = anyio.create_memory_object_stream[SessionMessage | Exception](32)
    to_server_send, to_server_recv = anyio.create_memory_object_stream[SessionMessage | Exception](32)
    server_out = to_client_send.clone()

    held: list[SessionMessage] = []
    probes = 0

    async def pump() -> None:
        nonlocal probes
        async with from_client_recv, to_server_send:
            async for item in from_client_recv:
                verdict = decide(item) if isinstance(item, SessionMessage) else True
                if verdict is None and discover == "late":
                    probes += 1
                    if probes > 1:
                        verdict = True  # only the first probe is late
                if verdict is True:
                    # "late": the held probe reaches the server just before the client's next frame,
                    # as when a slow-starting server reads a probe the client already gave up on.
                    while held:
                        await to_server_send.send(held.pop(0))
                    await to_server_send.send(item)
                elif isinstance(verdict, SessionMessage):
                    await to_client_send.send(verdict)
                elif discover == "late" and isinstance(item, SessionMessage):
                    held.append(item)

    async with anyio.create_task_group() as group:
        group.start_soon(pump)
        group.start_soon(lambda: low.run(to_server_recv, server_out, low.create_initialization_options()))
        try:
            yield to_client_recv, from_client_send
        finally:
            await from_client_send.aclose()
            group.cancel_scope.cancel()
    await to_client_send.aclose()
    await to_client_recv.aclose()


def recording_app(app: Any, script: Script) -> Any:
    """ASGI wrapper recording each POST's JSON-RPC method and its ``mcp-*`` headers."""

    async def wrapped(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await app(scope, receive, send)
            return
        headers = {
            k.decode().lower(): v.decode()
            for k, v in scope["headers"]
            if k.decode().lower().startswith("mcp-")
        }
        body = bytearray()

        async def recording_receive() -> Any:
            message = await receive()
            if message["type"] == "http.request":
                body.extend(message.get("body", b""))
                if not message.get("more_body"):
                    try:
                        method = json.loads(body).get("method", "")
                    except ValueError:
                        method = ""
                    params = json.loads(body).get("params") or {} if method else {}
                    headers["x-body-task-id"] = str(params.get("taskId", ""))
                    script.http_requests.append((method, headers))
            return message

        await app(scope, recording_receive, send)

    return wrapped


@asynccontextmanager
async def http_server(test_server: DualDialectServer) -> AsyncIterator[str]:
    """Serve ``test_server`` over streamable HTTP on 127.0.0.1, each POST recorded; yields the URL."""
    from server.harness import serve_asgi

    app = recording_app(test_server.server.streamable_http_app(json_response=True), test_server.script)
    async with serve_asgi(app, lifespan="on") as url:
        yield url


# --- over stdio --------------------------------------------------------------------------------------


async def main(kind: str, gets_needed: int) -> None:
    """Serve the scripted server of ``kind`` (one of :data:`STDIO_KINDS`) on this process's stdio."""
    from mcp.server.stdio import stdio_server

    script = Script(gets_needed=gets_needed)
    if kind == "sdk-2025":
        server = build_sdk_task_server(script, Knobs())
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
        return
    if kind != "2026":
        raise SystemExit(f"unknown kind {kind!r}; one of {STDIO_KINDS}")
    async with anyio.create_task_group() as group:
        low = DualDialectServer(script, Knobs(), group).server._lowlevel_server  # pyright: ignore[reportPrivateUsage]
        async with stdio_server() as (read, write):
            await low.run(read, write, low.create_initialization_options())
        group.cancel_scope.cancel()


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], int(sys.argv[2]))
