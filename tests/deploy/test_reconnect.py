"""A client whose server goes away while it follows a task (issue 25, point 5): never a raw
transport error. With :class:`~mcp_tasks_compat.client.ReconnectingClient` the caller gets the
task's result (its connection was cut and came back), or ``TaskFailedError`` naming the task (its
server was killed and restarted on the same file); without it, ``ServerConnectionLostError``
naming the task.

Real processes over streamable HTTP on 127.0.0.1; the connection is cut by a small TCP relay in
this test (its listener and every relayed connection closed, then opened again on the same port),
the server killed with SIGKILL and restarted on its SQLite file. Each reconnection waits (in its
``on_reconnect`` hook, :class:`Held`) until the test says the server is back, which it knows from an
event (the relay listens again, the restarted server printed its "listening on" line): the
client's tries are never spent on a server still starting, however busy the machine.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest
from tests.doc_blocks import run_doc_block_async
from tests.redis_server import free_port

from mcp_tasks_compat import ServerConnectionLostError, TaskFailedError
from mcp_tasks_compat._testkit.sessions import connect_http, connect_stdio
from mcp_tasks_compat.client import Reconnect, ReconnectingClient, start_tool
from mcp_tasks_compat.core._model import Task, TaskStatus

from ._procs import LOST_RUN, NEWEST_DIALECT, Watch, fresh_redis_db, is_, kill, servers

pytestmark = pytest.mark.anyio

BOUND_S = 60.0
LEASE_S = 1.5
"""Short, so the surviving replica fails the dead one's task within the test."""
QUICK_RETRIES = {"attempts": 8, "first_delay_s": 0.1, "max_delay_s": 0.5}
"""Short back-offs; not a budget for the server to come back in: :class:`Held` holds each try until it is."""
SCOPE = ("--unauthenticated-2025-scope", "task_id")
"""So a new 2025-11-25 session (mcp 1.x) may resume the task by its id, as 2026-07-28 always may."""


class Relay:
    """A TCP relay from its own port to a server: :meth:`cut` closes everything, :meth:`restore`
    listens again on the same port. Given several servers (replicas), it sends every connection to
    the current one and moves on to the next when that one refuses (a load balancer's failover,
    sticky while the replica lives, as a 2025-11-25 session needs)."""

    def __init__(self, group: anyio.abc.TaskGroup, backend_ports: list[int]) -> None:
        self.port = free_port()
        self._group = group
        self._backends = backend_ports
        self._current = 0
        self._scope = anyio.CancelScope()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    async def restore(self) -> None:
        self._scope = anyio.CancelScope()
        await self._group.start(self._serve, self._scope)

    def cut(self) -> None:
        self._scope.cancel()

    async def _serve(self, scope: anyio.CancelScope, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        with scope:
            listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=self.port)
            task_status.started()
            async with listener:
                await listener.serve(self._relay)

    async def _backend(self) -> anyio.abc.SocketStream:
        for _ in self._backends:
            try:
                return await anyio.connect_tcp("127.0.0.1", self._backends[self._current])
            except OSError:
                self._current = (self._current + 1) % len(self._backends)
        raise OSError("no replica answers")

    async def _relay(self, client: anyio.abc.SocketStream) -> None:
        try:
            server = await self._backend()
        except OSError:
            await client.aclose()
            return
        async with client, server:

            async def pump(source: anyio.abc.SocketStream, sink: anyio.abc.SocketStream) -> None:
                try:
                    async for chunk in source:
                        await sink.send(chunk)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    pass
                finally:
                    group.cancel_scope.cancel()

            async with anyio.create_task_group() as group:
                group.start_soon(pump, client, server)
                group.start_soon(pump, server, client)


class Held:
    """An ``on_reconnect`` hook: hears each reconnection, sets :attr:`lost` at the first, and holds
    each one until :meth:`release` (the test's word that the server is reachable again)."""

    def __init__(self) -> None:
        self.heard: list[Reconnect] = []
        self.lost = anyio.Event()
        self._back = anyio.Event()

    async def __call__(self, event: Reconnect) -> None:
        self.heard.append(event)
        self.lost.set()
        await self._back.wait()

    def release(self) -> None:
        self._back.set()


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/", 1)[0])


