"""The 2026-07-28 task service (the Tasks extension), SDK-free: the decision of ``tools/call`` and
``tasks/get|update|cancel``. The mcp 2.x server tests keep routing, headers and wire shape."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio
import pytest

from mcp_tasks_compat._engine import EVERY_OWNER, TaskPolicy, current_run
from mcp_tasks_compat._engine.grace import QUICK_STREAK
from mcp_tasks_compat._server import InvalidAnswer, Tasks2026Service, ToolCall2026, principal_id
from mcp_tasks_compat.core._codec_2026 import EXTENSION_ID
from mcp_tasks_compat.dialects import DIALECT_2025_11_25, DIALECT_2026_07_28, TASK_AT_ONCE_META_KEY
from mcp_tasks_compat.errors import INVALID_PARAMS, MISSING_REQUIRED_CLIENT_CAPABILITY, PeerProtocolError

from .fake_caller import FakeCaller

pytestmark = pytest.mark.anyio

ALICE = principal_id("client-a", None, "alice")
BOB = principal_id("client-a", None, "bob")
TOOLS = {"echo": "optional", "build": "required", "quick": "forbidden"}
ELICIT = {"method": "elicitation/create", "params": {"message": "Name?", "requestedSchema": {}}}


def service(**policy: Any) -> Tasks2026Service:
    return Tasks2026Service(TaskPolicy(tools=dict(TOOLS), **policy))


def never_checked(method: str, response: Mapping[str, Any]) -> InvalidAnswer | None:
    raise AssertionError(f"{response} answers no outstanding {method} request and must not be checked")


@pytest.mark.parametrize(
    ("tool", "declares", "mode"),
    [
        ("quick", True, "plain"),
        ("quick", False, "plain"),
        ("echo", False, "plain"),
        ("echo", True, "maybe_task"),
        ("build", True, "task"),
    ],
)
def test_the_call_decision(tool: str, declares: bool, mode: str) -> None:
    assert service().plan_call(tool, declares_tasks=declares) == mode


def test_a_required_tool_without_the_extension_is_refused_naming_it() -> None:
    with pytest.raises(PeerProtocolError) as caught:
        service().plan_call("build", declares_tasks=False)
    assert caught.value.jsonrpc_code == MISSING_REQUIRED_CLIENT_CAPABILITY
    assert caught.value.data == {"requiredCapabilities": {"extensions": {EXTENSION_ID: {}}}}
    for call in (
        lambda: service().task_id({"taskId": "t"}, declares_tasks=False),
        lambda: service().update_params({"taskId": "t", "inputResponses": {}}, declares_tasks=False),
    ):
        with pytest.raises(PeerProtocolError) as caught:
            call()
        assert caught.value.jsonrpc_code == MISSING_REQUIRED_CLIENT_CAPABILITY


async def test_get_shows_the_task_and_hides_it_from_others_and_from_2025() -> None:
    svc = service()
    engine = svc.engine
    mine = await engine.create(dialect=DIALECT_2026_07_28, owner=ALICE, tool_name="echo", ttl_ms=svc.ttl_ms())
    legacy = await engine.create(dialect=DIALECT_2025_11_25, owner=ALICE, tool_name="echo", ttl_ms=None)
    got = await svc.get(mine.task.task_id, FakeCaller(ALICE))
    assert (got["resultType"], got["taskId"], got["status"]) == ("complete", mine.task.task_id, "working")
    assert got["ttlMs"] == engine.default_ttl_ms
    for task_id, principal in (
        (mine.task.task_id, BOB),
        (mine.task.task_id, None),
        (legacy.task.task_id, ALICE),
    ):
        with pytest.raises(PeerProtocolError) as caught:
            await svc.get(task_id, FakeCaller(principal))
        assert (caught.value.jsonrpc_code, caught.value.message) == (
            INVALID_PARAMS,
            "Failed to retrieve task: Task not found",
        )
        assert caught.value.data == {"taskId": task_id}


async def test_cancel_acknowledges_and_leaves_an_ended_task_as_it_is() -> None:
    svc = service()
    record = await svc.engine.create(dialect=DIALECT_2026_07_28, owner=None, tool_name="echo", ttl_ms=None)
    task_id = record.task.task_id
    nobody = FakeCaller()
    assert await svc.cancel(task_id, nobody) == {}
    assert (await svc.get(task_id, nobody))["status"] == "cancelled"
    assert await svc.cancel(task_id, nobody) == {}  # not an error in this dialect
    assert (await svc.get(task_id, nobody))["status"] == "cancelled"


async def test_update_checks_each_answer_against_its_request_and_delivers_it() -> None:
    svc = service()
    checked: list[str] = []
    answers: list[Mapping[str, Any]] = []

    def check(method: str, response: Mapping[str, Any]) -> InvalidAnswer | None:
        checked.append(method)
        if response.get("action") not in ("accept", "decline", "cancel"):
            return InvalidAnswer("ElicitResult", 1)
        return None

    async def asks() -> Mapping[str, Any]:
        run = current_run()
        assert run is not None
        engine, record = run
        answers.append(await engine.inputs.request(record, ELICIT))
        return {"content": [], "isError": False}

    async with anyio.create_task_group() as group:
        record = await svc.engine.create(
            dialect=DIALECT_2026_07_28, owner=ALICE, tool_name="echo", ttl_ms=None
        )
        svc.engine.start(record, asks, group)
        while not record.task.input_requests:
            await record.changed.wait()
        (key,) = record.task.input_requests
        task_id = record.task.task_id
        with pytest.raises(PeerProtocolError) as caught:
            await svc.update(task_id, {key: {"action": "maybe"}}, FakeCaller(ALICE), check)
        assert (caught.value.jsonrpc_code, caught.value.message) == (
            INVALID_PARAMS,
            f"inputResponses[{key!r}] is not a valid ElicitResult (the answer to elicitation/create): "
            "1 validation error(s)",
        )
        assert await svc.update(task_id, {"not-asked": {"x": 1}}, FakeCaller(ALICE), never_checked) == {}
        assert (
            await svc.update(task_id, {key: {"action": "accept", "content": {}}}, FakeCaller(ALICE), check)
            == {}
        )
    assert checked == ["elicitation/create", "elicitation/create"]
    assert answers == [{"action": "accept", "content": {}}]
    assert (await svc.get(task_id, FakeCaller(ALICE)))["status"] == "completed"


# --- tools/call from plan to answer (the service's one sequence; the adapters give work and launch) --


class Called:
    """A tool's work and the plain call, counting what ran."""

    def __init__(self, result: Mapping[str, Any] | None = None, *, until: anyio.Event | None = None) -> None:
        self.result = dict(result or {"content": [{"type": "text", "text": "done"}]})
        self.until = until
        self.worked = 0
        self.plain = 0

    async def work(self) -> Mapping[str, Any]:
        self.worked += 1
        if self.until is not None:
            await self.until.wait()
        return self.result

    async def plain_call(self) -> str:
        self.plain += 1
        return "answered plainly"


