"""The 2025-11-25 task service, once for both majors: no SDK, a fake caller, the engine in memory.

What the peer sees on either major is decided here (``_server/service_2025.py``); the per-major
server tests keep routing and wire shape only. No sleeps: time moves with the engine's clock.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
import anyio.abc
import pytest

from mcp_tasks_compat._engine import TaskEngine, TaskPolicy, ToolCallFailure, current_run
from mcp_tasks_compat._server import (
    NO_SESSION,
    REQUIRED_TOOL_CALLED_PLAINLY,
    TOOL_FORBIDS_TASKS,
    Tasks2025Service,
    owner_2025,
    principal_id,
)
from mcp_tasks_compat.core._codec_2025 import RELATED_TASK_KEY, SERVER_TASKS_CAPABILITY
from mcp_tasks_compat.core._model import JsonRpcError
from mcp_tasks_compat.dialects import DIALECT_2025_11_25, DIALECT_2026_07_28
from mcp_tasks_compat.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PeerProtocolError,
)

from .fake_caller import FakeCaller

pytestmark = pytest.mark.anyio

BOUND_S = 5
ALICE = principal_id("client-a", "https://issuer", "alice")
TOOLS = {"echo": "optional", "build": "required", "quick": "forbidden"}
OK = {"content": [{"type": "text", "text": "done"}], "isError": False}


class Clock:
    """The engine's wall clock, moved by the test."""

    def __init__(self) -> None:
        self.offset_s = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset_s


def service(clock: Callable[[], float] | None = None, **policy: Any) -> Tasks2025Service:
    tasks = TaskPolicy(tools=dict(TOOLS), **policy)
    if clock is not None:  # the same engine, on a clock the test moves
        tasks.engine = TaskEngine(clock=clock, limits=tasks.engine.limits)
    return Tasks2025Service(tasks)


async def start(
    svc: Tasks2025Service,
    caller: FakeCaller,
    group: anyio.abc.TaskGroup,
    work: Callable[[], Awaitable[Mapping[str, Any]]],
    params: Mapping[str, Any] | None = None,
) -> str:
    """A task-augmented ``tools/call`` as an adapter routes it: the service from plan to answer."""
    caller.group = group

    async def plain() -> dict[str, Any]:
        raise AssertionError("a task-augmented call was run plainly")

    answer = await svc.call_tool(
        params or {"name": "echo", "arguments": {}, "task": {}},
        caller,
        work=work,
        plain=plain,
        answer=lambda wire: wire,
    )
    return answer["task"]["taskId"]


def blocked(release: anyio.Event) -> Callable[[], Awaitable[Mapping[str, Any]]]:
    async def work() -> Mapping[str, Any]:
        await release.wait()
        return OK

    return work


def refused(call: Callable[[], object]) -> PeerProtocolError:
    with pytest.raises(PeerProtocolError) as caught:
        call()
    return caught.value


async def refused_async(call: Callable[[], Awaitable[object]]) -> PeerProtocolError:
    with pytest.raises(PeerProtocolError) as caught:
        await call()
    return caught.value


# --- tools/call: refuse, plain, or task -------------------------------------------------------------


@pytest.mark.parametrize(
    "params",
    [
        None,
        [],
        {"arguments": {}},
        {"name": 5},
        {"name": "echo", "arguments": "not an object"},
        {"name": "echo", "arguments": [1]},
        {"name": "echo", "_meta": "x"},
        {"name": "echo", "task": "soon"},
        {"name": "echo", "task": {"ttl": "long"}},
        {"name": "echo", "task": {"ttl": True}},
    ],
)
def test_malformed_call_params_are_refused_as_the_sdk_refuses_them(params: object) -> None:
    error = refused(lambda: service().plan_call(params, FakeCaller()))
    assert (error.jsonrpc_code, error.message, error.data) == (
        INVALID_PARAMS,
        "Invalid request parameters",
        "",
    )


