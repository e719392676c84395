"""mcp 2.x only: per-connection dialects, the extension seams, poll hints, deviating servers, HTTP."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcp_tasks_compat import TaskNotFoundError
from mcp_tasks_compat._client.outcomes import SESSION_SCOPED_2025
from mcp_tasks_compat._client_api import session_kwargs
from mcp_tasks_compat.client import call_tool, negotiate, resume, start_tool
from mcp_tasks_compat.core._model import TaskStatus

from .harness import Knobs, Script, gaps, open_harness, text_of

pytestmark = [pytest.mark.anyio, pytest.mark.mcp2]

BOUND = 5.0
TASKS = "io.modelcontextprotocol/tasks"


@pytest.fixture(params=["2026", "2025"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def heard(_task: Any) -> None:
    """An ``on_status`` listener: with one, a 2025-11-25 poll keeps the hint's pace."""


async def test_a_zero_poll_hint_is_floored_by_the_tasks_age(kind: str) -> None:
    # A tenth of the task's age (at least 5 ms, at most 100 ms) between two tasks/get: 30 gets
    # of a task hinting 0 take about a third of a second, never a busy loop.
    async with open_harness(kind, Knobs(poll_hints=(0,))) as harness, harness.session() as session:
        harness.script.gets_needed = 30
        with anyio.fail_after(BOUND):
            assert text_of(await call_tool(session, "count_gets", on_status=heard)) == "counted"
        times = harness.script.get_times
        assert len(times) >= 30
        for at, pause in zip(times, gaps(times[:30]), strict=False):
            assert pause >= 0.9 * min(0.1, max(0.005, 0.1 * (at - times[0])))
        assert times[29] - times[0] >= 0.2


async def test_the_poll_hint_is_re_read_on_every_answer(kind: str) -> None:
    # Answer 0 (creation) says 100 ms, answer 1 (first tasks/get) 400 ms, later ones 100 ms.
    async with open_harness(kind, Knobs(poll_hints=(100, 400, 100))) as harness, harness.session() as session:
        with anyio.fail_after(BOUND):
            assert text_of(await call_tool(session, "count_gets", on_status=heard)) == "counted"
        first, second = gaps(harness.script.get_times[:3])
        assert first >= 0.38
        assert second < 0.3


async def test_beside_a_pending_2025_result_an_unheard_poll_only_watches_once_a_second() -> None:
    # No on_status: the result comes through tasks/result, so the poll beside it slows to 1 s
    # whatever the hint says (here 0); statuses nobody hears are not worth a request each.
    async with open_harness("2025", Knobs(poll_hints=(0,))) as harness, harness.session() as session:
        harness.script.gets_needed = 2
        started = anyio.current_time()
        with anyio.fail_after(BOUND):
            assert text_of(await call_tool(session, "count_gets")) == "counted"
        times = harness.script.get_times
        assert len(times) >= 2
        assert times[0] - started >= 0.9  # the first watch poll, a second in
        assert all(pause >= 0.9 for pause in gaps(times[:2]))


async def test_a_slow_cancel_is_polled_with_the_tasks_age_floor() -> None:
    # tasks/cancel is only acknowledged here, and the task ends at the fifth tasks/get after it
    # (hinting 0 throughout). TaskRun.cancel polls in the shared loop: a tenth of the young task's
    # age between two reads (at least 5 ms), never a busy loop, and not the mature 100 ms floor.
    knobs = Knobs(poll_hints=(0,), cancel_after_gets=5)
    async with open_harness("2026", knobs) as harness, harness.session() as session:
        with anyio.fail_after(BOUND):
            run = await start_tool(session, "hang")
            asked = anyio.current_time()
            final = await run.cancel()
            took = anyio.current_time() - asked
    assert final is not None
    assert final.status is TaskStatus.CANCELLED
    assert run.done
    times = harness.script.get_times
    assert len(times) == 5
    for at, pause in zip(times, gaps(times), strict=False):
        assert pause >= 0.9 * min(0.1, max(0.005, 0.1 * (at - asked)))
    assert took < 0.3  # four pauses of the mature 100 ms floor alone take 0.4 s