@asynccontextmanager
async def relay_to(*urls: str) -> AsyncIterator[Relay]:
    async with anyio.create_task_group() as group:
        relay = Relay(group, [_port(url) for url in urls])
        await relay.restore()
        yield relay
        group.cancel_scope.cancel()


def opener(url: str) -> Any:
    return lambda: connect_http(url, dialect=NEWEST_DIALECT)


async def test_a_cut_connection_is_resumed_and_the_result_arrives() -> None:
    held = Held()
    watch = Watch()
    with servers() as started:
        _server, url = await started.start_one(*SCOPE)
        with anyio.fail_after(BOUND_S):
            async with relay_to(url) as relay:
                client = ReconnectingClient(opener(relay.url), on_reconnect=held, **QUICK_RETRIES)
                results: list[Any] = []

                async def call() -> None:
                    arguments = {"text": "through", "seconds": 1.5, "steps": 3}
                    results.append(await client.call_tool("slow_echo", arguments, on_status=watch))

                async with anyio.create_task_group() as group:
                    group.start_soon(call)
                    first = await watch.until(is_(TaskStatus.WORKING), within=BOUND_S)
                    relay.cut()  # the task goes on on the server; its client cannot reach it
                    await held.lost.wait()  # the client saw its connection go; it stays cut until now
                    await relay.restore()  # listening again when this returns
                    held.release()
    (result,) = results
    assert [block.text for block in result.content] == ["through"]
    assert held.heard, "the client should have reconnected"
    assert {event.task_id for event in held.heard} == {first.task_id}
    assert watch.seen[-1].status is TaskStatus.COMPLETED


async def test_a_killed_and_restarted_server_fails_the_followed_task_by_name(tmp_path: Path) -> None:
    port = free_port()
    options = ("--store", f"sqlite:///{tmp_path / 'tasks.db'}", *SCOPE)
    watch = Watch()
    held = Held()
    with servers() as started:
        first_server, url = await started.start_one(*options, "--port", str(port))
        client = ReconnectingClient(opener(url), on_reconnect=held, **QUICK_RETRIES)
        failures: list[BaseException] = []

        async def call() -> None:
            try:
                await client.call_tool(
                    "slow_echo", {"text": "lost", "seconds": 60, "steps": 60}, on_status=watch
                )
            except TaskFailedError as error:
                failures.append(error)

        with anyio.fail_after(BOUND_S):
            async with anyio.create_task_group() as group:
                group.start_soon(call)
                running: Task = await watch.until(is_(TaskStatus.WORKING), within=BOUND_S)
                kill(first_server)
                # Returns once the new process printed "listening on": only then may the client
                # try (a fresh interpreter importing mcp takes seconds on a busy machine).
                await started.start(*options, "--port", str(port))
                held.release()
    (failure,) = failures
    assert isinstance(failure, TaskFailedError)
    assert failure.task_id == running.task_id
    assert held.heard, "the client should have reconnected"
    assert {event.task_id for event in held.heard} == {running.task_id}
    assert LOST_RUN in (watch.seen[-1].status_message or "")


async def test_without_reconnecting_the_error_names_the_task() -> None:
    watch = Watch()
    with servers() as started:
        _server, url = await started.start_one()
        with anyio.fail_after(BOUND_S):
            async with relay_to(url) as relay:
                client = ReconnectingClient(opener(relay.url), attempts=0)
                errors: list[ServerConnectionLostError] = []

                async def call() -> None:
                    try:
                        await client.call_tool(
                            "slow_echo", {"text": "x", "seconds": 30, "steps": 30}, on_status=watch
                        )
                    except ServerConnectionLostError as error:
                        errors.append(error)

                async with anyio.create_task_group() as group:
                    group.start_soon(call)
                    running = await watch.until(is_(TaskStatus.WORKING), within=BOUND_S)
                    relay.cut()
    (error,) = errors
    assert error.task_id == running.task_id
    assert error.dialect == NEWEST_DIALECT
    assert running.task_id in error.message


