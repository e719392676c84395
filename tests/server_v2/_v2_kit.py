"""Test kit for the mcp 2.x server adapter: a SEP-2663 claim, tasks/* request models, a raw
JSON-RPC peer over the SDK's in-memory streams, and a uvicorn server on a pre-bound socket.

The claim and models are this test suite's own reading of SEP-2663 (ext-tasks 2026-07-28); the
project's client is written elsewhere and deliberately not used here.
"""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncGenerator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import mcp_types as types
import uvicorn
from mcp.client._memory import InMemoryTransport
from mcp.client.extension import ClaimContext, ResultClaim
from mcp.client.session import ClientSession
from mcp.server.lowlevel.server import Server
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from pydantic import ConfigDict
from pydantic.alias_generators import to_camel

__all__ = [
    "EXT",
    "ISO_Z",
    "LEGACY",
    "MODERN",
    "Ack",
    "CallToolResult",
    "CancelTask",
    "ClientSession",
    "DetailedTask",
    "Gate",
    "GetTask",
    "MCPError",
    "MCPServer",
    "RawPeer",
    "Server",
    "TaskHandle",
    "TaskIdParams",
    "ToolError",
    "UpdateParams",
    "UpdateTask",
    "cancel_task",
    "declaring_session",
    "get_task",
    "http_headers",
    "lowlevel",
    "modern_meta",
    "raw_peer",
    "serve_http",
]

CallToolResult = types.CallToolResult

EXT = "io.modelcontextprotocol/tasks"
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
ISO_Z = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$"


class TaskHandle(types.Result):
    """The flat CreateTaskResult (``resultType: "task"``)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")

    result_type: Literal["task"] = "task"
    task_id: str
    status: str
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None


class DetailedTask(types.Result):
    """``tasks/get``: the Task plus ``result`` / ``error`` / ``inputRequests``."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")

    result_type: Literal["complete"] = "complete"
    task_id: str
    status: str
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    input_requests: dict[str, Any] | None = None


class Ack(types.Result):
    model_config = ConfigDict(extra="allow")


class TaskIdParams(types.RequestParams):
    task_id: str


class UpdateParams(types.RequestParams):
    task_id: str
    input_responses: dict[str, Any]


class GetTask(types.Request[TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskIdParams
    name_param = "taskId"


class CancelTask(types.Request[TaskIdParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskIdParams
    name_param = "taskId"


class UpdateTask(types.Request[UpdateParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    params: UpdateParams
    name_param = "taskId"


async def _no_resolve(handle: TaskHandle, ctx: ClaimContext) -> types.CallToolResult:
    raise AssertionError("the low-level session never resolves claims")


TASK_CLAIM = ResultClaim(
    result_type="task", model=TaskHandle, resolve=_no_resolve, protocol_versions=frozenset({MODERN})
)


def lowlevel(server: MCPServer | Server[Any]) -> Server[Any]:
    return server._lowlevel_server if isinstance(server, MCPServer) else server  # pyright: ignore[reportPrivateUsage]


@asynccontextmanager
async def declaring_session(
    server: MCPServer | Server[Any], *, declare: bool = True
) -> AsyncGenerator[ClientSession, None]:
    """A real 2.x ClientSession on 2026-07-28 (after ``discover()``), declaring the extension or not."""
    async with InMemoryTransport(server) as (read, write):
        kwargs: dict[str, Any] = {}
        if declare:
            kwargs = {"extensions": {EXT: {}}, "result_claims": {EXT: [TASK_CLAIM]}}
        async with ClientSession(read, write, **kwargs) as session:
            await session.discover()
            assert session.protocol_version == MODERN
            yield session


async def get_task(session: ClientSession, task_id: str) -> DetailedTask:
    return await session.send_request(GetTask(params=TaskIdParams(task_id=task_id)), DetailedTask)


async def cancel_task(session: ClientSession, task_id: str) -> Ack:
    return await session.send_request(CancelTask(params=TaskIdParams(task_id=task_id)), Ack)


def modern_meta(*, declare: bool = True, **extra: Any) -> dict[str, Any]:
    """The 2026-07-28 request envelope, as a raw client writes it."""
    caps: dict[str, Any] = {"extensions": {EXT: {}}} if declare else {}
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "raw-test-client", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": caps,
        **extra,
    }


@dataclass
class RawPeer:
    """Raw JSON-RPC over the SDK's in-memory streams: frames as stdio would write them."""

    read: Any
    write: Any
    notifications: list[dict[str, Any]] = field(default_factory=lambda: list[dict[str, Any]]())
    _next_id: int = 0
    _pending: dict[int, tuple[anyio.Event, list[dict[str, Any]]]] = field(
        default_factory=lambda: dict[int, tuple[anyio.Event, list[dict[str, Any]]]]()
    )
    _notified: anyio.Event = field(default_factory=anyio.Event)

    async def pump(self) -> None:
        async for item in self.read:
            if not isinstance(item, SessionMessage):
                continue
            frame = json.loads(item.message.model_dump_json(by_alias=True, exclude_unset=True))
            frame_id = frame.get("id")
            if "method" in frame and frame_id is None:
                self.notifications.append(frame)
                event, self._notified = self._notified, anyio.Event()
                event.set()
            elif isinstance(frame_id, int) and frame_id in self._pending:
                event, slot = self._pending.pop(frame_id)
                slot.append(frame)
                event.set()

    async def send(self, frame: Mapping[str, Any]) -> None:
        message = types.jsonrpc_message_adapter.validate_python(dict(frame))
        await self.write.send(SessionMessage(message=message))

    async def request(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Send one request and return the whole response frame (``result`` or ``error``)."""
        self._next_id += 1
        request_id = self._next_id
        event, slot = anyio.Event(), list[dict[str, Any]]()
        self._pending[request_id] = (event, slot)
        frame: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            frame["params"] = dict(params)
        await self.send(frame)
        with anyio.fail_after(5):
            await event.wait()
        return slot[0]

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        frame: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            frame["params"] = dict(params)
        await self.send(frame)

    async def wait_notification(self, predicate: Any) -> dict[str, Any]:
        with anyio.fail_after(5):
            while True:
                for frame in self.notifications:
                    if predicate(frame):
                        return frame
                await self._notified.wait()

    async def initialize(self, version: str = LEGACY) -> dict[str, Any]:
        response = await self.request(
            "initialize",
            {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "raw-legacy-client", "version": "0"},
            },
        )
        await self.notify("notifications/initialized")
        return response


@asynccontextmanager
async def raw_peer(server: MCPServer | Server[Any]) -> AsyncGenerator[RawPeer, None]:
    async with InMemoryTransport(server) as (read, write), anyio.create_task_group() as group:
        peer = RawPeer(read, write)
        group.start_soon(peer.pump)
        yield peer
        group.cancel_scope.cancel()


@asynccontextmanager
async def serve_http(app: Any) -> AsyncGenerator[str, None]:
    """Serve ``app`` with uvicorn on a socket bound before the server starts (no start-up race)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    async with anyio.create_task_group() as group:
        group.start_soon(server.serve, [sock])
        try:
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            server.should_exit = True
    sock.close()


def http_headers(method: str, *, name: str | None = None) -> dict[str, str]:
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": method,
    }
    if name is not None:
        headers["mcp-name"] = name
    return headers


class Gate:
    """An event-driven tool body: it signals when it started and waits until released."""

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.release = anyio.Event()
        self.finished = anyio.Event()
        self.cancelled = anyio.Event()