async def test_a_cancel_that_never_ends_returns_the_newest_state_after_its_wait() -> None:
    # The loop's deadline is checked between reads: polled meanwhile, then the working state back.
    knobs = Knobs(poll_hints=(0,), cancel_after_gets=10**6)
    async with open_harness("2026", knobs) as harness, harness.session() as session:
        with anyio.fail_after(BOUND):
            run = await start_tool(session, "hang")
            asked = anyio.current_time()
            final = await run.cancel(wait=0.3)
            took = anyio.current_time() - asked
    assert final is not None
    assert final.status is TaskStatus.WORKING
    assert not run.done
    assert 0.3 <= took < 1.0
    assert len(harness.script.get_times) >= 5


async def test_a_missing_poll_hint_polls_once_a_second() -> None:
    async with open_harness("2026", Knobs(poll_hints=(None,))) as harness, harness.session() as session:
        harness.script.release.set()
        started = anyio.current_time()
        with anyio.fail_after(BOUND):
            assert text_of(await call_tool(session, "gated", {"label": "d"})) == "done d"
        assert 0.9 <= anyio.current_time() - started < 2.0


async def test_plain_mode_on_2026_declines_the_task_for_that_call_only() -> None:
    # The session declares the extension; the plain call's per-request capabilities leave it out.
    seen: list[str] = []
    async with open_harness("2026") as harness, harness.session() as session:
        harness.script.release.set()
        with anyio.fail_after(BOUND):
            result = await call_tool(
                session,
                "gated",
                {"label": "plain"},
                mode="plain",
                on_status=lambda t: seen.append(t.status.value),
            )
            assert text_of(result) == "done plain"
            assert harness.script.created == []
            assert seen == []
            # The session still runs the next call as a task.
            assert text_of(await call_tool(session, "gated", {"label": "auto"})) == "done auto"
        assert len(harness.script.created) == 1


async def test_a_huge_poll_hint_does_not_delay_a_2025_result() -> None:
    # The tasks/result wait delivers the result; the 30 s (clamped) poll interval is never waited out.
    async with open_harness("2025", Knobs(poll_hints=(10**12,))) as harness, harness.session() as session:
        harness.script.release.set()
        with anyio.fail_after(2.0):
            assert text_of(await call_tool(session, "gated", {"label": "quick"})) == "done quick"


@pytest.mark.parametrize("refusal_code", [-32600, -32602])
async def test_a_tasks_result_that_refuses_a_working_task_falls_back_to_polling(refusal_code: int) -> None:
    seen: list[tuple[str, str | None]] = []
    started = anyio.Event()

    def on_status(task: Any) -> None:
        seen.append((task.status.value, task.status_message))
        if task.status_message == "started":
            started.set()

    knobs = Knobs(result_refuses_working=True, result_refusal_code=refusal_code)
    async with open_harness("2025", knobs) as harness:
        async with harness.session() as session, anyio.create_task_group() as group:
            results: list[Any] = []

            async def caller() -> None:
                results.append(await call_tool(session, "gated", {"label": "lib"}, on_status=on_status))

            group.start_soon(caller)
            with anyio.fail_after(BOUND):
                await started.wait()
            harness.script.release.set()
        assert text_of(results[0]) == "done lib"
        assert seen == [("working", None), ("working", "started"), ("completed", "started")]


async def test_a_scoped_2025_server_refuses_resume_from_another_session() -> None:
    async with open_harness("2025", Knobs(scoped=True)) as harness, harness.session() as first:
        run = await start_tool(first, "gated", {"label": "s"})
        task_id = run.task_id
        async with harness.session() as second:
            with pytest.raises(TaskNotFoundError) as caught:
                await resume(second, str(task_id))
        assert caught.value.message == (
            f"task {task_id} is unknown to the server (tasks/get: Task not found: {task_id})"
            + SESSION_SCOPED_2025
        )
        assert "unauthenticated_2025_scope='task_id'" in caught.value.message
        harness.script.release.set()
        with anyio.fail_after(BOUND):
            assert text_of(await run.result()) == "done s"  # the creating session still can