def test_task_support_is_enforced_with_one_text_per_refusal() -> None:
    svc = service()
    plain = refused(lambda: svc.plan_call({"name": "build", "arguments": {}}, FakeCaller()))
    assert plain.jsonrpc_code == METHOD_NOT_FOUND
    assert plain.message == REQUIRED_TOOL_CALLED_PLAINLY.format(name="build")
    assert (
        plain.message
        == "Tool 'build' requires task-augmented invocation (execution.taskSupport is 'required')"
    )
    forbidden = refused(lambda: svc.plan_call({"name": "quick", "task": {}}, FakeCaller()))
    assert (forbidden.jsonrpc_code, forbidden.message) == (
        METHOD_NOT_FOUND,
        TOOL_FORBIDS_TASKS.format(name="quick"),
    )
    assert svc.plan_call({"name": "echo", "arguments": {}}, FakeCaller()) is None
    assert svc.plan_call({"name": "quick"}, FakeCaller()) is None


def test_a_hostile_tool_name_is_echoed_only_as_a_prefix() -> None:
    name = "x" * 10_000
    error = refused(lambda: service(default_support="required").plan_call({"name": name}, FakeCaller()))
    assert len(error.message) < 300


def test_a_task_needs_a_session_and_a_non_negative_ttl() -> None:
    svc = service()
    stateless = refused(lambda: svc.plan_call({"name": "echo", "task": {}}, FakeCaller(session_key=None)))
    assert (stateless.jsonrpc_code, stateless.message) == (INVALID_REQUEST, NO_SESSION)
    negative = refused(lambda: svc.plan_call({"name": "echo", "task": {"ttl": -1}}, FakeCaller()))
    assert negative.jsonrpc_code == INVALID_PARAMS
    assert negative.message == "params.task.ttl must be >= 0 milliseconds or null, not -1"


def test_the_ttl_is_the_servers_default_unless_asked_for() -> None:
    svc = service(max_ttl_ms=None)
    engine = svc.engine

    def ttl(task: Mapping[str, Any]) -> int | None:
        plan = svc.plan_call({"name": "echo", "task": task}, FakeCaller())
        assert plan is not None
        return plan.ttl_ms

    assert ttl({}) == engine.default_ttl_ms  # nothing asked: the server decides
    assert ttl({"ttl": None}) is None  # unlimited asked, no cap configured
    assert ttl({"ttl": 5}) == engine.ttl_floor_ms  # floored
    assert ttl({"ttl": engine.ttl_floor_ms * 2}) == engine.ttl_floor_ms * 2


# --- whom a task belongs to --------------------------------------------------------------------------


def test_the_owner_is_the_principal_when_there_is_one_else_the_session() -> None:
    assert owner_2025(FakeCaller(principal=ALICE, session_key="a")) == ALICE
    assert owner_2025(FakeCaller(principal=None, session_key="a")) == "session:a"
    assert owner_2025(FakeCaller(principal=None, session_key=None)) is None
    assert principal_id("c", None, "s") == 'auth:["c", null, "s"]'


async def test_an_authenticated_user_reads_its_task_from_another_session_and_nobody_else_does() -> None:
    svc = service()
    release = anyio.Event()
    async with anyio.create_task_group() as group:
        task_id = await start(svc, FakeCaller(principal=ALICE, session_key="a"), group, blocked(release))
        again = FakeCaller(principal=ALICE, session_key="b")  # a new session (after a restart, say)
        assert (await svc.get({"taskId": task_id}, again))["taskId"] == task_id
        assert [task["taskId"] for task in (await svc.list({}, again))["tasks"]] == [task_id]
        for stranger in (
            FakeCaller(principal=principal_id("client-a", "https://issuer", "bob"), session_key="a"),
            FakeCaller(principal=None, session_key="a"),
        ):
            error = await refused_async(lambda: svc.get({"taskId": task_id}, stranger))  # noqa: B023
            assert (error.jsonrpc_code, error.message) == (INVALID_PARAMS, f"Task not found: {task_id[:64]}")
            assert (await svc.list({}, stranger))["tasks"] == []
        release.set()


