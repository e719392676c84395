"""Multi-round-trip input of a 2026-07-28 call and its plain answers, SDK-free (``_server``).

The service asks the SDK for two primitives only (a result read as an ``input_required`` wire,
the answers set as the retry's params); the mcp 2.x tests (``tests/server/v2/test_inline_grace.py``)
keep the wire through a real server.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio
import pytest

from mcp_tasks_compat._engine import Outcome, RoundTripAnswer, TaskPolicy, ToolCallFailure
from mcp_tasks_compat._server import (
    RoundTrips,
    Tasks2026Service,
    ToolCall2026,
    ask,
    no_input_channel,
    principal_id,
    relay_rounds,
)
from mcp_tasks_compat._server.service_2026 import MCP_NAME_MISMATCH, plain_answer
from mcp_tasks_compat.core._codec_2026 import EXTENSION_ID
from mcp_tasks_compat.core._model import JsonRpcError
from mcp_tasks_compat.errors import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    PeerProtocolError,
)

from .fake_caller import FakeCaller

pytestmark = pytest.mark.anyio

BOUND_S = 5
ALICE = principal_id("client-a", None, "alice")
NAME = {"message": "Name?", "requestedSchema": {}}
ACCEPTED = {"action": "accept", "content": {"name": "Alice"}}


def service(**policy: Any) -> Tasks2026Service:
    tools: dict[str, Any] = {"greet": "optional", "build": "required", "quick": "forbidden"}
    return Tasks2026Service(TaskPolicy(tools=tools, **policy))


async def never_plain(method: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
    raise AssertionError(f"{method} went out as a plain request")


def nothing_undeclared(method: str) -> str | None:
    return None


async def asks_first() -> dict[str, Any]:
    """A tool body that asks before it runs long (``before_task=True``), then greets."""
    answer = await ask(
        "elicitation/create", dict(NAME), before_task=True, plain=never_plain, undeclared=nothing_undeclared
    )
    return {"content": [{"type": "text", "text": f"hello {answer['content']['name']}"}]}


def call_of(
    tool: str, *, responses: Mapping[str, Any] | None = None, state: str | None = None
) -> ToolCall2026:
    return ToolCall2026(tool, {}, None, True, responses, state)


def test_a_question_is_a_round_keyed_by_its_order_and_its_answer_comes_back_from_the_retry() -> None:
    first = RoundTrips(None, None)
    with pytest.raises(RoundTripAnswer) as caught:
        first.ask("elicitation/create", NAME)
    question = caught.value.result
    assert question == first.question
    assert question["resultType"] == "input_required"
    assert question["inputRequests"] == {"elicit-1": {"method": "elicitation/create", "params": NAME}}
    retry = RoundTrips({"elicit-1": ACCEPTED}, question["requestState"])
    assert retry.ask("elicitation/create", NAME) == ACCEPTED
    with pytest.raises(RoundTripAnswer) as caught:
        retry.ask("sampling/createMessage", {})
    later = RoundTrips({"sample-2": {"x": 1}}, caught.value.result["requestState"])
    assert later.ask("elicitation/create", NAME) == ACCEPTED  # earlier answers ride in requestState


def test_a_request_state_of_another_shape_carries_no_answers() -> None:
    for state in ("the tool's own state", "e30=", "!!"):
        with pytest.raises(RoundTripAnswer):
            RoundTrips(None, state).ask("elicitation/create", NAME)


async def test_a_plain_call_that_asks_first_is_answered_with_the_round_then_with_its_result() -> None:
    svc = service()
    first = await svc.call_tool(call_of("quick"), FakeCaller(ALICE), work=asks_first, plain=asks_first)
    assert isinstance(first, Mapping)
    assert first["resultType"] == "input_required"
    (key,) = first["inputRequests"]
    retried = call_of("quick", responses={key: ACCEPTED}, state=first["requestState"])
    second = await svc.call_tool(retried, FakeCaller(ALICE), work=asks_first, plain=asks_first)
    assert second == {"content": [{"type": "text", "text": "hello Alice"}]}


@pytest.mark.parametrize("tool", ["greet", "build"])
async def test_an_undecided_call_that_asks_first_is_answered_with_the_round_and_makes_no_task(
    tool: str,
) -> None:
    svc = service()
    with anyio.fail_after(BOUND_S):
        async with anyio.create_task_group() as group:
            answer = await svc.call_tool(
                call_of(tool), FakeCaller(ALICE, group=group), work=asks_first, plain=asks_first
            )
    assert isinstance(answer, Mapping)
    assert answer["resultType"] == "input_required"  # a required tool too: the round comes first
    tasks, _ = await svc.engine.store.list_tasks(owner=None, cursor=None)
    assert tasks == []


async def test_a_tools_own_round_in_a_task_is_relayed_through_it_and_the_tool_runs_again() -> None:
    svc = service(inline_grace_s=0)  # a task before the tool runs: its round is the task's
    own_round = {
        "resultType": "input_required",
        "inputRequests": {"mine": {"method": "elicitation/create", "params": NAME}},
        "requestState": "the tool's own",
    }
    retries: list[tuple[Mapping[str, Any], str | None]] = []
    results = [own_round, {"content": [{"type": "text", "text": "done"}]}]

    async def next_round() -> Mapping[str, Any]:
        return results[len(retries)]

    def input_required(result: Mapping[str, Any]) -> Mapping[str, Any] | None:
        return result if result.get("resultType") == "input_required" else None

    async def work() -> Mapping[str, Any]:
        return await relay_rounds(
            next_round, input_required=input_required, retry_with=lambda a, s: retries.append((a, s))
        )

    with anyio.fail_after(BOUND_S):
        async with anyio.create_task_group() as group:
            answer = await svc.call_tool(
                call_of("build"), FakeCaller(ALICE, group=group), work=work, plain=work
            )
            assert isinstance(answer, Mapping)
            assert answer.get("resultType") == "task", answer
            task_id = answer["taskId"]
            record = await svc.record(task_id, FakeCaller(ALICE))
            while not record.task.input_requests:
                await record.changed.wait()
            (key,) = record.task.input_requests  # the task's own key for the tool's request
            assert record.task.input_requests[key]["method"] == "elicitation/create"
            await svc.update(task_id, {key: ACCEPTED}, FakeCaller(ALICE), lambda method, response: None)
    assert retries == [({"mine": ACCEPTED}, "the tool's own")]  # under the tool's key, its state echoed
    done = await svc.get(task_id, FakeCaller(ALICE))
    assert (done["status"], done["result"]) == ("completed", results[1])


async def test_an_is_error_result_completes_a_2026_task_with_the_result_inline() -> None:
    """The service gives its engine 2026-07-28's result rule (``failed`` is for JSON-RPC errors)."""
    svc = service()
    tool_error = {"content": [{"type": "text", "text": "no such file"}], "isError": True}

    async def errs() -> Mapping[str, Any]:
        return tool_error

    async with anyio.create_task_group() as group:
        answer = await svc.call_tool(call_of("build"), FakeCaller(ALICE, group=group), work=errs, plain=errs)
    assert isinstance(answer, Mapping)
    done = await svc.get(answer["taskId"], FakeCaller(ALICE))
    assert (done["status"], done["result"]) == ("completed", tool_error)