async def test_negotiate_falls_back_to_initialize_when_discover_gets_no_answer() -> None:
    async with open_harness("2025", Knobs(discover="silent")) as harness, harness.session() as session:
        started = anyio.current_time()
        with anyio.fail_after(BOUND):
            negotiated = await negotiate(session, discover_timeout=0.3)
        assert anyio.current_time() - started >= 0.29
        assert negotiated.protocol_version == "2025-11-25"
        assert negotiated.dialect == "2025-11-25"
        harness.script.release.set()
        assert text_of(await call_tool(session, "gated", {"label": "late"})) == "done late"


async def test_a_probe_that_reached_the_server_late_still_ends_on_2026() -> None:
    # The client gives up on server/discover and sends initialize; the server read the probe first,
    # so it settled on 2026-07-28 and refuses initialize (-32022): the client asks discover again.
    async with open_harness("2026", Knobs(discover="late")) as harness, harness.session() as session:
        with anyio.fail_after(BOUND):
            negotiated = await negotiate(session, discover_timeout=0.2)
        assert negotiated.protocol_version == "2026-07-28"
        assert negotiated.dialect == "2026-07-28"
        harness.script.release.set()
        assert text_of(await call_tool(session, "gated", {"label": "late"})) == "done late"
        assert len(harness.script.created) == 1