async def test_opted_in_an_unauthenticated_task_is_read_by_whoever_knows_its_id() -> None:
    svc = service(unauthenticated_2025_scope="task_id")
    release = anyio.Event()
    async with anyio.create_task_group() as group:
        task_id = await start(svc, FakeCaller(session_key="a"), group, blocked(release))
        other = FakeCaller(session_key="b")  # a new session: after a reconnect, or a restart
        assert (await svc.get({"taskId": task_id}, other))["taskId"] == task_id
        assert (await svc.list({}, other))["tasks"] == []  # listing stays the session's
        authenticated = FakeCaller(principal=ALICE, session_key="b")
        error = await refused_async(lambda: svc.get({"taskId": task_id}, authenticated))
        assert error.jsonrpc_code == INVALID_PARAMS  # a principal reads its own tasks only
        release.set()
        assert (await svc.result({"taskId": task_id}, other))["content"] == OK["content"]
    mine = service(unauthenticated_2025_scope="task_id")
    async with anyio.create_task_group() as group:
        alices = await start(
            mine, FakeCaller(principal=ALICE, session_key="a"), group, blocked(anyio.Event())
        )
        error = await refused_async(lambda: mine.get({"taskId": alices}, FakeCaller(session_key="b")))
        assert error.jsonrpc_code == INVALID_PARAMS  # a principal's task is never shared by id
        group.cancel_scope.cancel()


def test_the_scope_opt_in_is_checked() -> None:
    with pytest.raises(ValueError, match="unauthenticated_2025_scope must be one of"):
        service(unauthenticated_2025_scope="everyone")


async def test_without_authentication_a_task_is_its_sessions_only() -> None:
    svc = service()
    release = anyio.Event()
    async with anyio.create_task_group() as group:
        task_id = await start(svc, FakeCaller(session_key="a"), group, blocked(release))
        assert (await svc.get({"taskId": task_id}, FakeCaller(session_key="a")))["status"] == "working"
        error = await refused_async(lambda: svc.get({"taskId": task_id}, FakeCaller(session_key="b")))
        assert error.jsonrpc_code == INVALID_PARAMS
        release.set()


async def test_a_2026_task_is_not_found_through_the_2025_methods() -> None:
    svc = service()
    record = await svc.engine.create(dialect=DIALECT_2026_07_28, owner=ALICE, tool_name="echo", ttl_ms=None)
    error = await refused_async(lambda: svc.get({"taskId": record.task.task_id}, FakeCaller(principal=ALICE)))
    assert error.jsonrpc_code == INVALID_PARAMS


async def test_every_task_method_needs_a_session() -> None:
    svc = service()
    for method in ("tasks/get", "tasks/result", "tasks/list", "tasks/cancel"):
        error = await refused_async(lambda: svc.serve(method, {"taskId": "t"}, FakeCaller(session_key=None)))  # noqa: B023
        assert (error.jsonrpc_code, error.message) == (INVALID_REQUEST, NO_SESSION)


# --- tasks/get: the poll hint is computed when the task is read ------------------------------------------


async def test_a_quiet_tasks_poll_hint_grows_with_its_age_when_read() -> None:
    clock = Clock()
    svc = service(clock)
    policy = svc.engine.poll_policy
    release = anyio.Event()
    async with anyio.create_task_group() as group:
        task_id = await start(svc, FakeCaller(), group, blocked(release))
        young = await svc.get({"taskId": task_id}, FakeCaller())
        assert young["pollInterval"] == policy.minimum_ms
        clock.offset_s = 1.5
        older = await svc.get({"taskId": task_id}, FakeCaller())
        assert older["pollInterval"] == policy.hint_ms(1_500) > policy.minimum_ms
        (listed,) = (await svc.list({}, FakeCaller()))["tasks"]
        assert listed["pollInterval"] == older["pollInterval"]
        release.set()


# --- tasks/list, tasks/cancel ---------------------------------------------------------------------------


