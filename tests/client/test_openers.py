"""The session openers (``client.connect_http``, ``client.connect_stdio`` and the testing kit's, built
on them) when no session can be opened, and what comes out of a block that raised.

No server process here: a port nothing listens on, a listener that never answers, a command that
does not exist, a server in memory. A server killed under an open session is in
``tests/deploy/test_openers.py``.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

import anyio
import anyio.abc
import pytest
from tests.redis_server import free_port

from mcp_tasks_compat import ServerConnectionLostError, ServerUnreachableError
from mcp_tasks_compat._client.lost import connection_lost
from mcp_tasks_compat._testkit.sessions import connect_in_memory
from mcp_tasks_compat.client import Reconnect, ReconnectingClient, connect_http, connect_stdio
from mcp_tasks_compat.testing import build_task_server

pytestmark = pytest.mark.anyio

BOUND_S = 30.0
"""A bound, not a wait: nothing here waits for a server to start."""


def nobody_listens() -> str:
    return f"http://127.0.0.1:{free_port()}/mcp"


async def test_a_first_connection_to_a_port_nothing_listens_on_says_nothing_was_sent() -> None:
    url = nobody_listens()
    with anyio.fail_after(BOUND_S), pytest.raises(ServerUnreachableError) as raised:
        async with connect_http(url):
            pytest.fail("no session can open: nothing listens")
    error = raised.value
    assert error.server == url
    assert url in error.message
    assert "none of your requests was sent" in error.message
    assert connection_lost(error.cause) is not None, error.cause  # the transport's own error
    assert isinstance(error, ConnectionError)
    assert not isinstance(error, ServerConnectionLostError)  # no task can exist


async def test_a_missing_server_command_is_unreachable_too() -> None:
    with anyio.fail_after(BOUND_S), pytest.raises(ServerUnreachableError) as raised:
        async with connect_stdio("mcp-tasks-compat-no-such-command", ["--flag"]):
            pytest.fail("no session can open: the command does not exist")
    assert raised.value.server == "mcp-tasks-compat-no-such-command --flag"
    assert isinstance(raised.value.cause, OSError)


@asynccontextmanager
async def silent_listener() -> AsyncGenerator[str, None]:
    """A TCP listener that accepts connections and never answers: a hung server."""
    held: list[anyio.abc.SocketStream] = []

    async def keep(stream: anyio.abc.SocketStream) -> None:
        held.append(stream)
        await anyio.sleep_forever()

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with anyio.create_task_group() as group:
        group.start_soon(listener.serve, keep)
        yield f"http://127.0.0.1:{port}/mcp"
        group.cancel_scope.cancel()


async def test_an_unanswered_handshake_is_unreachable_after_the_connect_timeout() -> None:
    async with silent_listener() as url:
        with anyio.fail_after(BOUND_S), pytest.raises(ServerUnreachableError) as raised:
            async with connect_http(url, connect_timeout=0.5):
                pytest.fail("the server never answers")
    assert isinstance(raised.value.cause, TimeoutError)
    assert "within 0.5 s" in raised.value.message


async def test_reconnecting_gives_up_on_an_unreachable_server_with_that_error() -> None:
    url = nobody_listens()
    heard: list[Reconnect] = []
    client = ReconnectingClient(
        lambda: connect_http(url), attempts=2, first_delay_s=0.01, max_delay_s=0.02, on_reconnect=heard.append
    )
    with anyio.fail_after(BOUND_S), pytest.raises(ServerUnreachableError) as raised:
        await client.call_tool("slow_echo", {"text": "x"})
    assert raised.value.server == url
    assert [event.attempt for event in heard] == [1, 2]  # the first session was retried, twice
    assert all(event.task_id is None for event in heard)
    assert "nothing sent yet" in heard[0].describe()


async def test_reconnecting_raises_a_usage_error_at_once() -> None:
    """A session that cannot open for another reason than a connection is not retried."""
    heard: list[Reconnect] = []
    client = ReconnectingClient(lambda: connect_in_memory(object()), attempts=3, on_reconnect=heard.append)
    with anyio.fail_after(BOUND_S), pytest.raises(TypeError, match="connect_in_memory"):
        await client.call_tool("slow_echo", {"text": "x"})
    assert heard == []


async def test_the_blocks_own_error_comes_out_as_it_is_with_its_context() -> None:
    """Out of the transport's task groups, not as a group, and with the context it was raised in."""

    class Mine(Exception):
        pass

    async def raise_in_a_block() -> None:
        async with connect_in_memory(build_task_server()):
            try:
                raise KeyError("first")
            except KeyError:
                raise Mine("second")  # noqa: B904 - the context is what is checked

    with anyio.fail_after(BOUND_S), pytest.raises(Mine) as raised:
        await raise_in_a_block()
    assert isinstance(raised.value.__context__, KeyError)


async def test_a_stdio_server_that_exits_at_once_is_unreachable() -> None:
    command = [sys.executable, "-c", "raise SystemExit(3)"]
    with anyio.fail_after(BOUND_S), pytest.raises(ServerUnreachableError) as raised:
        async with connect_stdio(command[0], command[1:]):
            pytest.fail("the server exited before the handshake")
    assert "none of your requests was sent" in raised.value.message


@pytest.mark.parametrize("mine", [TimeoutError("my own deadline"), FileNotFoundError("my own file")])
async def test_an_os_error_of_the_blocks_own_is_not_a_lost_connection(mine: OSError) -> None:
    """Transport failures are OSErrors too; while the transport is fine, one from the block is the block's."""

    async def raise_in_a_block() -> None:
        async with connect_in_memory(build_task_server()):
            raise mine

    with anyio.fail_after(BOUND_S), pytest.raises(type(mine)) as raised:
        await raise_in_a_block()
    assert raised.value is mine