def test_the_plain_answer_is_what_the_call_would_have_answered() -> None:
    result = {"content": []}
    assert plain_answer(Outcome(result=result)) is result  # an adapter's own lazy result stays as it is
    assert plain_answer(Outcome(error=RoundTripAnswer({"resultType": "input_required"}))) == {
        "resultType": "input_required"
    }
    sdk_error = LookupError("the SDK's own error")
    failure = ToolCallFailure(JsonRpcError(INTERNAL_ERROR, "wrapped"))
    failure.__cause__ = sdk_error
    with pytest.raises(LookupError) as raised:
        plain_answer(Outcome(error=failure))
    assert raised.value is sdk_error  # raised again as the SDK raised it
    with pytest.raises(PeerProtocolError) as refused:
        plain_answer(Outcome(error=ToolCallFailure(JsonRpcError(-32000, "tool failure", {"step": 3}))))
    assert (refused.value.jsonrpc_code, refused.value.message, refused.value.data) == (
        -32000,
        "tool failure",
        {"step": 3},
    )


def test_an_mcp_name_header_naming_another_task_is_refused_and_a_missing_one_accepted() -> None:
    Tasks2026Service.check_mcp_name("t-1", None)
    Tasks2026Service.check_mcp_name("t-1", "t-1")
    with pytest.raises(PeerProtocolError) as caught:
        Tasks2026Service.check_mcp_name("t-1", "t-2")
    assert (caught.value.jsonrpc_code, caught.value.message) == (HEADER_MISMATCH, MCP_NAME_MISMATCH)


def test_a_plain_call_cannot_ask_and_the_refusal_says_how_it_could() -> None:
    declared = no_input_channel("elicitation/create", declares_tasks=True)
    assert declared.code == INTERNAL_ERROR
    assert "declare it 'optional' or 'required'" in declared.message
    undeclared = no_input_channel("roots/list", declares_tasks=False)
    assert undeclared.code == MISSING_REQUIRED_CLIENT_CAPABILITY
    assert undeclared.data == {"requiredCapabilities": {"extensions": {EXTENSION_ID: {}}}}
    assert f"declare the {EXTENSION_ID} extension" in undeclared.message