async def test_list_pages_with_the_servers_cursor_and_refuses_a_foreign_one() -> None:
    svc = service()
    caller = FakeCaller()
    ids = []
    for _ in range(105):
        record = await svc.engine.create(
            dialect=DIALECT_2025_11_25, owner="session:one", tool_name="echo", ttl_ms=None
        )
        ids.append(record.task.task_id)
    first = await svc.list({}, caller)
    assert len(first["tasks"]) == 100
    assert isinstance(first["nextCursor"], str)
    second = await svc.list({"cursor": first["nextCursor"]}, caller)
    assert "nextCursor" not in second
    assert sorted(task["taskId"] for task in first["tasks"] + second["tasks"]) == sorted(ids)
    for cursor in ("not-issued", 7):
        error = await refused_async(lambda: svc.list({"cursor": cursor}, caller))  # noqa: B023
        assert error.jsonrpc_code == INVALID_PARAMS


async def test_cancel_ends_a_running_task_and_refuses_a_terminal_one() -> None:
    svc = service()
    caller = FakeCaller()
    async with anyio.create_task_group() as group:
        task_id = await start(svc, caller, group, blocked(anyio.Event()))
        cancelled = await svc.cancel({"taskId": task_id}, caller)
        assert (cancelled["status"], cancelled["statusMessage"]) == ("cancelled", "cancelled by the client")
    error = await refused_async(lambda: svc.cancel({"taskId": task_id}, caller))
    assert error.jsonrpc_code == INVALID_PARAMS
    unknown = await refused_async(lambda: svc.cancel({"taskId": "nope"}, caller))
    assert (unknown.jsonrpc_code, unknown.message) == (INVALID_PARAMS, "Task not found: nope")


# --- tasks/result -----------------------------------------------------------------------------------------


async def test_result_waits_for_the_end_and_answers_the_tools_result_with_the_related_task() -> None:
    svc = service()
    caller = FakeCaller()
    release = anyio.Event()
    async with anyio.create_task_group() as group:
        task_id = await start(svc, caller, group, blocked(release))
        answered: list[Mapping[str, Any]] = []

        async def wait_result() -> None:
            answered.append(await svc.result({"taskId": task_id}, caller))

        group.start_soon(wait_result)
        await anyio.wait_all_tasks_blocked()
        assert answered == []
        release.set()
    (payload,) = answered
    assert payload["content"] == OK["content"]
    assert payload["_meta"] == {RELATED_TASK_KEY: {"taskId": task_id}}


async def test_result_relays_input_requests_tagged_with_the_task() -> None:
    svc = service()
    caller = FakeCaller(answers=[{"action": "accept", "content": {"name": "Ada"}}])
    elicit = {"method": "elicitation/create", "params": {"message": "Name?", "requestedSchema": {}}}

    async def asks() -> Mapping[str, Any]:
        run = current_run()
        assert run is not None
        engine, record = run
        answer = await engine.inputs.request(record, elicit)
        return {"content": [{"type": "text", "text": answer["content"]["name"]}], "isError": False}

    async with anyio.create_task_group() as group:
        task_id = await start(svc, caller, group, asks)
        with anyio.fail_after(BOUND_S):
            payload = await svc.result({"taskId": task_id}, caller)
    assert payload["content"] == [{"type": "text", "text": "Ada"}]
    (relayed,) = caller.relayed
    assert relayed["method"] == "elicitation/create"
    assert relayed["params"]["_meta"] == {RELATED_TASK_KEY: {"taskId": task_id}}


async def test_a_task_failed_with_a_jsonrpc_error_answers_result_with_that_error() -> None:
    svc = service()
    caller = FakeCaller()

    async def fails() -> Mapping[str, Any]:
        raise ToolCallFailure(JsonRpcError(INTERNAL_ERROR, "the build broke", {"step": 3}))

    async with anyio.create_task_group() as group:
        task_id = await start(svc, caller, group, fails)
    error = await refused_async(lambda: svc.result({"taskId": task_id}, caller))
    assert (error.jsonrpc_code, error.message, error.data) == (INTERNAL_ERROR, "the build broke", {"step": 3})


async def test_an_is_error_result_fails_the_task_and_is_kept_for_tasks_result() -> None:
    """The service gives its engine 2025-11-25's result rule (the engine judges no result)."""
    svc = service()
    caller = FakeCaller()
    tool_error = {"content": [{"type": "text", "text": "no such file"}], "isError": True}

    async def errs() -> Mapping[str, Any]:
        return tool_error

    async with anyio.create_task_group() as group:
        task_id = await start(svc, caller, group, errs)
    assert (await svc.get({"taskId": task_id}, caller))["status"] == "failed"
    answer = await svc.result({"taskId": task_id}, caller)
    assert answer["isError"] is True