async def test_negotiate_logs_why_tasks_are_inactive(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO", logger="mcp_tasks_compat.client")
    async with open_harness("2025", Knobs(tasks=False)) as harness, harness.session() as session:
        negotiated = await negotiate(session)
    assert negotiated.dialect is None
    assert negotiated.reason is not None
    assert negotiated.reason.startswith("server/discover was refused (-32601: Method not found)")
    assert f"tasks are inactive on this connection: {negotiated.reason}" in caplog.messages


async def test_the_dialect_opt_in_keeps_tasks_to_one_dialect() -> None:
    only_2026 = session_kwargs(dialect="2026-07-28")
    only_2025 = session_kwargs(dialect="2025-11-25")
    assert TASKS in only_2026["extensions"]
    assert "extensions" not in only_2025
    async with open_harness("2025") as harness, harness.session(kwargs=only_2026) as session:
        negotiated = await negotiate(session)
        assert negotiated.dialect is None
        assert negotiated.server_offers_tasks
        assert negotiated.reason is not None
        assert negotiated.reason.endswith(
            "session_kwargs(dialect='2026-07-28') keeps tasks to the Tasks extension"
        )
        harness.script.release.set()
        assert text_of(await call_tool(session, "gated", {"label": "p"})) == "done p"
        assert harness.script.created == []
    # A server that speaks both eras: the pinned 2025-11-25 dialect opens with initialize.
    async with open_harness("2026") as harness, harness.session(kwargs=only_2025) as session:
        negotiated = await negotiate(session)
        assert negotiated.dialect == "2025-11-25"
        assert negotiated.protocol_version == "2025-11-25"
        harness.script.release.set()
        with anyio.fail_after(BOUND):
            assert text_of(await call_tool(session, "gated", {"label": "t"}, mode="task")) == "done t"
        assert len(harness.script.created) == 1
    # A session the caller opened with discover stays 2026-07-28: tasks are inactive, saying why.
    async with open_harness("2026") as harness, harness.session(kwargs=only_2025) as session:
        await session.discover()
        negotiated = await negotiate(session)
        assert negotiated.dialect is None
        assert negotiated.reason == (
            "session_kwargs(dialect='2025-11-25') keeps tasks to handshake-era connections "
            "(negotiate() opens such a session with initialize; this one was opened already)"
        )
        harness.script.release.set()
        assert text_of(await call_tool(session, "gated", {"label": "p"})) == "done p"
        assert harness.script.created == []  # the extension was never declared, so no task


async def test_session_kwargs_composes_the_callers_own_extension_seams() -> None:
    from typing import Literal

    import mcp_types
    from mcp.client.extension import NotificationBinding, ResultClaim

    class JobHandle(mcp_types.Result):
        result_type: Literal["job"] = "job"

    async def resolve(handle: JobHandle, context: object) -> mcp_types.CallToolResult:
        raise AssertionError("never called")

    async def on_thing(params: Any) -> None:
        return None

    claim = ResultClaim(result_type="job", model=JobHandle, resolve=resolve)
    binding = NotificationBinding(
        method="notifications/thing", params_type=mcp_types.NotificationParams, handler=on_thing
    )
    kwargs = session_kwargs(
        extensions={"io.example/jobs": {"v": 1}},
        result_claims={"io.example/jobs": [claim]},
        notification_bindings=[binding],
    )
    assert kwargs["extensions"] == {"io.example/jobs": {"v": 1}, TASKS: {}}
    assert kwargs["result_claims"]["io.example/jobs"] == [claim]
    (ours,) = kwargs["result_claims"][TASKS]
    assert ours.result_type == "task"
    assert ours.protocol_versions == frozenset({"2026-07-28"})
    assert binding in kwargs["notification_bindings"]
    async with open_harness("2026") as harness, harness.session(kwargs=kwargs) as session:
        harness.script.release.set()
        assert text_of(await call_tool(session, "gated", {"label": "c"})) == "done c"
        assert len(harness.script.created) == 1


async def test_call_tool_allow_claimed_returns_the_claim_model() -> None:
    from mcp_tasks_compat._adapters.v2.client import TaskHandle

    async with open_harness("2026") as harness, harness.session() as session:
        await negotiate(session)
        handle = await session.call_tool("hang", {}, allow_claimed=True)
        assert isinstance(handle, TaskHandle)
        assert handle.model_extra is not None
        assert handle.model_extra["taskId"] == harness.script.created[0]
        run = await resume(session, harness.script.created[0])
        assert (await run.cancel()) is not None


async def test_the_claims_resolve_hook_follows_the_task() -> None:
    """``ResultClaim.resolve`` works on its own (``mcp.Client`` calls it for claimed results)."""
    from mcp.client.extension import ClaimContext

    async with open_harness("2026") as harness, harness.session() as session:
        await negotiate(session)
        harness.script.release.set()
        handle = await session.call_tool("gated", {"label": "h"}, allow_claimed=True)
        claim = session_claim(session)
        result = await claim.resolve(
            handle, ClaimContext(session=session, tool_name="gated", read_timeout_seconds=None)
        )
        assert text_of(result) == "done h"


def session_claim(session: Any) -> Any:
    return session._active_claims["task"]  # the SDK's own record of the claims it routes on


async def test_mcp_name_header_carries_the_task_id_over_streamable_http() -> None:
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    from .scripted_servers import DualDialectServer, http_server

    script = Script()
    async with anyio.create_task_group() as group:
        test_server = DualDialectServer(script, Knobs(), group)
        async with http_server(test_server) as url, streamable_http_client(url) as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write, **session_kwargs()) as session:
                negotiated = await negotiate(session)
                assert negotiated.dialect == "2026-07-28"
                run = await start_tool(session, "hang")
                await run.status()
                state = await run.cancel()
                assert state is not None
                assert state.status.value == "cancelled"
                script.release.set()
                assert text_of(await call_tool(session, "gated", {"label": "web"})) == "done web"
        group.cancel_scope.cancel()
    by_method: dict[str, list[dict[str, str]]] = {}
    for method, headers in script.http_requests:
        by_method.setdefault(method, []).append(headers)
    assert by_method["tasks/get"]
    assert by_method["tasks/cancel"]
    for method in ("tasks/get", "tasks/cancel"):
        for headers in by_method[method]:
            assert headers["mcp-method"] == method
            assert headers["mcp-name"] == headers["x-body-task-id"]
            assert headers["mcp-name"] in script.created
    assert by_method["tasks/cancel"][0]["mcp-name"] == run.task_id
