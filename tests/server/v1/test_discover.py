"""mcp 1.x server: the ``server/discover`` probe every mcp 2.x client sends first, answered quietly.

Over the SDK's memory streams: a raw ``server/discover`` frame, then the ``initialize`` a 2.x
client falls back to, on the same connection; the server's log is captured at every level.
"""

from __future__ import annotations

import logging

import anyio
import pytest

pytestmark = [pytest.mark.mcp1, pytest.mark.anyio]

pytest.importorskip("mcp.server.fastmcp", reason="needs mcp 1.x (FastMCP)")

import mcp.types as types  # noqa: E402
from mcp.client.session import ClientSession  # noqa: E402
from mcp.server.fastmcp import FastMCP  # noqa: E402
from mcp.shared.memory import create_client_server_memory_streams  # noqa: E402
from mcp.shared.message import SessionMessage  # noqa: E402

from mcp_tasks_compat.server import ServerTasks  # noqa: E402

DISCOVER = {
    "jsonrpc": "2.0",
    "id": 7,
    "method": "server/discover",
    "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}},
}


async def test_server_discover_gets_a_clean_32601_and_no_validation_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    server = FastMCP("discover-test")

    @server.tool()
    async def echo(text: str) -> str:
        return text

    ServerTasks(tools={"echo": "optional"}).install(server)
    lowlevel = server._mcp_server  # pyright: ignore[reportPrivateUsage]
    async with (
        create_client_server_memory_streams() as ((client_read, client_write), (server_read, server_write)),
        anyio.create_task_group() as group,
    ):
        group.start_soon(lowlevel.run, server_read, server_write, lowlevel.create_initialization_options())
        with anyio.fail_after(10):
            await client_write.send(SessionMessage(types.JSONRPCMessage.model_validate(DISCOVER)))
            answer = await client_read.receive()
            assert isinstance(answer, SessionMessage)
            frame = answer.message.root
            assert isinstance(frame, types.JSONRPCError)
            assert frame.id == 7
            assert frame.error.code == -32601
            assert frame.error.message == "Method not found: server/discover"
            # The connection goes on: the initialize a 2.x client falls back to, then a call.
            async with ClientSession(client_read, client_write) as session:
                await session.initialize()
                result = await session.call_tool("echo", {"text": "after discover"})
                assert result.content[0].text == "after discover"  # type: ignore[union-attr]
        group.cancel_scope.cancel()
    noisy = [record.getMessage() for record in caplog.records if "validat" in record.getMessage().lower()]
    assert noisy == []
    assert not [record for record in caplog.records if record.levelno >= logging.WARNING]