async def test_the_task_id_param_names_the_task_whatever_related_task_meta_says() -> None:
    svc = service()
    caller = FakeCaller()
    release = anyio.Event()
    async with anyio.create_task_group() as group:
        first = await start(svc, caller, group, blocked(release))
        second = await start(svc, caller, group, blocked(release))
        misleading = {"_meta": {RELATED_TASK_KEY: {"taskId": second}}}
        got = await svc.get({"taskId": first, **misleading}, caller)
        cancelled = await svc.cancel({"taskId": first, **misleading}, caller)
        release.set()
        payload = await svc.result({"taskId": second, "_meta": {RELATED_TASK_KEY: {"taskId": first}}}, caller)
        still = await svc.get({"taskId": second}, caller)
    assert got["taskId"] == first
    assert (cancelled["taskId"], cancelled["status"]) == (first, "cancelled")
    assert still["status"] == "completed"  # the cancel reached the task its params named, not the meta's
    assert payload["content"] == OK["content"]
    assert payload["_meta"] == {RELATED_TASK_KEY: {"taskId": second}}


# --- what the handshake and tools/list say ---------------------------------------------------------------


def test_the_capability_is_offered_only_when_a_tool_may_run_as_a_task() -> None:
    assert service().capability() == dict(SERVER_TASKS_CAPABILITY)
    nothing = Tasks2025Service(TaskPolicy(tools={"quick": "forbidden"}))
    assert nothing.capability() is None


def test_tool_execution_merges_the_support_over_what_the_tool_declared() -> None:
    svc = service()
    assert svc.tool_execution("echo") == {"taskSupport": "optional"}
    assert svc.tool_execution("build", {"other": 1}) == {"other": 1, "taskSupport": "required"}
    assert svc.tool_execution("quick") is None  # absent means forbidden: nothing added
    assert svc.tool_execution("quick", {"taskSupport": "optional"}) == {"taskSupport": "forbidden"}


async def test_status_notifications_carry_the_task_as_read() -> None:
    svc = service()
    sent: list[Mapping[str, Any]] = []

    async def send(wire: Mapping[str, Any]) -> None:
        sent.append(wire)

    async with anyio.create_task_group() as group:
        task_id = await start(svc, FakeCaller(), group, blocked(anyio.Event()))
        record = await svc.engine.lookup(task_id, "session:one")
        record.listeners.append(svc.status_listener(send))
        await svc.cancel({"taskId": task_id}, FakeCaller())
    (notification,) = sent
    assert notification["method"] == "notifications/tasks/status"
    assert (notification["params"]["taskId"], notification["params"]["status"]) == (task_id, "cancelled")


async def test_call_tool_sends_each_status_on_the_callers_session_and_runs_in_its_launch() -> None:
    svc = service()
    caller = FakeCaller()
    release = anyio.Event()
    async with anyio.create_task_group() as group:
        task_id = await start(svc, caller, group, blocked(release))
        assert caller.launched == ["echo"]
        release.set()
    assert [(n["method"], n["params"]["taskId"], n["params"]["status"]) for n in caller.notified] == [
        ("notifications/tasks/status", task_id, "completed")
    ]


async def test_call_tool_without_params_task_is_the_adapters_plain_call() -> None:
    svc = service()
    caller = FakeCaller()

    async def work() -> Mapping[str, Any]:
        raise AssertionError("a plain call has no task work")

    async def plain() -> str:
        return "plain answer"

    answer = await svc.call_tool(
        {"name": "echo", "arguments": {}}, caller, work=work, plain=plain, answer=lambda wire: "task"
    )
    assert (answer, caller.launched) == ("plain answer", [])
    with pytest.raises(PeerProtocolError):  # a required tool called plainly: refused before anything runs
        await svc.call_tool({"name": "build", "arguments": {}}, caller, work=work, plain=plain, answer=str)
