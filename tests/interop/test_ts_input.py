"""Input during a task across languages: the TypeScript peers and our ``ask`` tool, both directions.

* ext-tasks 0.2.2 (2026-07-28, our server on mcp 2.x) reads ``inputRequests`` on ``tasks/get`` and
  answers with ``tasks/update`` through its ``onInputRequest`` handler;
* the TS SDK 1.32.2 client (2025-11-25, our server on both majors) gets the elicitation on its
  open ``tasks/result`` stream and answers it as an ordinary request;
* our client answers the TS SDK 1.32.2 server's ``ask`` through the session's elicitation callback.

ext-tasks in 2025-11-25 calls ``tasks/result`` only once a task has ended, so it never receives a
2025-11-25 input request (docs/interop.md, item 9); that pair is not run.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from mcp_tasks_compat._client_api import session_kwargs
from mcp_tasks_compat.client import call_tool, negotiate
from mcp_tasks_compat.core._model import Task

from .example_server import SeenRequest, build_example_server, serve_http
from .peers import TsPeers, ts_peers

__all__ = ["ts_peers"]  # the fixture, re-exported for pytest

pytestmark = pytest.mark.anyio

BOUND_S = 60.0
"""A bound on each call to a TS peer, not its expected length: the peer is a node process."""
RELATED = "io.modelcontextprotocol/related-task"
ANSWER = {"action": "accept", "content": {"answer": "Ada"}}


def _last_text(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


@pytest.mark.mcp2
async def test_ext_tasks_answers_our_2026_input_request_with_tasks_update(ts_peers: TsPeers) -> None:
    seen: list[SeenRequest] = []
    async with serve_http(build_example_server(), seen=seen) as url:
        run = await ts_peers.run_async(
            "ext_tasks_client.mjs",
            "--dialect",
            "2026-07-28",
            "--tool",
            "ask",
            "--args",
            json.dumps({"question": "Your name?"}),
            "--answer",
            json.dumps(ANSWER),
            "--url",
            url,
        )
    report = run.report
    assert report["crashed"] is None, run.explain()
    assert report["kind"] == "task", run.explain()
    assert report["outcome"]["status"] == "completed", run.explain()
    assert _last_text(report["outcome"]["result"]) == "Ada"
    (request,) = report["input"]["requests"]
    assert request["kind"] == "elicitation"
    assert request["delivery"] == "task-update"
    assert request["input_id"] == "elicit-1"
    assert request["params"]["message"] == "Your name?"
    assert "input_required" in [status["status"] for status in report["statuses"]], run.explain()
    updates = [r for r in seen if r.method == "tasks/update"]
    assert len(updates) == 1, seen
    assert updates[0].params["inputResponses"] == {"elicit-1": ANSWER}
    assert updates[0].headers.get("mcp-name") == report["task_id"]


async def test_the_ts_sdk1_client_answers_our_2025_input_request_on_tasks_result(ts_peers: TsPeers) -> None:
    async with serve_http(build_example_server()) as url:
        run = await ts_peers.run_async(
            "sdk1_client.mjs",
            "--tool",
            "ask",
            "--args",
            json.dumps({"question": "Your name?"}),
            "--answer",
            json.dumps(ANSWER),
            "--url",
            url,
        )
    report = run.report
    assert report["crashed"] is None, run.explain()
    assert report["error"] is None, run.explain()
    assert _last_text(report["result"]) == "Ada"
    assert report["result"]["_meta"][RELATED] == {"taskId": report["task_id"]}
    (request,) = report["input_requests"]
    assert request["method"] == "elicitation/create"
    assert request["params"]["_meta"][RELATED] == {"taskId": report["task_id"]}
    assert request["params"]["message"] == "Your name?"
    assert report["final_task"]["status"] == "completed"


@contextlib.asynccontextmanager
async def _our_session(url: str, **callbacks: Any) -> AsyncIterator[Any]:
    from mcp import ClientSession
    from mcp.client import streamable_http

    opener = getattr(streamable_http, "streamable_http_client", None)
    if opener is None:  # mcp < 1.24 only has the older name
        opener = streamable_http.streamablehttp_client
    async with (
        opener(url) as streams,
        ClientSession(streams[0], streams[1], **session_kwargs(), **callbacks) as session,
    ):
        yield session


async def test_our_client_answers_the_ts_sdk1_servers_ask(ts_peers: TsPeers) -> None:
    import mcp.types as types

    asked: list[str] = []

    async def elicitation(context: Any, params: Any) -> Any:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"answer": "Ada"})

    statuses: list[str] = []

    def on_status(task: Task) -> None:
        statuses.append(task.status.value)

    with ts_peers.sdk1_http_server() as url:
        async with _our_session(url, elicitation_callback=elicitation) as session:
            assert (await negotiate(session)).dialect == "2025-11-25"
            with anyio.fail_after(BOUND_S):
                result = await call_tool(session, "ask", {"question": "Your name?"}, on_status=on_status)
    block = result.content[0]
    assert block.text == "Ada"
    assert asked == ["Your name?"]
    assert statuses[-1] == "completed"