def call_of(tool: str, *, declares: bool = True, at_once: bool = False) -> ToolCall2026:
    meta = {TASK_AT_ONCE_META_KEY: True} if at_once else None
    return ToolCall2026(tool, {"x": 1}, meta, declares)


async def test_a_plain_call_is_the_adapters_plain_answer_and_launches_nothing() -> None:
    svc = service()
    called = Called()
    caller = FakeCaller(ALICE)
    for call in (call_of("quick"), call_of("echo", declares=False)):
        answer = await svc.call_tool(call, caller, work=called.work, plain=called.plain_call)
        assert answer == "answered plainly"
    assert (called.plain, called.worked, caller.launched) == (2, 0, [])


async def test_a_quick_optional_call_is_answered_with_its_outcome_and_makes_no_task() -> None:
    svc = service()
    called = Called()
    async with anyio.create_task_group() as group:
        caller = FakeCaller(ALICE, group=group)
        answer = await svc.call_tool(call_of("echo"), caller, work=called.work, plain=called.plain_call)
    assert answer == called.result  # the work's own result, as a plain call answers it
    assert (called.worked, caller.launched) == (1, ["echo"])
    tasks, _ = await svc.engine.store.list_tasks(owner=EVERY_OWNER, cursor=None)
    assert tasks == []


@pytest.mark.parametrize(("tool", "at_once"), [("build", False), ("echo", True)])
async def test_a_required_tool_or_a_task_asked_for_is_a_task_owned_by_the_principal(
    tool: str, at_once: bool
) -> None:
    svc = service()
    release = anyio.Event()
    called = Called(until=release)
    async with anyio.create_task_group() as group:
        caller = FakeCaller(ALICE, group=group)
        answer = await svc.call_tool(
            call_of(tool, at_once=at_once),
            caller,
            work=called.work,
            plain=called.plain_call,
        )
        assert isinstance(answer, dict)
        assert answer["resultType"] == "task"
        task_id = answer["taskId"]
        assert (await svc.get(task_id, FakeCaller(ALICE)))["status"] == "working"
        with pytest.raises(PeerProtocolError):
            await svc.get(task_id, FakeCaller(BOB))  # the principal's, nobody else's
        release.set()
    done = await svc.get(task_id, FakeCaller(ALICE))
    assert (done["status"], done["result"]) == ("completed", called.result)
    assert called.worked == 1


async def test_a_task_asked_for_past_the_owners_limit_is_refused_and_runs_nothing() -> None:
    svc = service(max_active_tasks_per_owner=1)
    release = anyio.Event()
    first, second = Called(until=release), Called()
    async with anyio.create_task_group() as group:
        caller = FakeCaller(ALICE, group=group)
        answer = await svc.call_tool(
            call_of("echo", at_once=True),
            caller,
            work=first.work,
            plain=first.plain_call,
        )
        assert isinstance(answer, dict)
        assert answer["resultType"] == "task"
        with pytest.raises(PeerProtocolError):
            await svc.call_tool(
                call_of("echo", at_once=True),
                caller,
                work=second.work,
                plain=second.plain_call,
            )
        release.set()
    assert (first.worked, second.worked, second.plain) == (1, 0, 0)


async def test_a_tool_quick_in_its_recent_calls_starts_its_next_call_undetached() -> None:
    svc = service()
    called = Called()
    async with anyio.create_task_group() as group:
        caller = FakeCaller(ALICE, group=group)
        for _ in range(QUICK_STREAK + 1):
            answer = await svc.call_tool(
                call_of("echo"),
                caller,
                work=called.work,
                plain=called.plain_call,
            )
            assert answer == called.result
    assert caller.detached == [True] * QUICK_STREAK + [False]
