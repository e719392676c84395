"""``TaskServer(run_on="workers")`` and ``serve_worker`` on the installed major, both dialects.

The server and a worker share one SQLite file (a store object each, as two processes would); the
client is a real session over in-memory JSON-RPC streams. tests/deploy/test_workers.py does the
same with real processes, Redis and kill -9.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from tests.doc_blocks import run_doc_block

from mcp_tasks_compat import testing
from mcp_tasks_compat._client_api import session_kwargs
from mcp_tasks_compat._testkit import sessions as kit_sessions
from mcp_tasks_compat.client import call_tool, read_result, start_tool
from mcp_tasks_compat.core._model import Task, TaskStatus
from mcp_tasks_compat.server import Context, PollPolicy, TaskServer, current_call, elicit, report_progress

pytestmark = pytest.mark.anyio

BOUND_S = 30.0
"""A bound, not a wait."""


def build_app(store: str, **options: Any) -> TaskServer:
    app = TaskServer("workers-test", store=store, run_on="workers", inline_grace_s=0, **options)

    @app.tool(task="optional")
    async def render(frames: int) -> str:
        """Render frames on a worker."""
        task = current_call().task
        assert task is not None
        for frame in range(1, frames + 1):
            await report_progress(frame, frames, f"frame {frame}/{frames}")
        return f"rendered {frames} in pid {os.getpid()} as {task.task_id}"

    @app.tool(task="optional")
    async def ask_name() -> str:
        answer = await elicit("Your name?", {"type": "object", "properties": {"name": {"type": "string"}}})
        return f"Hello, {answer.content['name']}!"

    @app.tool(task="optional", run_on="here")
    async def quick(text: str) -> str:
        task = current_call().task
        return f"{text} here, {task.status_message if task else 'plain'}"

    return app


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'tasks.db'}"


@asynccontextmanager
async def worker(app: TaskServer, store_url: str) -> AsyncGenerator[None]:
    """A worker of ``app`` on its own store object (another process would open the same file)."""
    stop = anyio.Event()
    async with anyio.create_task_group() as group:
        group.start_soon(lambda: app.serve_worker(store=store_url, stop=stop, concurrency=4, grace_s=5))
        try:
            yield
        finally:
            stop.set()


@pytest.fixture(params=testing.dialects())
def dialect(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_a_call_waits_queued_until_a_worker_runs_it(dialect: str, store_url: str) -> None:
    app = build_app(store_url)
    seen: list[Task] = []
    with anyio.fail_after(BOUND_S):
        async with kit_sessions.connect_in_memory(app, dialect=dialect) as session:
            run = await start_tool(session, "render", {"frames": 3}, on_status=seen.append)
            first = await run.status()
            assert first is not None
            assert first.status is TaskStatus.WORKING
            assert first.status_message == "queued: waiting for a worker"
            async with worker(app, store_url):
                result = await run.result()
    text = result.content[0].text
    assert text.startswith(f"rendered 3 in pid {os.getpid()} as {run.task_id}")
    messages = [task.status_message for task in seen]
    assert messages[0] == "queued: waiting for a worker"
    assert messages[-1] == "frame 3/3"


async def test_progress_from_the_worker_rides_with_its_status(dialect: str, store_url: str) -> None:
    """``report_progress`` in a worker's run: its numbers reach the client with the task's status
    (``on_status``); ``call_tool``'s ``on_progress`` for a task is issue 35's."""
    app = build_app(store_url)
    seen: list[Task] = []
    with anyio.fail_after(BOUND_S):
        async with kit_sessions.connect_in_memory(app, dialect=dialect) as session, worker(app, store_url):
            await call_tool(session, "render", {"frames": 2}, mode="task", on_status=seen.append)
    last = seen[-1]
    assert last.status_message == "frame 2/2"
    assert last.progress is not None
    assert (last.progress.progress, last.progress.total) == (2.0, 2.0)


async def test_a_question_from_the_worker_is_answered_by_the_client(dialect: str, store_url: str) -> None:
    import mcp.types as types

    app = build_app(store_url)
    asked: list[str] = []

    async def elicitation_callback(context: Any, params: Any) -> Any:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    options = {**session_kwargs(dialect=dialect), "elicitation_callback": elicitation_callback}
    with anyio.fail_after(BOUND_S):
        async with (
            kit_sessions.connect_in_memory(app, dialect=dialect, session_options=options) as session,
            worker(app, store_url),
        ):
            result = await call_tool(session, "ask_name", mode="task")
    assert result.content[0].text == "Hello, Ada!"
    assert asked == ["Your name?"]


async def test_a_tool_that_runs_here_is_not_queued(dialect: str, store_url: str) -> None:
    app = build_app(store_url)
    assert app.tasks.runs_on("quick") == "here"
    assert app.tasks.runs_on("render") == "workers"
    with anyio.fail_after(BOUND_S):
        async with kit_sessions.connect_in_memory(app, dialect=dialect) as session:
            result = await call_tool(session, "quick", {"text": "hi"}, mode="task")  # no worker runs
    assert result.content[0].text == "hi here, None"


class Pool:
    """A resource a lifespan opens (a database pool, say): opens and closes counted."""

    def __init__(self) -> None:
        self.opened = 0
        self.closed = 0

    @asynccontextmanager
    async def lifespan(self, server: Any) -> AsyncGenerator[dict[str, Any]]:
        self.opened += 1
        try:
            yield {"db": f"pool {self.opened}"}
        finally:
            self.closed += 1


def lifespan_app(store: str, pool: Pool) -> TaskServer:
    """Tools that read the lifespan's value: without a Context, and through the SDK's Context."""
    app = TaskServer("lifespan-test", store=store, run_on="workers", inline_grace_s=0, lifespan=pool.lifespan)

    @app.tool(task="optional", reruns=1)
    async def report(day: str) -> str:
        return f"{day} from {current_call().lifespan_context['db']}"

    @app.tool(task="optional")
    async def with_context(day: str, ctx: Context) -> str:
        await ctx.report_progress(1, 2, "reading")  # no client to send it to: the task's status
        return f"{day} from {ctx.request_context.lifespan_context['db']}"

    @app.tool(task="optional")
    async def asks_roots(ctx: Context) -> str:
        roots = await ctx.session.list_roots()  # the client session does not cross to a worker
        return str(roots)

    @app.tool(task="optional", run_on="here")
    async def here(day: str) -> str:
        return f"{day} here from {current_call().lifespan_context['db']}"

    return app


async def test_a_workers_tools_see_the_servers_lifespan_entered_once_per_worker(
    dialect: str, store_url: str
) -> None:
    """The worker enters the app's ``lifespan=`` once at start and leaves it at stop: a tool reads
    its value with ``current_call().lifespan_context`` or ``ctx.request_context.lifespan_context``
    (the refusal of a ``Context`` tool on workers is lifted); what belongs to the client session
    is refused by name, with the way that crosses."""
    pool = Pool()
    app = lifespan_app(store_url, pool)
    with anyio.fail_after(BOUND_S):
        async with kit_sessions.connect_in_memory(app, dialect=dialect) as session:
            here = await call_tool(session, "here", {"day": "mon"}, mode="task")
            opened_by_server = pool.opened
            async with worker(app, store_url):
                first = await call_tool(session, "report", {"day": "tue"}, mode="task")
                second = await call_tool(session, "with_context", {"day": "wed"}, mode="task")
                refused = await call_tool(session, "asks_roots", mode="task")
                assert pool.opened == opened_by_server + 1  # the worker's, once for every run
            assert pool.closed == 1  # the worker left it at its stop; the server's is still open
    assert here.content[0].text == f"mon here from pool {opened_by_server}"
    assert first.content[0].text == f"tue from pool {pool.opened}"
    assert second.content[0].text == f"wed from pool {pool.opened}"
    refusal = read_result(refused)
    assert refusal.is_error
    assert "ctx.session.list_roots is not available" in refusal.text
    assert "mcp_tasks_compat.server.list_roots" in refusal.text


def test_workers_need_a_shared_store() -> None:
    with pytest.raises(ValueError, match=r"run_on='workers' needs a task store the workers share"):
        TaskServer("refused", run_on="workers")
    app = TaskServer("here")
    with pytest.raises(ValueError, match=r"run_on of 'x'='workers' needs a task store"):
        app.tool(task="optional", run_on="workers", name="x")(lambda: "x")


def test_the_server_pages_workers_example_queues_what_it_says() -> None:
    app = run_doc_block("docs/server.md", "workers")["app"]
    assert app.tasks.run_on == "workers"
    assert {name: app.tasks.runs_on(name) for name in ("render", "approve", "preview")} == {
        "render": "workers",
        "approve": "workers",
        "preview": "here",
    }
    assert app.tasks.reruns == {"render": 2}
    assert app.tasks.engine.queueing.max_queued == 1000


async def test_the_last_status_heard_is_the_stored_one(dialect: str, store_url: str) -> None:
    """A task that runs on a worker: its statuses reach this server through the store and, on
    2025-11-25, go out as notifications like a local run's, so the last one a client hears is the
    task's own end, never a status it had before with an ended status put on it. (Polls are
    made rare here: what the client hears is what the server tells it.)"""
    app = build_app(store_url, poll_policy=PollPolicy(minimum_ms=5_000, maximum_ms=5_000))
    seen: list[Task] = []
    with anyio.fail_after(BOUND_S):
        async with kit_sessions.connect_in_memory(app, dialect=dialect) as session, worker(app, store_url):
            for _ in range(3):
                seen.clear()
                await call_tool(session, "render", {"frames": 1}, mode="task", on_status=seen.append)
                assert (seen[-1].status, seen[-1].status_message) == (TaskStatus.COMPLETED, "frame 1/1")


async def test_the_lifespan_example_of_the_docs_runs_on_a_worker_and_here(
    dialect: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/server.md, "Your lifespan in every run", as written (its store is a file in the
    current folder): one tool runs on a worker, the other here, both reading the lifespan."""
    monkeypatch.chdir(tmp_path)
    app = run_doc_block("docs/server.md", "lifespan-every-run")["app"]
    with anyio.fail_after(BOUND_S):
        async with (
            kit_sessions.connect_in_memory(app, dialect=dialect) as session,
            worker(app, "sqlite:///tasks.db"),
        ):
            on_worker = await call_tool(session, "report", {"day": "mon"}, mode="task")
            here = await call_tool(session, "audit", {"day": "tue"}, mode="task")
    assert on_worker.content[0].text == "mon: a pool opened once per process"
    assert here.content[0].text == "tue: a pool opened once per process"
