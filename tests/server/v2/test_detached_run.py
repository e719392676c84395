"""A task's run keeps none of the request that created it (mcp 2.x, both dialects' entry points).

The request context the tools/call handler chain was given must be collectable once the create
answer is sent, while the task still runs; the tool still sees what it needs (its arguments, the
SDK ``Context``, ``current_task``).
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Sequence
from typing import Any

import anyio
import pytest

from mcp_tasks_compat.dialects import TASKS_EXTENSION_ID
from mcp_tasks_compat.server import ServerTasks, current_call

pytestmark = [pytest.mark.mcp2, pytest.mark.anyio]

pytest.importorskip("mcp.server.mcpserver", reason="needs mcp 2.x (MCPServer)")

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext  # noqa: E402
from mcp.server.extension import Extension, MethodBinding  # noqa: E402
from mcp.server.mcpserver import Context  # noqa: E402
from mcp_types import CallToolRequestParams  # noqa: E402

from ..harness import Gate  # noqa: E402
from ._sdk import MCPServer, TaskHandle, declaring_session, get_task, raw_peer  # noqa: E402


class RequestWatcher(Extension):
    """An outer extension that keeps a weak reference to every tools/call request context."""

    identifier = "io.example/request-watcher"

    def __init__(self) -> None:
        self.seen: list[weakref.ref[ServerRequestContext[Any, Any]]] = []
        self.sessions: list[weakref.ref[Any]] = []

    def settings(self) -> dict[str, Any]:
        return {}

    def methods(self) -> Sequence[MethodBinding]:
        return []

    async def intercept_tool_call(
        self, params: CallToolRequestParams, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        self.seen.append(weakref.ref(ctx))
        self.sessions.append(weakref.ref(ctx.session))
        return await call_next(ctx)


@pytest.mark.parametrize(
    "inline_grace_s",
    [
        pytest.param(0, id="task-at-once"),  # the 2025-11-25 path starts its run the same way
        pytest.param(0.01, id="outlived-the-grace"),  # started undecided, became a task later
    ],
)
async def test_the_request_is_released_while_its_task_runs(inline_grace_s: float) -> None:
    watcher = RequestWatcher()
    tasks = ServerTasks(tools={"held": "optional"}, inline_grace_s=inline_grace_s)
    server = MCPServer("detached", **tasks.mcpserver_kwargs(extensions=[watcher]))
    gate = Gate()
    recorded = anyio.Event()
    seen: dict[str, Any] = {}

    @server.tool()
    async def held(x: int, ctx: Context) -> int:
        seen["protocol_version"] = ctx.request_context.protocol_version
        seen["capabilities"] = ctx.session.client_capabilities
        gate.started.set()
        await gate.release.wait()
        seen["task"] = current_call().task  # read once it is a task (inside the grace it is None)
        recorded.set()
        return x * 2

    async with declaring_session(server) as session:
        handle = await session.call_tool("held", {"x": 21}, allow_claimed=True)
        assert isinstance(handle, TaskHandle)
        with anyio.fail_after(10):
            await gate.started.wait()
        (request,) = watcher.seen  # the create request; the run does not pass the outer extension
        gc.collect()
        assert request() is None, "the running task still holds the request context that created it"
        (request_session,) = watcher.sessions  # the SDK's per-request session holds its dispatch context
        assert request_session() is None, "the running task still holds the request's SDK session"
        assert seen["protocol_version"] == session.protocol_version
        assert seen["capabilities"] is not None
        assert TASKS_EXTENSION_ID in (seen["capabilities"].extensions or {})
        assert (await get_task(session, handle.task_id)).status == "working"  # the run is still held
        gate.release.set()
        with anyio.fail_after(10):
            await recorded.wait()
        assert seen["task"] is not None
        assert seen["task"].task_id == handle.task_id


async def test_progress_inside_the_grace_reaches_the_caller_and_is_dropped_once_a_task() -> None:
    """The run's session forwards to the request's stream while the call is undecided; once the
    create answer is sent it drops notifications, as the SDK's own channel does after an answer."""
    tasks = ServerTasks(tools={"steps": "optional"}, inline_grace_s=0.01)
    server = MCPServer("detached", **tasks.mcpserver_kwargs())
    gate = Gate()
    dropped = anyio.Event()
    received: list[tuple[float, str | None]] = []

    @server.tool()
    async def steps(quick: bool, ctx: Context) -> str:
        await ctx.report_progress(1, 2, "inside the grace")
        if quick:
            return "quick"
        gate.started.set()
        await gate.release.wait()
        await ctx.report_progress(2, 2, "after the create answer")  # dropped, never raised
        dropped.set()
        return "slow"

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        received.append((progress, message))

    async with declaring_session(server) as session:
        quick = await session.call_tool("steps", {"quick": True}, progress_callback=on_progress)
        assert not isinstance(quick, TaskHandle)
        assert received == [(1, "inside the grace")]
        received.clear()
        handle = await session.call_tool(
            "steps", {"quick": False}, allow_claimed=True, progress_callback=on_progress
        )
        assert isinstance(handle, TaskHandle)
        with anyio.fail_after(10):
            await gate.started.wait()
        gate.release.set()
        with anyio.fail_after(10):
            await dropped.wait()
        assert received == [(1, "inside the grace")]  # sent while the call was still undecided
        assert (await get_task(session, handle.task_id)).status in ("working", "completed")


class SessionWatcher:
    """An outer ``Server.middleware`` that keeps a weak reference to each tools/call's SDK session."""

    def __init__(self) -> None:
        self.sessions: list[weakref.ref[Any]] = []

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
        if ctx.method == "tools/call":
            self.sessions.append(weakref.ref(ctx.session))
        return await call_next(ctx)


