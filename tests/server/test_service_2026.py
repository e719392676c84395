"""The 2026-07-28 task service (the Tasks extension), SDK-free: the decision of ``tools/call`` and
``tasks/get|update|cancel``. The mcp 2.x server tests keep routing, headers and wire shape."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio
import pytest

from mcp_tasks_compat._engine import TaskPolicy, current_run
from mcp_tasks_compat._server import Tasks2026Service, principal_id
from mcp_tasks_compat.core.codec_2026 import EXTENSION_ID
from mcp_tasks_compat.dialects import DIALECT_2025_11_25, DIALECT_2026_07_28
from mcp_tasks_compat.errors import INVALID_PARAMS, MISSING_REQUIRED_CLIENT_CAPABILITY, PeerProtocolError

from .fake_caller import FakeCaller

pytestmark = pytest.mark.anyio

ALICE = principal_id("client-a", None, "alice")
BOB = principal_id("client-a", None, "bob")
TOOLS = {"echo": "optional", "build": "required", "quick": "forbidden"}
ELICIT = {"method": "elicitation/create", "params": {"message": "Name?", "requestedSchema": {}}}


def service(**policy: Any) -> Tasks2026Service:
    return Tasks2026Service(TaskPolicy(tools=dict(TOOLS), **policy))


def never_checked(key: str, method: str, response: Mapping[str, Any]) -> None:
    raise AssertionError(f"{key} ({method}) answers no outstanding request and must not be checked")


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
    checked: list[tuple[str, str]] = []
    answers: list[Mapping[str, Any]] = []

    def check(key: str, method: str, response: Mapping[str, Any]) -> None:
        checked.append((key, method))
        if response.get("action") not in ("accept", "decline", "cancel"):
            raise PeerProtocolError(
                f"inputResponses[{key!r}] is not a valid ElicitResult", jsonrpc_code=INVALID_PARAMS
            )

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
        with pytest.raises(PeerProtocolError):
            await svc.update(task_id, {key: {"action": "maybe"}}, FakeCaller(ALICE), check)
        assert await svc.update(task_id, {"not-asked": {"x": 1}}, FakeCaller(ALICE), never_checked) == {}
        assert (
            await svc.update(task_id, {key: {"action": "accept", "content": {}}}, FakeCaller(ALICE), check)
            == {}
        )
    assert checked == [(key, "elicitation/create"), (key, "elicitation/create")]
    assert answers == [{"action": "accept", "content": {}}]
    assert (await svc.get(task_id, FakeCaller(ALICE)))["status"] == "completed"
