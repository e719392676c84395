"""What the mcp 2.x server tests need from the 2.x SDK: a SEP-2663 claim, tasks/* request models,
sessions declaring the extension or not, and the raw peer's framing on the SDK's in-memory streams.

The claim and models are this test suite's own reading of SEP-2663 (ext-tasks 2026-07-28); the
project's client is written elsewhere and deliberately not used here. What is the same on both
majors (the raw peer itself, HTTP serving, constants) is in :mod:`tests.server.harness`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Mapping
from contextlib import asynccontextmanager
from typing import Any, Literal

import anyio
import mcp_types as types
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

from ..harness import DIALECT_2026, EXT, RawPeer, ServerRequestAnswer

__all__ = [
    "TASK_CLAIM",
    "Ack",
    "CallToolResult",
    "CancelTask",
    "ClientSession",
    "DetailedTask",
    "GetTask",
    "MCPError",
    "MCPServer",
    "Server",
    "TaskHandle",
    "TaskIdParams",
    "ToolError",
    "UpdateParams",
    "UpdateTask",
    "cancel_task",
    "declaring_session",
    "decode",
    "encode",
    "get_task",
    "http_headers",
    "lowlevel",
    "meta_2026",
    "raw_peer",
]

CallToolResult = types.CallToolResult


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
    result_type="task", model=TaskHandle, resolve=_no_resolve, protocol_versions=frozenset({DIALECT_2026})
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
            assert session.protocol_version == DIALECT_2026
            yield session


async def get_task(session: ClientSession, task_id: str) -> DetailedTask:
    return await session.send_request(GetTask(params=TaskIdParams(task_id=task_id)), DetailedTask)


async def cancel_task(session: ClientSession, task_id: str) -> Ack:
    return await session.send_request(CancelTask(params=TaskIdParams(task_id=task_id)), Ack)


def meta_2026(*, declare: bool = True, **extra: Any) -> dict[str, Any]:
    """The 2026-07-28 request envelope, as a raw client writes it."""
    caps: dict[str, Any] = {"extensions": {EXT: {}}} if declare else {}
    return {
        "io.modelcontextprotocol/protocolVersion": DIALECT_2026,
        "io.modelcontextprotocol/clientInfo": {"name": "raw-test-client", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": caps,
        **extra,
    }


def encode(frame: Mapping[str, Any]) -> SessionMessage:
    """A raw frame as the 2.x in-memory streams carry it."""
    return SessionMessage(message=types.jsonrpc_message_adapter.validate_python(dict(frame)))


def decode(item: Any) -> dict[str, Any] | None:
    """An item of the 2.x in-memory streams as a raw frame (``None``: not a message)."""
    if not isinstance(item, SessionMessage):
        return None
    return json.loads(item.message.model_dump_json(by_alias=True, exclude_unset=True))


@asynccontextmanager
async def raw_peer(
    server: MCPServer | Server[Any], *, answer: ServerRequestAnswer | None = None
) -> AsyncGenerator[RawPeer, None]:
    """A :class:`~tests.server.harness.RawPeer` on the SDK's in-memory transport to ``server``."""
    async with InMemoryTransport(server) as (read, write), anyio.create_task_group() as group:
        peer = RawPeer(read, write, encode, decode, answer=answer)
        group.start_soon(peer.pump)
        yield peer
        group.cancel_scope.cancel()


def http_headers(method: str, *, name: str | None = None) -> dict[str, str]:
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": DIALECT_2026,
        "mcp-method": method,
    }
    if name is not None:
        headers["mcp-name"] = name
    return headers