async def test_a_2025_task_releases_the_request_session_and_still_notifies_its_status() -> None:
    watcher = SessionWatcher()
    tasks = ServerTasks(tools={"held": "optional"})
    server = MCPServer("detached-2025", **tasks.mcpserver_kwargs(middleware=[watcher]))
    gate = Gate()

    @server.tool()
    async def held(x: int) -> int:
        gate.started.set()
        await gate.release.wait()
        return x * 2

    async with raw_peer(server) as peer:
        await peer.initialize()
        created = await peer.request("tools/call", {"name": "held", "arguments": {"x": 2}, "task": {}})
        task_id = created["result"]["task"]["taskId"]
        with anyio.fail_after(10):
            await gate.started.wait()
        gc.collect()
        (request_session,) = watcher.sessions
        assert request_session() is None, "the running 2025-11-25 task still holds the request's SDK session"
        gate.release.set()
        completed = await peer.wait_notification(
            lambda frame: (
                frame["method"] == "notifications/tasks/status" and frame["params"]["status"] == "completed"
            )
        )
        result = await peer.request("tasks/result", {"taskId": task_id})
    assert completed["params"]["taskId"] == task_id
    assert result["result"]["structuredContent"] == {"result": 4}


def test_a_session_without_the_probed_attributes_is_kept_whole() -> None:
    """The seam is private: an SDK whose session lacks it gives no parts, and the run keeps it."""
    from mcp_tasks_compat._adapters.v2.detached import session_parts

    class Elsewhere:
        _request_outbound = object()  # no transport, no notify: not a dispatch context

    assert session_parts(Elsewhere()) is None  # type: ignore[arg-type]
    assert session_parts(object()) is None  # type: ignore[arg-type]


async def test_a_2026_run_lets_go_of_the_request_connection_and_keeps_its_values() -> None:
    """On 2026-07-28 the SDK makes a ``Connection`` per request and tears it down when the request
    ends; a task's run keeps a copy with the same values, not the request's (its event and exit
    stack alone are ~1.5 KB per held task)."""
    connections: list[weakref.ref[Any]] = []

    class ConnectionWatcher:
        async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
            if ctx.method == "tools/call":
                connections.append(weakref.ref(ctx.session._connection))  # SDK-private, read in a test only
            return await call_next(ctx)

    tasks = ServerTasks(tools={"held": "optional"}, inline_grace_s=0.01)
    server = MCPServer("detached", **tasks.mcpserver_kwargs(middleware=[ConnectionWatcher()]))
    gate = Gate()
    seen: dict[str, Any] = {}

    @server.tool()
    async def held(ctx: Context) -> str:
        gate.started.set()
        await gate.release.wait()
        seen["capabilities"] = ctx.session.client_capabilities
        seen["client_params"] = ctx.session.client_params
        gate.finished.set()
        return "done"

    async with declaring_session(server) as session:
        handle = await session.call_tool("held", {}, allow_claimed=True)
        assert isinstance(handle, TaskHandle)
        with anyio.fail_after(10):
            await gate.started.wait()
        gc.collect()
        (request_connection,) = connections
        assert request_connection() is None, "the running task still holds the request's Connection"
        gate.release.set()
        with anyio.fail_after(10):
            await gate.finished.wait()
    assert TASKS_EXTENSION_ID in (seen["capabilities"].extensions or {})
    assert seen["client_params"] is not None


async def test_a_run_connection_defers_to_the_request_connection_until_the_exchange_ends() -> None:
    from mcp.server.connection import Connection

    from mcp_tasks_compat._adapters.v2.detached import RunConnection

    origin = Connection.from_envelope("2026-07-28", {"name": "c", "version": "1"}, {"roots": {}})
    origin.state["k"] = "v"
    copy = RunConnection(origin)
    assert copy.protocol_version == origin.protocol_version
    assert copy.client_params is origin.client_params
    assert copy.client_capabilities is origin.client_capabilities
    assert copy.state is origin.state
    assert copy.outbound is origin.outbound
    # While the exchange is open, a cleanup pushed by the tool is unwound with the request.
    assert copy.exit_stack is origin.exit_stack
    assert copy.initialized is origin.initialized
    unwound: list[str] = []
    copy.exit_stack.callback(unwound.append, "inside the grace")
    await origin.exit_stack.aclose()  # what the SDK's serve_one does when the request ends
    assert unwound == ["inside the grace"]
    copy.end()
    assert copy.exit_stack is not origin.exit_stack
    assert copy.exit_stack is copy.exit_stack  # made once
    assert copy.initialized.is_set()  # born ready, as its origin
    assert RunConnection.can_copy(origin)
    with pytest.raises(AttributeError):
        copy.no_such_attribute  # noqa: B018


def test_kept_headers_are_the_same_and_share_their_pairs_across_requests() -> None:
    from starlette.datastructures import Headers

    from mcp_tasks_compat._adapters.shared import compact_headers

    def fresh(text: str) -> bytes:
        return bytes(bytearray(text, "ascii"))

    def received() -> Headers:  # as a server gets them: new bytes objects for every request
        return Headers(raw=[(fresh("user-agent"), fresh("client/1.0")), (fresh("x-trace"), fresh("one"))])

    one, two = received(), received()
    assert one.raw[0][1] is not two.raw[0][1]
    first, second = compact_headers(one), compact_headers(two)
    assert isinstance(first, Headers)
    assert first == received()
    assert first.raw == second.raw
    assert all(a is b for a, b in zip(first.raw, second.raw, strict=True)), "pairs not shared"
    assert compact_headers(None) is None
    other = {"user-agent": "x"}
    assert compact_headers(other) is other  # not starlette's Headers: kept as it is
