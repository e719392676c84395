"""Issue 43 item 1: a server behind bearer auth (the SDK's ``auth=`` and token verifier, in a real
process on 127.0.0.1), called through ``client.connect_http(headers=)``, ``ReconnectingClient``
through a server restart and the command line's ``-H`` / ``--bearer-env``; a wrong token is
``ServerAuthError`` (exit 2 on the command line) and never retried; another user's task is "not
found" without the unauthenticated-session rule; no output holds a token."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from tests.cli.harness import cli
from tests.redis_server import free_port

from mcp_tasks_compat import ServerAuthError, TaskNotFoundError
from mcp_tasks_compat.client import (
    Reconnect,
    ReconnectingClient,
    call_tool,
    connect_http,
    read_result,
    resume,
    start_tool,
)
from mcp_tasks_compat.testing import HttpServerProcess

pytestmark = pytest.mark.anyio

SERVER = Path(__file__).with_name("auth_server.py")
ALICE, BOB, WRONG = "alice-secret-token-0451", "bob-secret-token-0452", "wrong-secret-token-0999"
BOUND_S = 60.0


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


class Server:
    def __init__(self, tmp: Path) -> None:
        self.port = free_port()
        self.args = [str(self.port), str(tmp / "tasks.db"), str(tmp / "marks")]
        self.process = self._new()

    def _new(self) -> HttpServerProcess:
        return HttpServerProcess([sys.executable, "-W", "ignore", str(SERVER), *self.args])

    def restart(self) -> None:
        self.process.kill()
        self.process = self._new()
        self.process.start()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    served = Server(tmp_path)
    served.process.start()
    try:
        yield served
    finally:
        served.process.stop()


def url(server: Server) -> str:
    assert server.process.url is not None
    return server.process.url


def no_token_in(*texts: str) -> None:
    for text in texts:
        for token in (ALICE, BOB, WRONG):
            assert token not in text


async def test_headers_run_a_task_to_its_result(server: Server) -> None:
    statuses: list[str] = []
    with anyio.fail_after(BOUND_S):
        async with connect_http(url(server), headers=bearer(ALICE)) as session:
            result = await call_tool(
                session, "work", {"label": "a"}, on_status=lambda t: statuses.append(t.status.value)
            )
    assert read_result(result).text == "a done"
    assert "completed" in statuses


async def test_a_wrong_token_is_server_auth_error_and_not_retried(server: Server) -> None:
    with anyio.fail_after(BOUND_S), pytest.raises(ServerAuthError) as refused:
        async with connect_http(url(server), headers=bearer(WRONG)):
            pass
    assert refused.value.status == 401
    assert refused.value.code == "server-auth"
    assert "check the token" in refused.value.message
    no_token_in(str(refused.value), repr(refused.value), refused.value.message)

    heard: list[Reconnect] = []
    client = ReconnectingClient(
        lambda: connect_http(url(server), headers=bearer(WRONG)), on_reconnect=heard.append
    )
    with anyio.fail_after(BOUND_S), pytest.raises(ServerAuthError):
        await client.call_tool("work", {"label": "b"})
    assert heard == []  # never retried

    with anyio.fail_after(BOUND_S), pytest.raises(ServerAuthError):  # no credentials at all
        async with connect_http(url(server)):
            pass


async def test_user_b_cannot_read_user_a_task(server: Server) -> None:
    with anyio.fail_after(BOUND_S):
        async with connect_http(url(server), headers=bearer(ALICE)) as alice:
            run = await start_tool(alice, "work", {"label": "mine"})
            async with connect_http(url(server), headers=bearer(BOB)) as bob:
                with pytest.raises(TaskNotFoundError) as hidden:
                    await (await resume(bob, run.task_id)).result()
            assert read_result(await run.result()).text == "mine done"
    message = hidden.value.message
    assert "another principal" in message
    assert "unauthenticated" not in message
    assert "session that created it" not in message


async def test_reconnecting_client_sends_headers_through_a_restart(server: Server) -> None:
    back = anyio.Event()
    opened = 0

    def open_session():
        nonlocal opened
        opened += 1
        return connect_http(url(server), headers=bearer(ALICE))

    async def on_reconnect(event: Reconnect) -> None:
        await back.wait()  # the restarted server is listening: the try is not spent on its start

    client = ReconnectingClient(
        open_session, attempts=8, first_delay_s=0.1, max_delay_s=0.5, on_reconnect=on_reconnect
    )
    started = anyio.Event()

    def on_status(task: object) -> None:
        if "started (1)" in str(getattr(task, "status_message", "")):
            started.set()

    async def restart_once_started() -> None:
        await started.wait()
        await anyio.to_thread.run_sync(server.restart)
        back.set()

    with anyio.fail_after(BOUND_S):
        async with anyio.create_task_group() as group:
            group.start_soon(restart_once_started)
            result = await client.call_tool("hold", {"label": "r"}, on_status=on_status)
    assert read_result(result).text == "r finished at start 2"
    assert opened >= 2  # a new session, with the same headers, after the restart


def test_the_command_line_takes_headers_and_never_prints_a_token(server: Server) -> None:
    target = ["--url", url(server)]
    ran = cli("call", "work", '{"label": "c"}', "-H", f"Authorization: Bearer {ALICE}", *target)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "c done"

    as_json = cli("call", "work", '{"label": "j"}', "--json", "-H", f"Authorization: Bearer {ALICE}", *target)
    assert as_json.returncode == 0, as_json.stderr

    env = {**os.environ, "AGENT_TOKEN": ALICE}
    probe = cli_env(env, "probe", "--bearer-env", "AGENT_TOKEN", *target)
    assert probe.returncode == 0, probe.stderr
    assert "work" in probe.stdout

    wrong = cli("call", "work", '{"label": "w"}', "-H", f"Authorization: Bearer {WRONG}", *target)
    assert wrong.returncode == 2
    assert wrong.stdout == ""
    assert len(wrong.stderr.strip().splitlines()) == 1
    assert "refused the credentials (HTTP 401" in wrong.stderr

    wrong_json = cli("call", "work", "--json", "-H", f"Authorization: Bearer {WRONG}", *target)
    assert wrong_json.returncode == 2

    unknown = cli("call", "--resume", "nosuch", "-H", f"Authorization: Bearer {BOB}", *target)
    assert unknown.returncode == 1
    assert "another principal" in unknown.stderr
    assert "unauthenticated" not in unknown.stderr

    malformed = cli("call", "work", "-H", f"Authorization Bearer {ALICE}", *target)
    assert malformed.returncode == 2
    assert "value is not shown" in malformed.stderr
    unquoted = cli("call", "-H", "Authorization:", "Bearer", ALICE, "extra", *target)
    assert unquoted.returncode == 2
    unknown_option = cli("probe", "--nope", "-H", f"X-Api-Key: {ALICE}", *target)
    assert unknown_option.returncode == 2
    assert "unrecognized arguments" in unknown_option.stderr

    outputs = [ran, as_json, probe, wrong, wrong_json, unknown, malformed, unquoted, unknown_option]
    no_token_in(*(done.stdout for done in outputs), *(done.stderr for done in outputs))
    no_token_in(*server.process.stderr_lines)


def cli_env(env: dict[str, str], *args: str):
    import subprocess

    from tests.cli.harness import CLI

    return subprocess.run(
        [*CLI, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
        stdin=subprocess.DEVNULL,
    )


def test_a_missing_capability_answered_with_32003_reads_as_32021() -> None:
    from mcp_tasks_compat._adapters import get_adapter
    from mcp_tasks_compat._client.protocols import RemoteError
    from mcp_tasks_compat.errors import MISSING_REQUIRED_CLIENT_CAPABILITY

    data = {"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}
    assert (
        RemoteError(-32003, "Missing required client capability", data).code
        == MISSING_REQUIRED_CLIENT_CAPABILITY
    )
    assert (
        RemoteError(-32003, "Missing required client capability").code == MISSING_REQUIRED_CLIENT_CAPABILITY
    )
    assert RemoteError(-32003, "rate limited").code == -32003  # another meaning of a server-defined code
    app = get_adapter().app
    refusal = app.jsonrpc_exception(-32003, "Missing required client capability")
    assert app.jsonrpc_error_of(refusal) == (
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        "Missing required client capability",
    )


async def test_the_errors_page_example_reads_a_refused_token(server: Server) -> None:
    from tests.doc_blocks import run_doc_block

    build = run_doc_block("docs/errors.md", "errors-server-auth")["build"]
    with anyio.fail_after(BOUND_S):
        assert await build(url(server), ALICE) == "all done"
        assert await build(url(server), WRONG) == "HTTP 401: check the token"
