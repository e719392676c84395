"""2026-07-28 over real streamable HTTP (uvicorn on 127.0.0.1): the SDK client, Mcp-Name, principals."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import pytest

from mcp_tasks_compat.server import ServerTasks, report_status

pytestmark = [pytest.mark.mcp2, pytest.mark.anyio]
pytest.importorskip("mcp.server.mcpserver", reason="needs mcp 2.x (MCPServer)")

from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.server.auth.provider import AccessToken  # noqa: E402
from mcp.server.auth.settings import AuthSettings  # noqa: E402
from pydantic import AnyHttpUrl  # noqa: E402

from ..harness import EXT, Gate, serve_asgi  # noqa: E402
from ._sdk import (  # noqa: E402
    TASK_CLAIM,
    ClientSession,
    MCPServer,
    TaskHandle,
    get_task,
    http_headers,
    meta_2026,
)


def build(**server_options: Any) -> tuple[ServerTasks, MCPServer, Gate]:
    tasks = ServerTasks(tools={"work": "optional"})
    server = MCPServer("http-2026", **tasks.mcpserver_kwargs(**server_options))
    gate = Gate()

    @server.tool()
    async def work(x: int) -> int:
        await report_status("started")
        gate.started.set()
        await gate.release.wait()
        return x

    return tasks, server, gate


async def post(
    client: httpx.AsyncClient, url: str, method: str, params: dict[str, Any], *, headers: dict[str, str]
) -> tuple[int, dict[str, Any]]:
    """One JSON-RPC request over HTTP; the body is read as JSON or as an SSE stream."""
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    response = await client.post(url, json=body, headers=headers)
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        frames = [json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")]
        answer = next(frame for frame in frames if frame.get("id") == 1)
    else:
        answer = response.json()
    return response.status_code, answer


async def test_sdk_client_runs_a_task_over_http_with_the_mcp_name_header() -> None:
    tasks, server, gate = build()
    async with (
        serve_asgi(server.streamable_http_app()) as url,
        streamable_http_client(url) as (read, write),
        ClientSession(read, write, extensions={EXT: {}}, result_claims={EXT: [TASK_CLAIM]}) as session,
    ):
        discovered = await session.discover()
        assert discovered.capabilities.extensions == {EXT: {}}
        handle = await session.call_tool("work", {"x": 8}, allow_claimed=True)
        assert isinstance(handle, TaskHandle)
        with anyio.fail_after(5):
            await gate.started.wait()
        running = await get_task(session, handle.task_id)  # name_param sends Mcp-Name: <taskId>
        gate.release.set()
        with anyio.fail_after(5):
            await tasks.engine.reader.wait_terminal(handle.task_id, None)
        done = await get_task(session, handle.task_id)
    assert (running.status, running.status_message) == ("working", "started")
    assert done.status == "completed"
    assert done.result is not None
    assert done.result["structuredContent"] == {"result": 8}


@pytest.mark.parametrize("json_response", [True, False])
async def test_mcp_name_mismatch_is_header_mismatch_and_a_missing_header_is_accepted(
    json_response: bool,
) -> None:
    _tasks, server, gate = build()
    app = server.streamable_http_app(json_response=json_response)
    async with serve_asgi(app) as url, httpx.AsyncClient(timeout=10) as client:
        _, created = await post(
            client,
            url,
            "tools/call",
            {"name": "work", "arguments": {"x": 1}, "_meta": meta_2026()},
            headers=http_headers("tools/call", name="work"),
        )
        task_id = created["result"]["taskId"]
        params = {"taskId": task_id, "_meta": meta_2026()}
        mismatch = {
            method: await post(
                client,
                url,
                method,
                {**params, "inputResponses": {}},
                headers=http_headers(method, name="other-task"),
            )
            for method in ("tasks/get", "tasks/update", "tasks/cancel")
        }
        _, missing = await post(client, url, "tasks/get", params, headers=http_headers("tasks/get"))
        _, matching = await post(
            client, url, "tasks/get", params, headers=http_headers("tasks/get", name=task_id)
        )
        # A bearer handle: a second HTTP client with the id reads the same task (no auth configured).
        async with httpx.AsyncClient(timeout=10) as other:
            _, elsewhere = await post(
                other, url, "tasks/get", params, headers=http_headers("tasks/get", name=task_id)
            )
        gate.release.set()
    for method, (status, frame) in mismatch.items():
        assert status == 400, method  # the SDK's status for -32020, as for its own header checks
        assert frame["error"]["code"] == -32020, method
        assert "Mcp-Name" in frame["error"]["message"]
    assert missing["result"]["taskId"] == task_id
    assert matching["result"]["status"] == "working"
    assert elsewhere["result"]["taskId"] == task_id


async def test_base64_encoded_mcp_name_is_decoded() -> None:
    import base64

    _tasks, server, gate = build()
    async with (
        serve_asgi(server.streamable_http_app(json_response=True)) as url,
        httpx.AsyncClient(timeout=10) as client,
    ):
        _, created = await post(
            client,
            url,
            "tools/call",
            {"name": "work", "arguments": {"x": 1}, "_meta": meta_2026()},
            headers=http_headers("tools/call", name="work"),
        )
        task_id = created["result"]["taskId"]
        encoded = f"=?base64?{base64.b64encode(task_id.encode()).decode()}?="
        _, got = await post(
            client,
            url,
            "tasks/get",
            {"taskId": task_id, "_meta": meta_2026()},
            headers=http_headers("tasks/get", name=encoded),
        )
        gate.release.set()
    assert got["result"]["taskId"] == task_id


class TwoUsers:
    """A token verifier that knows two users."""

    async def verify_token(self, token: str) -> AccessToken | None:
        users = {"token-alice": "alice", "token-bob": "bob"}
        user = users.get(token)
        if user is None:
            return None
        return AccessToken(token=token, client_id=f"{user}-app", scopes=[], subject=user)


async def test_tasks_belong_to_the_authenticated_user() -> None:
    _tasks, server, gate = build(
        auth=AuthSettings(issuer_url=AnyHttpUrl("https://auth.example.com"), resource_server_url=None),
        token_verifier=TwoUsers(),
    )
    alice = {"authorization": "Bearer token-alice"}
    bob = {"authorization": "Bearer token-bob"}
    async with (
        serve_asgi(server.streamable_http_app(json_response=True)) as url,
        httpx.AsyncClient(timeout=10) as client,
    ):
        _, created = await post(
            client,
            url,
            "tools/call",
            {"name": "work", "arguments": {"x": 1}, "_meta": meta_2026()},
            headers={**http_headers("tools/call", name="work"), **alice},
        )
        task_id = created["result"]["taskId"]
        params = {"taskId": task_id, "_meta": meta_2026()}
        _, bob_get = await post(
            client, url, "tasks/get", params, headers={**http_headers("tasks/get"), **bob}
        )
        _, bob_cancel = await post(
            client, url, "tasks/cancel", params, headers={**http_headers("tasks/cancel"), **bob}
        )
        _, alice_get = await post(
            client, url, "tasks/get", params, headers={**http_headers("tasks/get"), **alice}
        )
        anonymous = await client.post(
            url,
            json={"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": params},
            headers=http_headers("tasks/get"),
        )
        gate.release.set()
    assert bob_get["error"]["code"] == -32602
    assert bob_cancel["error"]["code"] == -32602
    assert alice_get["result"]["status"] == "working"  # bob's cancel did not touch it
    assert anonymous.status_code == 401


async def test_tasks_work_on_a_stateless_server() -> None:
    tasks, server, gate = build()
    app = server.streamable_http_app(json_response=True, stateless_http=True)
    async with serve_asgi(app) as url, httpx.AsyncClient(timeout=10) as client:
        _, created = await post(
            client,
            url,
            "tools/call",
            {"name": "work", "arguments": {"x": 5}, "_meta": meta_2026()},
            headers=http_headers("tools/call", name="work"),
        )
        task_id = created["result"]["taskId"]
        gate.release.set()
        with anyio.fail_after(5):
            await tasks.engine.reader.wait_terminal(task_id, None)
        params = {"taskId": task_id, "_meta": meta_2026()}
        _, done = await post(
            client, url, "tasks/get", params, headers=http_headers("tasks/get", name=task_id)
        )
    assert done["result"]["status"] == "completed"
    assert done["result"]["result"]["structuredContent"] == {"result": 5}
