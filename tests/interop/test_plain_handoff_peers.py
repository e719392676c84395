"""The plain hand-off (docs/any-host.md) from clients WITHOUT tasks, each a real process of another
implementation, against our server on the installed major with ``plain_handoff_s=2``:

* the TypeScript SDK's ``Client`` (``@modelcontextprotocol/sdk`` 1.x; ``@modelcontextprotocol/client``
  2.x with the ``initialize`` handshake, and pinned to 2026-07-28 on our mcp 2.x server),
  ``ts/plain_client.mjs``;
* ``fastmcp.Client`` of FastMCP 3 (mcp 1.x) and FastMCP 4 (mcp 2.x), ``fastmcp_plain_client.py``, each
  in its own environment named by ``MCP_TASKS_COMPAT_FASTMCP3_PYTHON`` / ``..._FASTMCP4_PYTHON``
  (nox makes them from ``requirements-fastmcp*.txt``; without one, its tests skip and say so).

Over streamable HTTP the server is the example tools plus :func:`~.example_server.held`, served in
this process, so the test reads the tool's own marks: the call hands off while the tool runs (its
``finished`` mark is not there yet, and cannot be: the peer releases the tool only after the
hand-off), ``task_result`` gives the tool's result, ``task_cancel`` stops it (``stopped``), and
``ask``'s question is answered through ``task_answer``. Over stdio the peer spawns the real command
line, ``mcp-tasks-compat example-server --plain-handoff-s 2``: cancel (``slow_echo``) and answer.

Last, a scripted "model" (:mod:`.text_model`) that reads only the result text drives tools of the
command line's server from call to result by following that text alone.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_tasks_compat._testkit import sessions as kit_sessions
from mcp_tasks_compat._testkit.processes import child_environment

from .example_server import CLI_STDIO_SERVER, HELD_TOOLS_SET, build_example_server, marks_in, serve_http
from .peers import PeerRun, TsPeers, run_peer_command, ts_peers
from .text_model import TextModel

__all__ = ["ts_peers"]  # the fixture, imported so pytest finds it here

pytestmark = pytest.mark.anyio

DEADLINE_S = 2.0
"""The server's ``plain_handoff_s``: what a plain call waits before it hands off."""
HERE = Path(__file__).resolve().parent
FASTMCP_CLIENT = HERE / "fastmcp_plain_client.py"
QUESTION = "Your name?"
ANSWER = '{"answer": "Ada"}'


@dataclass(frozen=True)
class Peer:
    """A plain client: how to run it (``ts`` script options, or a FastMCP environment variable)."""

    name: str
    ts_options: tuple[str, ...] = ()
    fastmcp_env: str | None = None

    async def run(self, ts: TsPeers | None, *args: str) -> PeerRun:
        if self.fastmcp_env is None:
            assert ts is not None
            return await ts.run_async("plain_client.mjs", *self.ts_options, "--timeout-ms", "50000", *args)
        # FastMCP's own import takes ~4 s of CPU: on a loaded machine a run may take far longer
        # than its ~2 s of waiting, so its bounds are wider than a node peer's.
        python = os.environ.get(self.fastmcp_env)
        if not python:
            requirements = f"tests/interop/requirements-{self.name}.txt"
            pytest.skip(
                f"{self.fastmcp_env} is not set: the {self.name} client runs in its own environment "
                f"(`nox -s tests` / `nox -s interop` make it from {requirements})"
            )
        argv = [python, str(FASTMCP_CLIENT), "--timeout-ms", "110000", *args]
        return await run_peer_command(argv, cwd=HERE, bound_s=120)


PEERS = [
    pytest.param(Peer("ts-sdk1", ("--sdk", "1")), id="ts-sdk1"),
    pytest.param(Peer("ts-client2", ("--sdk", "2", "--negotiation", "legacy")), id="ts-client2"),
    pytest.param(
        Peer("ts-client2-modern", ("--sdk", "2", "--negotiation", "modern")),
        id="ts-client2-modern",
        marks=pytest.mark.mcp2,  # 2026-07-28 is our mcp 2.x server's
    ),
    pytest.param(Peer("fastmcp3", fastmcp_env="MCP_TASKS_COMPAT_FASTMCP3_PYTHON"), id="fastmcp3"),
    pytest.param(Peer("fastmcp4", fastmcp_env="MCP_TASKS_COMPAT_FASTMCP4_PYTHON"), id="fastmcp4"),
]


@pytest.fixture
def ts(request: pytest.FixtureRequest, peer: Peer) -> TsPeers | None:
    """The TypeScript peers, only for a TypeScript peer (a FastMCP run needs no node)."""
    return None if peer.fastmcp_env is not None else request.getfixturevalue("ts_peers")


@pytest.fixture(params=PEERS)
def peer(request: pytest.FixtureRequest) -> Peer:
    return request.param


def text_of(result: dict[str, Any]) -> str:
    return "".join(block.get("text", "") for block in result["content"])


def handed_off(scenario: dict[str, Any], run: PeerRun) -> str:
    """The hand-off: an ordinary result naming ``task_result`` and the task it goes on as."""
    handoff = scenario["handoff"]
    assert not handoff.get("isError"), run.explain()
    shown = handoff["structuredContent"]
    assert shown["status"] == "working", run.explain()
    task_id = shown["taskId"]
    text = text_of(handoff)
    assert task_id in text, text
    assert "`task_result`" in text, text
    return str(task_id)


async def wait_for_mark(mark: Path, word: str) -> list[str]:
    """The tool's marks once ``word`` is among them (bounded: a tool that never marks fails)."""
    with anyio.fail_after(10):
        while word not in marks_in(mark):  # noqa: ASYNC110 - a file the tool writes
            await anyio.sleep(0.02)
    return marks_in(mark)


