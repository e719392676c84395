"""The mcp 1.x server adapter over real transports: streamable HTTP (uvicorn, with auth) and stdio."""

from __future__ import annotations

import sys
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import anyio
import pytest

pytestmark = [pytest.mark.mcp1, pytest.mark.anyio]

pytest.importorskip("mcp.server.fastmcp", reason="needs mcp 1.x (FastMCP)")

import httpx  # noqa: E402
import mcp.client.streamable_http as streamable_http  # noqa: E402
import mcp.types as types  # noqa: E402
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.server.auth.provider import AccessToken  # noqa: E402
from mcp.server.auth.settings import AuthSettings  # noqa: E402
from mcp.shared.exceptions import McpError  # noqa: E402

from mcp_tasks_compat.server import ServerTasks  # noqa: E402

from ..harness import listening_socket, serve_asgi  # noqa: E402
from ._sdk import TASK_TOOLS, Controls, StatusWatch, experimental, fastmcp_server  # noqa: E402

TOKENS = {"alice-token": "alice", "bob-token": "bob"}
STDIO_SERVER = Path(__file__).with_name("stdio_server.py")
BOUND_S = 60.0
"""A bound on each test's waits, not their length (the stdio one starts an interpreter)."""


class StaticTokens:
    """A TokenVerifier that knows two users."""

    def __init__(self, resource: str) -> None:
        self.resource = resource

    async def verify_token(self, token: str) -> AccessToken | None:
        client_id = TOKENS.get(token)
        if client_id is None:
            return None
        return AccessToken(token=token, client_id=client_id, scopes=["mcp"], resource=self.resource)


@asynccontextmanager
async def serve_with_auth(controls: Controls) -> AsyncIterator[str]:
    """The FastMCP test server, tasks installed, behind bearer auth, on 127.0.0.1; yields its URL."""
    sock = listening_socket()  # the auth settings need the URL before the server is built
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    auth = AuthSettings.model_validate(
        {
            "issuer_url": "https://auth.example",
            "resource_server_url": url,
            "required_scopes": ["mcp"],
            "validate_token_resource": True,  # ignored by releases without the setting
        }
    )
    tasks = ServerTasks(tools=dict(TASK_TOOLS))
    server = fastmcp_server(tasks, controls, auth=auth, token_verifier=StaticTokens(url))
    async with serve_asgi(server.streamable_http_app(), sock=sock, lifespan="on") as served:
        yield served


@asynccontextmanager
async def http_session(
    url: str, token: str, watch: StatusWatch | None = None
) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"}
    async with AsyncExitStack() as stack:
        if hasattr(streamable_http, "streamable_http_client"):  # newer 1.x: configure an httpx client
            http = await stack.enter_async_context(
                httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(10))
            )
            transport = streamable_http.streamable_http_client(url, http_client=http)
        else:
            transport = streamable_http.streamablehttp_client(url, headers=headers)
        read, write, _ = await stack.enter_async_context(transport)
        session = await stack.enter_async_context(ClientSession(read, write, message_handler=watch))
        await session.initialize()
        yield session


async def test_streamable_http_tasks_belong_to_the_authenticated_user() -> None:
    controls = Controls()
    with anyio.fail_after(BOUND_S):
        async with serve_with_auth(controls) as url, http_session(url, "alice-token") as alice_again:
            watch = StatusWatch()
            async with http_session(url, "alice-token", watch) as alice:
                created = await experimental(alice).call_tool_as_task("wait", {})
                task_id = created.task.taskId
                await controls.started.wait()

                async with http_session(url, "bob-token") as bob:
                    for call in (experimental(bob).get_task, experimental(bob).cancel_task):
                        with pytest.raises(McpError) as hidden:
                            await call(task_id)
                        assert hidden.value.error.code == types.INVALID_PARAMS
                    assert (await experimental(bob).list_tasks()).tasks == []

                # the same user in another session sees the task
                seen = await experimental(alice_again).get_task(task_id)
                assert (seen.status, seen.statusMessage) == ("working", "started")
                listed = await experimental(alice_again).list_tasks()
                assert [task.taskId for task in listed.tasks] == [task_id]

                echo = await experimental(alice).call_tool_as_task("echo", {"text": "over http"})
                result = await experimental(alice).get_task_result(echo.task.taskId, types.CallToolResult)
                assert result.structuredContent == {"echo": "over http", "as_task": True}
                with anyio.fail_after(BOUND_S):  # status notifications reach the client on its GET stream
                    await watch.wait_for(echo.task.taskId, "completed")
                assert ("working", "echoing over http") in watch.of(echo.task.taskId)

            # alice's first session ended (DELETE): over HTTP the server outlives it, so its run goes on
            # (a session's end stops none of its runs) and its result is read from the other session
            still = await experimental(alice_again).get_task(task_id)
            assert (still.status, still.statusMessage) == ("working", "started")
            controls.release.set()
            released = await experimental(alice_again).get_task_result(task_id, types.CallToolResult)
            assert [b.text for b in released.content if isinstance(b, types.TextContent)] == ["released"]
            assert not controls.stopped.is_set()


async def test_stdio_task_round_trip_and_prompt_exit_on_disconnect(tmp_path: Path) -> None:
    marker = tmp_path / "outcome.txt"
    params = StdioServerParameters(command=sys.executable, args=[str(STDIO_SERVER), str(marker)])
    with anyio.fail_after(BOUND_S):
        watch = StatusWatch()
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write, message_handler=watch) as session,
        ):
            init = await session.initialize()
            assert init.capabilities.tasks is not None
            tasks = experimental(session)
            quick = await tasks.call_tool_as_task("slow", {"seconds": 0})
            result = await tasks.get_task_result(quick.task.taskId, types.CallToolResult)
            assert [b.text for b in result.content if isinstance(b, types.TextContent)] == [
                "slept as task=True"
            ]
            assert (await tasks.get_task(quick.task.taskId)).statusMessage == "step 2/2"
            running = await tasks.call_tool_as_task("slow", {"seconds": 60})  # still running when we leave
            await watch.wait_for(
                running.task.taskId, "working"
            )  # its first status arrived: nothing in flight
            left_at = time.monotonic()
        closed_in = time.monotonic() - left_at
    # stdio_client waits 2 s for the process to exit after stdin closes, then kills it
    assert marker.read_text() == "returned"
    assert closed_in < 2.0, closed_in
