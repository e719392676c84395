"""mcp 2.x, 2026-07-28: task states pushed on ``subscriptions/listen``, and polling as the fallback.

The project's client against the project's server (``MCPServer`` with ``ServerTasks``), whose
requests are counted by a middleware of the test, in memory over the SDK's JSON-RPC streams. The
server's poll hint is a minute, so a task followed by polling takes a minute: a result that comes
back at once without any ``tasks/get`` can only have been pushed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest

from mcp_tasks_compat._client import poller
from mcp_tasks_compat._client_api import session_kwargs
from mcp_tasks_compat._engine import PollPolicy
from mcp_tasks_compat.client import call_tool, start_tool
from mcp_tasks_compat.core._model import Task
from mcp_tasks_compat.server import ServerTasks, elicit, report_status

from .harness import text_of

pytestmark = [pytest.mark.anyio, pytest.mark.mcp2]

pytest.importorskip("mcp.server.mcpserver", reason="needs mcp 2.x (MCPServer)")

import mcp_types  # noqa: E402
from mcp.client._memory import InMemoryTransport  # noqa: E402 - after the skip, mcp 2.x
from mcp.client.session import ClientSession  # noqa: E402
from mcp.server.mcpserver import MCPServer  # noqa: E402

BOUND = 5.0
MINUTE_MS = 60_000
LISTEN = "subscriptions/listen"


@dataclass
class Counted:
    """What the server saw, and the switches the test flips on it."""

    methods: Counter[str] = field(default_factory=Counter[str])
    listening: anyio.Event = field(default_factory=anyio.Event)
    drop_streams: anyio.CancelScope | None = None
    refuse_listen: bool = False
    silent_listen: bool = False

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        self.methods[ctx.method] += 1
        if ctx.method != LISTEN:
            return await call_next(ctx)
        if self.refuse_listen:
            from mcp.shared.exceptions import MCPError

            raise MCPError(code=-32601, message="Method not found")
        if self.silent_listen:
            self.listening.set()
            await anyio.sleep_forever()  # never acknowledges
        with anyio.CancelScope() as scope:
            self.drop_streams = scope
            self.listening.set()
            return await call_next(ctx)
        return {"resultType": "complete"}  # the test cut the stream: it ends


@dataclass
class App:
    server: Any
    counted: Counted
    release: anyio.Event = field(default_factory=anyio.Event)
    started: anyio.Event = field(default_factory=anyio.Event)


def build_app(*, hint_ms: int = MINUTE_MS, **task_options: Any) -> App:
    counted = Counted()
    # The inline grace off: these tests are about following a task, even a quick one.
    task_options.setdefault("inline_grace_s", 0)
    tasks = ServerTasks(
        tools={"slow": "optional", "ask": "optional"},
        poll_policy=PollPolicy(minimum_ms=hint_ms, maximum_ms=hint_ms),
        **task_options,
    )
    # The counter is outermost (the user's middleware comes before ours).
    server = MCPServer("push-tests", **tasks.mcpserver_kwargs(middleware=[counted]))
    app = App(server=server, counted=counted)

    @server.tool()
    async def ask(question: str) -> str:
        answer = await elicit(question, {"type": "object", "properties": {"a": {"type": "string"}}})
        return f"{answer.action}: {(answer.content or {}).get('a')}"

    @server.tool()
    async def slow(label: str) -> str:
        await report_status("started")
        app.started.set()
        await app.release.wait()
        await report_status("finishing")
        return f"done {label}"

    return app


@asynccontextmanager
async def client_of(app: App, *, push: bool = True, **options: Any) -> AsyncIterator[ClientSession]:
    async with (
        InMemoryTransport(app.server) as (read, write),
        ClientSession(read, write, **session_kwargs(push=push), **options) as session,
    ):
        yield session


@dataclass
class Recorder:
    """``on_status``: every (status, message) the client reported; ``started`` once it saw "started"."""

    seen: list[tuple[str, str | None]] = field(default_factory=lambda: list[tuple[str, str | None]]())
    started: anyio.Event = field(default_factory=anyio.Event)

    def __call__(self, task: Task) -> None:
        self.seen.append((task.status.value, task.status_message))
        if task.status_message == "started":
            self.started.set()


async def test_push_delivers_the_terminal_task_without_any_tasks_get() -> None:
    app = build_app()
    statuses = Recorder()
    async with client_of(app) as session:
        async with anyio.create_task_group() as group:
            results: list[Any] = []

            async def caller() -> None:
                results.append(await call_tool(session, "slow", {"label": "a"}, on_status=statuses))

            group.start_soon(caller)
            with anyio.fail_after(BOUND):
                await statuses.started.wait()  # only a push can tell (the creation answer has no message)
            app.release.set()
        assert text_of(results[0]) == "done a"
    assert app.counted.methods["tasks/get"] == 0
    assert app.counted.methods[LISTEN] == 1
    assert statuses.seen[0] == ("working", None)
    assert statuses.seen[-1] == ("completed", "finishing")


async def test_pushed_statuses_arrive_in_order() -> None:
    # Each pushed state is the task as it is when sent: states may be coalesced, never reordered.
    app = build_app()
    statuses = Recorder()
    async with client_of(app) as session:
        with anyio.fail_after(BOUND):
            run = await start_tool(session, "slow", {"label": "b"}, on_status=statuses)
            async with anyio.create_task_group() as group:
                group.start_soon(run.result)
                await statuses.started.wait()
                app.release.set()
        assert text_of(await run.result()) == "done b"
    in_order = [
        ("working", None),
        ("working", "started"),
        ("working", "finishing"),
        ("completed", "finishing"),
    ]
    assert statuses.seen[:2] == in_order[:2]
    assert statuses.seen[-1] == in_order[-1]
    positions = [in_order.index(seen) for seen in statuses.seen]
    assert positions == sorted(set(positions))  # each once, in the order they happened
    assert app.counted.methods["tasks/get"] == 0


async def test_one_stream_per_connection_follows_every_task() -> None:
    app = build_app()
    async with client_of(app) as session:
        results: list[str] = []

        async def caller(label: str) -> None:
            results.append(text_of(await call_tool(session, "slow", {"label": label})))

        with anyio.fail_after(BOUND):
            async with anyio.create_task_group() as group:
                for label in ("x", "y", "z"):
                    group.start_soon(caller, label)
                await app.started.wait()
                await app.counted.listening.wait()
                app.release.set()
    assert sorted(results) == ["done x", "done y", "done z"]
    assert app.counted.methods["tasks/get"] == 0
    # A stream asks for every task followed when it opens; a task followed later opens the
    # next one (the old one is closed once it acknowledged): never more than one per task.
    assert 1 <= app.counted.methods[LISTEN] <= 3


async def test_a_dropped_stream_falls_back_to_polling_without_losing_the_result() -> None:
    app = build_app(hint_ms=20)
    async with client_of(app) as session:
        results: list[Any] = []

        async def caller() -> None:
            results.append(await call_tool(session, "slow", {"label": "d"}))

        with anyio.fail_after(BOUND):
            async with anyio.create_task_group() as group:
                group.start_soon(caller)
                await app.started.wait()
                await app.counted.listening.wait()
                gets_before = app.counted.methods["tasks/get"]
                assert app.counted.drop_streams is not None
                app.counted.drop_streams.cancel()
                app.release.set()
    assert text_of(results[0]) == "done d"
    assert app.counted.methods["tasks/get"] > gets_before


async def test_a_refused_listen_falls_back_to_polling() -> None:
    app = build_app(hint_ms=20)
    app.counted.refuse_listen = True
    async with client_of(app) as session:
        app.release.set()
        with anyio.fail_after(BOUND):
            assert text_of(await call_tool(session, "slow", {"label": "r"})) == "done r"
            assert text_of(await call_tool(session, "slow", {"label": "s"})) == "done s"
    assert app.counted.methods["tasks/get"] >= 2
    assert app.counted.methods[LISTEN] == 1  # refused once: not asked again on this connection


async def test_a_server_that_does_not_push_is_polled() -> None:
    app = build_app(hint_ms=20, push=False)
    async with client_of(app) as session:
        app.release.set()
        with anyio.fail_after(BOUND):
            assert text_of(await call_tool(session, "slow", {"label": "n"})) == "done n"
            assert text_of(await call_tool(session, "slow", {"label": "m"})) == "done m"
    # The SDK's own listen handler acknowledged without taskIds: once, then polling only.
    assert app.counted.methods[LISTEN] == 1
    assert app.counted.methods["tasks/get"] >= 2


async def test_push_false_on_the_client_only_polls() -> None:
    app = build_app(hint_ms=20)
    async with client_of(app, push=False) as session:
        app.release.set()
        with anyio.fail_after(BOUND):
            assert text_of(await call_tool(session, "slow", {"label": "p"})) == "done p"
    assert app.counted.methods[LISTEN] == 0
    assert app.counted.methods["tasks/get"] >= 1


async def test_input_requests_arrive_by_push_and_are_answered() -> None:
    app = build_app()
    asked: list[str] = []

    async def elicitation(context: Any, params: Any) -> Any:
        asked.append(params.message)
        return mcp_types.ElicitResult(action="accept", content={"a": "yes"})

    async with client_of(app, elicitation_callback=elicitation) as session:
        with anyio.fail_after(BOUND):
            result = await call_tool(session, "ask", {"question": "Go on?"}, mode="task")
    assert text_of(result) == "accept: yes"
    assert asked == ["Go on?"]
    assert app.counted.methods["tasks/get"] == 0
    assert app.counted.methods["tasks/update"] == 1


async def test_a_listen_that_is_never_acknowledged_does_not_hold_the_result_back() -> None:
    app = build_app(hint_ms=20)
    app.counted.silent_listen = True
    async with client_of(app) as session:
        app.release.set()
        with anyio.fail_after(BOUND):
            assert text_of(await call_tool(session, "slow", {"label": "q"})) == "done q"
    assert app.counted.methods["tasks/get"] >= 1


async def test_push_over_streamable_http() -> None:
    from mcp.client.streamable_http import streamable_http_client

    from server.harness import serve_asgi

    app = build_app()
    statuses = Recorder()
    async with (
        serve_asgi(app.server.streamable_http_app()) as url,
        streamable_http_client(url) as (read, write),
        ClientSession(read, write, **session_kwargs()) as session,
        anyio.create_task_group() as group,
    ):
        results: list[Any] = []

        async def caller() -> None:
            results.append(await call_tool(session, "slow", {"label": "h"}, on_status=statuses))

        group.start_soon(caller)
        with anyio.fail_after(BOUND):
            await statuses.started.wait()
        app.release.set()
    assert text_of(results[0]) == "done h"
    assert app.counted.methods["tasks/get"] == 0
    assert statuses.seen[-1] == ("completed", "finishing")


class LosingPushes:
    """A client's read stream that loses every ``notifications/tasks`` once ``losing`` is set: the
    stream looks alive (nothing ends it) and carries nothing, as one whose connection half-closed
    under a client that reads nothing more from it (the bench smoke's hang, issue 43)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.losing = False
        self.lost = 0

    async def __aenter__(self) -> LosingPushes:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> Any:
        return await self._stream.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    def __aiter__(self) -> LosingPushes:
        return self

    async def __anext__(self) -> Any:
        while True:
            message = await self._stream.__anext__()
            if not (self.losing and getattr(message.message, "method", None) == "notifications/tasks"):
                return message
            self.lost += 1

    async def receive(self) -> Any:
        return await self.__anext__()


async def test_a_covered_task_whose_pushes_are_lost_is_still_seen_to_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The safety pace made short for the test (5 s by default): what matters is that it exists.
    monkeypatch.setattr(poller, "SAFETY_POLL_SECONDS", 0.3)
    app = build_app(hint_ms=20)
    statuses = Recorder()
    async with InMemoryTransport(app.server) as (read, write):
        losing = LosingPushes(read)
        async with ClientSession(losing, write, **session_kwargs()) as session:
            run = await start_tool(session, "slow", {"label": "lost"}, on_status=statuses)
            results: list[Any] = []

            async def wait() -> None:
                results.append(await run.result())

            with anyio.fail_after(BOUND):
                async with anyio.create_task_group() as group:
                    group.start_soon(wait)
                    await statuses.started.wait()  # pushed: the stream covers the task
                    losing.losing = True
                    gets_before = app.counted.methods["tasks/get"]
                    app.release.set()
    assert text_of(results[0]) == "done lost"
    assert losing.lost >= 1  # the end was pushed, and lost
    assert app.counted.methods["tasks/get"] > gets_before  # the safety poll saw it
    assert app.counted.methods[LISTEN] == 1


async def test_a_tasks_get_whose_answer_is_lost_is_sent_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(poller, "REQUEST_BOUND_SECONDS", 0.3)
    app = build_app(hint_ms=20, push=False)
    app.release.set()
    async with InMemoryTransport(app.server) as (read, write):
        losing = LosingAnswers(read)
        async with ClientSession(losing, write, **session_kwargs()) as session:
            with anyio.fail_after(BOUND):
                run = await start_tool(session, "slow", {"label": "again"})
                losing.lose_next = 1
                assert text_of(await run.result()) == "done again"
    assert losing.lost == 1
    assert app.counted.methods["tasks/get"] >= 2  # the lost one, then one sent again


class LosingAnswers(LosingPushes):
    """A client's read stream that loses the next ``lose_next`` answers to requests."""

    lose_next = 0

    async def __anext__(self) -> Any:
        while True:
            message = await self._stream.__anext__()
            is_answer = getattr(message.message, "method", None) is None and hasattr(message.message, "id")
            if not (is_answer and self.lose_next > 0):
                return message
            self.lose_next -= 1
            self.lost += 1


async def test_a_stream_the_server_ends_over_http_is_reopened_and_the_end_seen() -> None:
    """The listen response cut off by the server mid-stream (no JSON-RPC answer: the HTTP body
    ends): the client learns the stream ended, polls at once and listens again."""
    from mcp.client.streamable_http import streamable_http_client

    from server.harness import serve_asgi

    app = build_app(hint_ms=20)
    statuses = Recorder()
    cut = CutListenBody(app.server.streamable_http_app())
    async with (
        serve_asgi(cut) as url,
        streamable_http_client(url) as (read, write),
        ClientSession(read, write, **session_kwargs()) as session,
    ):
        run = await start_tool(session, "slow", {"label": "cut"}, on_status=statuses)
        results: list[Any] = []

        async def wait() -> None:
            results.append(await run.result())

        with anyio.fail_after(BOUND):
            async with anyio.create_task_group() as group:
                group.start_soon(wait)
                await statuses.started.wait()  # pushed on the first stream
                cut.cut_now.set()
                await cut.was_cut.wait()
                app.release.set()
    assert text_of(results[0]) == "done cut"
    assert app.counted.methods[LISTEN] >= 2  # listened again after the cut


class CutListenBody:
    """ASGI middleware: the first ``subscriptions/listen`` response body ends when ``cut_now`` is
    set (the server side closes the stream without answering the request)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.cut_now = anyio.Event()
        self.was_cut = anyio.Event()
        self._taken = False

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or self._taken:
            await self.app(scope, receive, send)
            return
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        if b'"subscriptions/listen"' not in body:
            await self.app(scope, replay, send)
            return
        self._taken = True
        async with anyio.create_task_group() as group:

            async def cut() -> None:
                await self.cut_now.wait()
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                self.was_cut.set()
                group.cancel_scope.cancel()

            group.start_soon(cut)
            await self.app(scope, replay, send)