async def test_a_plain_client_follows_the_handoff_over_http(
    peer: Peer, ts: TsPeers | None, tmp_path: Path
) -> None:
    result_mark, cancel_mark = tmp_path / "result.marks", tmp_path / "cancel.marks"
    server = build_example_server(HELD_TOOLS_SET, plain_handoff_s=DEADLINE_S)
    async with serve_http(server) as url:
        run = await peer.run(
            ts,
            "--result-args",
            f'{{"mark": "{result_mark}", "seconds": 10}}',
            "--mark",
            str(result_mark),
            "--release",
            f"{result_mark}.go",
            "--cancel-args",
            f'{{"mark": "{cancel_mark}", "seconds": 30}}',
            "--ask-args",
            f'{{"question": "{QUESTION}"}}',
            "--answer",
            ANSWER,
            "--url",
            url,
        )
        report = run.report
        assert report["crashed"] is None, run.explain()
        assert {"held", "task_status", "task_result", "task_cancel", "task_answer"} <= set(report["tools"])

        # call -> hand-off while the tool runs -> task_result -> the tool's own result
        result = report["result"]
        task_id = handed_off(result, run)
        assert result["marks_at_handoff"] == ["started"], run.explain()  # not "finished": still running
        assert result["handoff_s"] >= DEADLINE_S * 0.95, run.explain()  # it waited for the deadline
        assert not result["final"].get("isError"), run.explain()
        assert text_of(result["final"]) == "released", run.explain()
        assert [step["arguments"] for step in result["steps"][1:]] == [{"task_id": task_id}] * (
            len(result["steps"]) - 1
        )
        assert marks_in(result_mark) == ["started", "finished"]

        # task_cancel stops the work: the tool's own mark says so
        cancel = report["cancel"]
        handed_off(cancel, run)
        assert "cancelled" in text_of(cancel["cancelled"]), run.explain()
        assert cancel["cancelled"]["structuredContent"]["status"] == "cancelled", run.explain()
        assert "cancelled" in text_of(cancel["final"]), run.explain()
        assert await wait_for_mark(cancel_mark, "stopped") == ["started", "stopped"]

    # a question, shown by task_result and answered through task_answer
    answer = report["answer"]
    task_id = handed_off(answer, run)
    question = text_of(answer["question"])
    assert QUESTION in question, run.explain()
    assert "`task_answer`" in question, question
    assert task_id in question, question
    assert answer["question"]["structuredContent"]["inputRequests"], run.explain()
    assert not answer["answered"].get("isError"), run.explain()
    assert not answer["final"].get("isError"), run.explain()
    assert text_of(answer["final"]) == "Ada", run.explain()


STDIO_PEERS = [param for param in PEERS if param.id != "ts-client2-modern"]  # stdio is the handshake's


@pytest.mark.parametrize("peer", STDIO_PEERS)
async def test_a_plain_client_over_stdio_against_the_command_line(peer: Peer, ts: TsPeers | None) -> None:
    """The peer spawns ``mcp-tasks-compat example-server --plain-handoff-s 2`` over stdio."""
    run = await peer.run(
        ts,
        "--long",
        "slow_echo",
        "--cancel-args",
        '{"text": "never", "seconds": 30, "steps": 300}',
        "--ask-args",
        f'{{"question": "{QUESTION}"}}',
        "--answer",
        ANSWER,
        "--",
        *CLI_STDIO_SERVER,
        "--plain-handoff-s",
        f"{DEADLINE_S:g}",
    )
    report = run.report
    assert report["crashed"] is None, run.explain()
    cancel = report["cancel"]
    handed_off(cancel, run)
    assert cancel["handoff_s"] >= DEADLINE_S * 0.95, run.explain()
    assert cancel["cancelled"]["structuredContent"]["status"] == "cancelled", run.explain()
    assert "cancelled" in text_of(cancel["final"]), run.explain()
    answer = report["answer"]
    handed_off(answer, run)
    assert QUESTION in text_of(answer["question"]), run.explain()
    assert text_of(answer["final"]) == "Ada", run.explain()


async def test_a_text_only_model_follows_the_handoff_from_call_to_result() -> None:
    """A bare SDK session to ``example-server --plain-handoff-s 2`` (stdio); the model reads text only."""
    command = [*CLI_STDIO_SERVER, "--plain-handoff-s", f"{DEADLINE_S:g}"]
    async with kit_sessions.connect_stdio(command, env=child_environment(), bare=True) as session:
        listed = (await session.list_tools()).tools
        schemas = {tool.name: getattr(tool, "inputSchema", None) or tool.input_schema for tool in listed}
        model = TextModel(schemas, user={"answer": "Ada"})
        with anyio.fail_after(60):
            asked, asking = await model.run(session, "ask", {"question": QUESTION})
            echoed, echoing = await model.run(session, "slow_echo", {"text": "hello", "seconds": 3})
    assert asked == "Ada", asking
    assert asking.tools[:3] == ["ask", "task_result", "task_answer"], asking
    assert set(asking.tools[3:]) == {"task_result"}, asking
    assert QUESTION in asking.texts[1]
    task_id = asking.calls[1][1]["task_id"]
    assert asking.calls[2][1] == {"task_id": task_id, "answer": {"answer": "Ada"}}
    assert echoed == "hello", echoing
    assert echoing.tools[0] == "slow_echo"
    assert len(echoing.tools) >= 2, echoing  # handed off: the 3 s tool outlived the 2 s deadline
    assert set(echoing.tools[1:]) == {"task_result"}, echoing
