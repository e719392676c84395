"""The client's behaviour, written once against the public API, run against every server kind.

On mcp 1.x the server is the SDK's own experimental task server (2025-11-25); on mcp 2.x it is
the minimal SEP-2663 server (2026-07-28) and the same server on a handshake-era connection
(2025-11-25). Each test opens real ``ClientSession``s over in-memory JSON-RPC streams.
"""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import anyio
import pytest

from mcp_tasks_compat import (
    TaskCancelledError,
    TaskExpiredError,
    TaskFailedError,
    TaskNotFoundError,
    TaskTimeoutError,
)
from mcp_tasks_compat.client import call_tool, negotiate, resume, start_tool
from mcp_tasks_compat.core._model import Task, TaskStatus

from .harness import KINDS, Knobs, is_error, open_harness, text_of

pytestmark = pytest.mark.anyio

BOUND = 5.0  # no test step may take longer than this


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class Statuses:
    """An ``on_status`` callback that records (status, message) and lets a test wait for one."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None]] = []
        self.tasks: list[Task] = []
        self._events: dict[tuple[str, str | None], anyio.Event] = {}

    def __call__(self, task: Task) -> None:
        key = (task.status.value, task.status_message)
        self.seen.append(key)
        self.tasks.append(task)
        self._events.setdefault(key, anyio.Event()).set()

    async def wait_for(self, status: str, message: str | None = None) -> None:
        with anyio.fail_after(BOUND):
            await self._events.setdefault((status, message), anyio.Event()).wait()


async def test_negotiate_reports_the_dialect_and_tool_support(kind: str) -> None:
    async with open_harness(kind) as harness, harness.session() as session:
        negotiated = await negotiate(session)
        assert negotiated.dialect == harness.dialect
        assert negotiated.server_offers_tasks
        assert negotiated.reason is None
        if harness.dialect == "2025-11-25":
            assert negotiated.tool_task_support is not None
            assert negotiated.tool_task_support["gated"] == "optional"
            assert negotiated.tool_task_support["echo"] == "forbidden"
        else:
            assert negotiated.protocol_version == "2026-07-28"
            assert negotiated.tool_task_support is None
        assert await negotiate(session) is negotiated  # cached per session, no second handshake


async def test_auto_runs_a_tool_without_task_support_as_a_plain_call(kind: str) -> None:
    async with open_harness(kind) as harness, harness.session() as session:
        result = await call_tool(session, "echo", {"text": "hi"})
        assert text_of(result) == "hi"
        assert harness.script.created == []


async def test_auto_falls_back_to_plain_when_the_server_offers_no_tasks(kind: str) -> None:
    async with open_harness(kind, Knobs(tasks=False)) as harness, harness.session() as session:
        negotiated = await negotiate(session)
        assert negotiated.dialect is None
        assert negotiated.reason
        harness.script.release.set()
        with anyio.fail_after(BOUND):
            result = await call_tool(session, "gated", {"label": "plain"})
        assert text_of(result) == "done plain"
        assert harness.script.created == []


async def test_the_task_path_reports_each_distinct_status_in_order(kind: str) -> None:
    statuses = Statuses()
    results: list[Any] = []
    async with open_harness(kind) as harness, harness.session() as session:

        async def caller() -> None:
            results.append(await call_tool(session, "gated", {"label": "x"}, on_status=statuses))

        async with anyio.create_task_group() as group:
            group.start_soon(caller)
            await statuses.wait_for("working", "started")
            harness.script.release.set()
        assert text_of(results[0]) == "done x"
        assert not is_error(results[0])
        assert len(harness.script.created) == 1
        assert statuses.seen == [("working", None), ("working", "started"), ("completed", "started")]
        assert {task.task_id for task in statuses.tasks} == set(harness.script.created)


async def test_a_failed_task_raises_task_failed_error(kind: str) -> None:
    async with open_harness(kind) as harness, harness.session() as session:
        with anyio.fail_after(BOUND), pytest.raises(TaskFailedError) as caught:
            await call_tool(session, "failing", mode="task")
        assert caught.value.task_id == harness.script.created[0]
        assert "boom" in caught.value.error_message
        if harness.sdk_task_server:
            # The 1.x SDK keeps only the exception text (statusMessage): reported as an internal error.
            assert caught.value.error_code == -32603
        else:
            assert caught.value.error_code == -32050
            assert caught.value.error_data == {"why": "the test tool failed"}


async def test_a_tool_error_yields_its_is_error_result(kind: str) -> None:
    statuses = Statuses()
    async with open_harness(kind) as harness, harness.session() as session:
        with anyio.fail_after(BOUND):
            result = await call_tool(session, "tool_error", mode="task", on_status=statuses)
        assert is_error(result)
        assert text_of(result) == "bad input"
        assert len(harness.script.created) == 1
        # 2025-11-25 says failed (the 1.x SDK says completed); 2026-07-28 says completed.
        assert statuses.seen[-1][0] in ("failed", "completed")


async def test_cancelling_the_caller_sends_tasks_cancel_before_re_raising(kind: str) -> None:
    statuses = Statuses()
    async with open_harness(kind) as harness, harness.session() as session:
        async with anyio.create_task_group() as group:
            group.start_soon(lambda: call_tool(session, "hang", on_status=statuses))
            await statuses.wait_for("working", None)
            group.cancel_scope.cancel()
        assert harness.script.cancel_seen.is_set()
        assert harness.script.cancelled == harness.script.created
        run = await resume(session, harness.script.created[0])
        state = await run.status()
        assert state is not None
        assert state.status is TaskStatus.CANCELLED


async def test_asyncio_cancellation_also_sends_tasks_cancel(kind: str) -> None:
    statuses = Statuses()
    async with open_harness(kind) as harness, harness.session() as session:
        call = asyncio.get_running_loop().create_task(call_tool(session, "hang", on_status=statuses))
        await statuses.wait_for("working", None)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        assert harness.script.cancelled == harness.script.created


async def test_explicit_cancel_reports_the_final_state(kind: str) -> None:
    async with open_harness(kind) as harness, harness.session() as session:
        run = await start_tool(session, "hang")
        assert run.task_id == harness.script.created[0]
        assert run.dialect == harness.dialect
        with anyio.fail_after(BOUND):
            state = await run.cancel()
        assert state is not None
        assert state.status is TaskStatus.CANCELLED
        assert harness.script.cancelled == [run.task_id]
        with pytest.raises(TaskCancelledError):
            await run.result()
        assert run.done


async def test_leaving_async_with_cancels_only_an_unfinished_task(kind: str) -> None:
    async with open_harness(kind) as harness, harness.session() as session:
        async with await start_tool(session, "hang") as run:
            assert not run.done
        assert harness.script.cancelled == [run.task_id]
        harness.script.release.set()
        async with await start_tool(session, "gated", {"label": "kept"}) as finished:
            with anyio.fail_after(BOUND):
                assert text_of(await finished.result()) == "done kept"
        assert harness.script.cancelled == [run.task_id]


async def test_resume_from_a_second_session(kind: str) -> None:
    async with open_harness(kind) as harness, harness.session() as first:
        run = await start_tool(first, "gated", {"label": "r"})
        assert run.task_id is not None
        async with harness.session() as second:
            if harness.scopes_tasks_to_sessions:
                scoped = "keeps an unauthenticated task to the session that created it"
                with pytest.raises(TaskNotFoundError, match=scoped):
                    await resume(second, run.task_id)
                return
            other = await resume(second, run.task_id)
            assert other.task_id == run.task_id
            harness.script.release.set()
            with anyio.fail_after(BOUND):
                assert text_of(await other.result()) == "done r"


async def test_resume_of_an_unknown_id_raises_task_not_found(kind: str) -> None:
    async with open_harness(kind) as harness, harness.session() as session:
        with pytest.raises(TaskNotFoundError) as caught:
            await resume(session, "no-such-task")
        assert caught.value.task_id == "no-such-task"


async def test_a_task_past_its_ttl_is_reported_expired(kind: str) -> None:
    # 2025-11-25 takes the client's ttl; the Tasks extension's server picks it (knob).
    knobs = Knobs(ttl_ms=300 if kind == "2026" else None)
    async with open_harness(kind, knobs) as harness, harness.session() as session:
        started = anyio.current_time()
        with anyio.fail_after(BOUND), pytest.raises(TaskExpiredError) as caught:
            await call_tool(session, "hang", ttl=0.3)
        assert caught.value.task_id == harness.script.created[0]
        assert anyio.current_time() - started >= 0.25
        assert isinstance(caught.value, TaskNotFoundError)  # expired is a kind of not-found


async def test_the_overall_timeout_cancels_the_task(kind: str) -> None:
    async with open_harness(kind) as harness, harness.session() as session:
        with anyio.fail_after(BOUND), pytest.raises(TaskTimeoutError) as caught:
            await call_tool(session, "hang", timeout=0.3)
        assert caught.value.task_id == harness.script.created[0]
        assert harness.script.cancelled == harness.script.created


async def test_task_run_result_timeout_cancels_the_task(kind: str) -> None:
    async with open_harness(kind) as harness, harness.session() as session:
        run = await start_tool(session, "hang")
        with anyio.fail_after(BOUND), pytest.raises(TaskTimeoutError):
            await run.result(timeout=0.2)
        assert harness.script.cancelled == [run.task_id]


async def test_cancelling_a_wait_on_result_leaves_the_task_running(kind: str) -> None:
    async with open_harness(kind) as harness, harness.session() as session:
        run = await start_tool(session, "gated", {"label": "later"})
        with anyio.move_on_after(0.2):
            await run.result()
        assert harness.script.cancelled == []
        harness.script.release.set()
        with anyio.fail_after(BOUND):
            assert text_of(await run.result()) == "done later"


async def test_status_reads_fresh_state(kind: str) -> None:
    statuses = Statuses()
    async with open_harness(kind) as harness, harness.session() as session:
        run = await start_tool(session, "gated", {"label": "s"}, on_status=statuses)
        before = await run.status()
        assert before is not None
        assert before.status is TaskStatus.WORKING
        harness.script.release.set()
        with anyio.fail_after(BOUND):
            assert text_of(await run.result()) == "done s"
        after = await run.status()
        assert after is not None
        assert after.status is TaskStatus.COMPLETED
        assert after.task_id == before.task_id == run.task_id
        assert statuses.seen[0] == ("working", None)
        assert statuses.seen[-1][0] == "completed"


async def test_concurrent_calls_on_one_session(kind: str) -> None:
    async with open_harness(kind) as harness, harness.session() as session:
        harness.script.release.set()
        results: dict[str, str] = {}

        async def one(label: str) -> None:
            results[label] = text_of(await call_tool(session, "gated", {"label": label}))

        with anyio.fail_after(BOUND):
            async with anyio.create_task_group() as group:
                for label in ("a", "b", "c"):
                    group.start_soon(one, label)
        assert results == {"a": "done a", "b": "done b", "c": "done c"}
        assert len(harness.script.created) == 3


async def test_no_deprecation_warning_reaches_the_caller(kind: str) -> None:
    async with open_harness(kind) as harness, harness.session() as session:
        harness.script.release.set()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            await negotiate(session)
            assert text_of(await call_tool(session, "gated", {"label": "w"})) == "done w"
            run = await start_tool(session, "hang")
            await run.cancel()
        assert [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)] == []


async def test_a_session_opened_by_the_caller_is_not_negotiated_again(kind: str) -> None:
    async with open_harness(kind) as harness, harness.session() as session:
        if harness.dialect == "2026-07-28":
            await session.discover()
        else:
            await session.initialize()
        negotiated = await negotiate(session)
        assert negotiated.dialect == harness.dialect
        if harness.sdk_task_server:
            assert negotiated.protocol_version is None  # mcp 1.x keeps no record of it
        else:
            assert negotiated.protocol_version == harness.dialect
        harness.script.release.set()
        assert text_of(await call_tool(session, "gated", {"label": "own"}, mode="task")) == "done own"