async def test_a_stdio_server_that_dies_gives_the_typed_error_with_the_task(tmp_path: Path) -> None:
    """The caller's own session (no reconnecting client): over stdio the error reaches the call."""
    pid_file = tmp_path / "server.pid"
    command = [
        "sh",
        "-c",
        f'echo $$ > {pid_file}; exec "$0" -m mcp_tasks_compat example-server',
        sys.executable,
    ]
    watch = Watch()
    seen_by_the_call: list[ServerConnectionLostError] = []
    task_ids: list[str] = []

    async def follow_until_the_server_dies() -> None:
        async with connect_stdio(command) as session:
            run = await start_tool(
                session, "slow_echo", {"text": "x", "seconds": 30, "steps": 30}, on_status=watch
            )
            task_ids.append(run.task_id)
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
            with pytest.raises(ServerConnectionLostError) as lost:
                await run.result()
            seen_by_the_call.append(lost.value)

    with anyio.fail_after(BOUND_S):
        await follow_until_the_server_dies()  # the block caught the call's error: it ends normally
    # The kit's session holds its transport in a task of its own (client.connect_stdio's opener):
    # a poll written to the dead pipe fails that task, not the block, and the call learns it.
    (error,) = seen_by_the_call
    assert error.task_id == task_ids[0]


async def test_the_command_line_resumes_a_task_by_id() -> None:
    with servers() as started:
        _server, url = await started.start_one(*SCOPE)
        with anyio.fail_after(BOUND_S):
            # The creating session stays open: on mcp 1.x a task's run lives in its session.
            async with connect_http(url, dialect=NEWEST_DIALECT) as session:
                run = await start_tool(session, "slow_echo", {"text": "later", "seconds": 0.5, "steps": 1})
                assert run.task_id is not None
                done = await anyio.run_process(
                    [
                        sys.executable,
                        "-m",
                        "mcp_tasks_compat",
                        "call",
                        "--resume",
                        run.task_id,
                        "--json",
                        "--url",
                        url,
                    ],
                    check=False,
                )
            neither = await anyio.run_process(
                [sys.executable, "-m", "mcp_tasks_compat", "call", "--json", "--url", url], check=False
            )
    report = json.loads(done.stdout)
    assert done.returncode == 0, done.stderr
    assert report["task_id"] == run.task_id
    assert report["result"]["content"] == [{"type": "text", "text": "later"}]
    assert neither.returncode == 2
    assert b"--resume TASK_ID" in neither.stderr


async def test_the_documented_reconnecting_client(capsys: pytest.CaptureFixture[str]) -> None:
    with servers() as started:
        _server, url = await started.start_one()
        with anyio.fail_after(BOUND_S):
            names = await run_doc_block_async("docs/client.md", "client-reconnect", {"url": url})
    assert [block.text for block in names["result"].content] == ["hi"]
    assert "completed" in capsys.readouterr().out  # on_status=print printed the task's statuses


async def test_a_dead_replica_behind_a_balancer_fails_the_task_by_name_on_the_other(redis_url: str) -> None:
    """Two replicas on one Redis behind a failover relay: the one running the task is killed; the
    client reconnects through the relay to the other, which fails the task once its lease ran out."""
    options = ("--store", fresh_redis_db(redis_url), "--lease-s", str(LEASE_S), *SCOPE)
    watch = Watch()
    with servers() as started:
        (replica_a, url_a), (_replica_b, url_b) = await started.start(*options, count=2)
        failures: list[TaskFailedError] = []
        with anyio.fail_after(BOUND_S):
            async with relay_to(url_a, url_b) as relay:
                client = ReconnectingClient(opener(relay.url), **QUICK_RETRIES)

                async def call() -> None:
                    arguments = {"text": "x", "seconds": 60, "steps": 60}
                    try:
                        await client.call_tool("slow_echo", arguments, on_status=watch)
                    except TaskFailedError as error:
                        failures.append(error)

                async with anyio.create_task_group() as group:
                    group.start_soon(call)
                    running = await watch.until(is_(TaskStatus.WORKING), within=BOUND_S)
                    kill(replica_a)  # the relay sent everything to A so far
    (failure,) = failures
    assert failure.task_id == running.task_id
    assert LOST_RUN in (watch.seen[-1].status_message or "")
