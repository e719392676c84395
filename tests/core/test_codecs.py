"""Both wire codecs: round trips, totality, cross-dialect equivalence and the documented differences."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_tasks_compat.core import _codec_2025 as codec_2025
from mcp_tasks_compat.core import _codec_2026 as codec_2026
from mcp_tasks_compat.core._model import JsonRpcError, Task, TaskStatus
from mcp_tasks_compat.errors import INTERNAL_ERROR, INVALID_PARAMS, PeerProtocolError

from .strategies import (
    detailed_tasks,
    input_requests,
    json_objects,
    json_values,
    mutated,
    tasks,
    tool_results,
)

T0 = datetime(2025, 11, 25, 10, 30, tzinfo=timezone.utc)
SHARED_FIELDS = (
    "task_id",
    "status",
    "status_message",
    "created_at",
    "last_updated_at",
    "ttl_ms",
    "poll_interval_ms",
)


def over_the_wire(value: Any) -> Any:
    """What the peer actually receives: the value serialised and parsed as JSON."""
    return json.loads(json.dumps(value))


def shared(task: Task) -> tuple[Any, ...]:
    return tuple(getattr(task, name) for name in SHARED_FIELDS)


def make_task(**changes: Any) -> Task:
    base = Task(task_id="t-1", status=TaskStatus.WORKING, created_at=T0, last_updated_at=T0, ttl_ms=60_000)
    return base.evolve(**changes)


# === round trips: 2025-11-25 ====================================================================


@given(tasks())
def test_2025_task_round_trip(task: Task) -> None:
    assert codec_2025.decode_task(over_the_wire(codec_2025.encode_task(task))) == task


@given(tasks(), st.none() | st.text(max_size=20))
def test_2025_create_task_result_round_trip(task: Task, immediate: str | None) -> None:
    wire = over_the_wire(codec_2025.encode_create_task_result(task, model_immediate_response=immediate))
    assert set(wire) == ({"task"} if immediate is None else {"task", "_meta"})
    if immediate is not None:
        assert wire["_meta"] == {codec_2025.MODEL_IMMEDIATE_RESPONSE_KEY: immediate}
    assert codec_2025.decode_create_task_result(wire) == task


@given(st.lists(tasks(), max_size=4), st.none() | st.text(max_size=10))
def test_2025_list_tasks_result_round_trip(listed: list[Task], cursor: str | None) -> None:
    wire = over_the_wire(codec_2025.encode_list_tasks_result(listed, cursor))
    assert codec_2025.decode_list_tasks_result(wire) == (listed, cursor)


@given(st.none() | st.integers(min_value=0, max_value=2**53))
def test_2025_task_params_round_trip(ttl_ms: int | None) -> None:
    params = over_the_wire({"name": "build", "arguments": {}, "task": codec_2025.encode_task_params(ttl_ms)})
    assert codec_2025.decode_task_params(params) == {"ttl": ttl_ms}


def test_2025_task_params_absent_means_a_plain_call() -> None:
    assert codec_2025.decode_task_params({"name": "build"}) is None
    assert codec_2025.decode_task_params({"name": "build", "task": None}) is None
    assert codec_2025.encode_task_params(None) == {}  # "use your default TTL"


@given(st.text(max_size=40))
def test_2025_task_id_params_round_trip(task_id: str) -> None:
    assert (
        codec_2025.decode_task_id_params(over_the_wire(codec_2025.encode_task_id_params(task_id))) == task_id
    )


@given(tasks(), tool_results)
def test_2025_tasks_result_payload_round_trip(task: Task, result: dict[str, Any]) -> None:
    wire = over_the_wire(codec_2025.encode_task_payload(task.evolve(result=result)))
    # Every tasks/result response MUST carry the related-task _meta.
    assert wire["_meta"][codec_2025.RELATED_TASK_KEY] == {"taskId": task.task_id}
    assert codec_2025.read_related_task(wire["_meta"]) == task.task_id
    assert codec_2025.decode_task_payload(wire, task.task_id) == result


def test_2025_cancelled_task_payload_is_only_the_related_task_meta() -> None:
    task = make_task(status=TaskStatus.CANCELLED)
    wire = codec_2025.encode_task_payload(task)
    assert wire == {"_meta": {codec_2025.RELATED_TASK_KEY: {"taskId": "t-1"}}}
    assert codec_2025.decode_task_payload(wire, "t-1") == {}


@given(tasks())
def test_2025_status_notification_carries_the_task(task: Task) -> None:
    message = over_the_wire(codec_2025.encode_status_notification(task))
    assert message["method"] == "notifications/tasks/status"
    assert codec_2025.decode_task(message["params"]) == task


@given(tasks())
def test_2025_task_id_bearing_answers_carry_no_related_task_meta(task: Task) -> None:
    """tasks/get and tasks/cancel answers, a tasks/list page and the status notification name the
    task in their body, so (SHOULD NOT) none repeats it as related-task ``_meta``."""
    listed = codec_2025.encode_list_tasks_result([task], next_cursor=None)
    notification = codec_2025.encode_status_notification(task)
    for wire in (codec_2025.encode_task(task), *listed["tasks"], notification["params"]):
        assert codec_2025.RELATED_TASK_KEY not in (wire.get("_meta") or {})
    assert "_meta" not in listed


@given(st.text(max_size=40))
def test_2025_related_task_meta_round_trip(task_id: str) -> None:
    assert codec_2025.read_related_task(over_the_wire(codec_2025.related_task_meta(task_id))) == task_id


@pytest.mark.parametrize("support", ["forbidden", "optional", "required"])
def test_2025_tool_execution_round_trip(support: Any) -> None:
    tool = over_the_wire(
        {"name": "build", "inputSchema": {}, "execution": codec_2025.encode_tool_execution(support)}
    )
    assert codec_2025.decode_tool_task_support(tool) == support


@pytest.mark.parametrize(
    "tool",
    [
        {"name": "x"},
        {"execution": None},
        {"execution": {}},
        {"execution": {"taskSupport": "sometimes"}},
        "tool",
        None,
    ],
)
def test_2025_absent_or_unknown_task_support_means_forbidden(tool: Any) -> None:
    assert codec_2025.decode_tool_task_support(tool) == "forbidden"


def test_2025_server_capability() -> None:
    assert codec_2025.SERVER_TASKS_CAPABILITY == {
        "list": {},
        "cancel": {},
        "requests": {"tools": {"call": {}}},
    }
    assert codec_2025.server_offers_tool_tasks({"tasks": codec_2025.SERVER_TASKS_CAPABILITY})
    # mcp 1.23-1.26 advertise a bare requests.tools.
    assert codec_2025.server_offers_tool_tasks({"tasks": {"requests": {"tools": {}}}})
    assert not codec_2025.server_offers_tool_tasks({"tasks": {"list": {}}})
    assert not codec_2025.server_offers_tool_tasks({"tools": {}})
    assert not codec_2025.server_offers_tool_tasks(None)


def test_2025_task_wire_shape_is_the_spec_example() -> None:
    task = make_task(
        task_id="786512e2-9e0d-44bd-8f29-789f320fe840",
        status_message="The operation is now in progress.",
        last_updated_at=T0.replace(minute=40),
        poll_interval_ms=5000,
    )
    assert codec_2025.encode_create_task_result(task) == {
        "task": {
            "taskId": "786512e2-9e0d-44bd-8f29-789f320fe840",
            "status": "working",
            "statusMessage": "The operation is now in progress.",
            "createdAt": "2025-11-25T10:30:00Z",
            "lastUpdatedAt": "2025-11-25T10:40:00Z",
            "ttl": 60000,
            "pollInterval": 5000,
        }
    }


def test_2025_missing_ttl_and_last_updated_are_tolerated() -> None:
    # mcp 1.x servers drop a null ttl (exclude_none); the codec reads it as unlimited.
    task = codec_2025.decode_task({"taskId": "a", "status": "working", "createdAt": "2025-11-25T10:30:00Z"})
    assert task.ttl_ms is None
    assert task.last_updated_at == task.created_at == T0


# === round trips: 2026-07-28 ====================================================================


@given(tasks(), st.booleans())
def test_2026_task_round_trip(task: Task, strict: bool) -> None:
    assert codec_2026.decode_task(over_the_wire(codec_2026.encode_task(task)), strict=strict) == task


@given(tasks())
def test_2026_create_task_result_round_trip(task: Task) -> None:
    wire = over_the_wire(codec_2026.encode_create_task_result(task))
    assert wire["resultType"] == "task"
    assert "task" not in wire  # flat, not nested
    assert codec_2026.decode_create_task_result(wire) == task


@given(detailed_tasks())
def test_2026_get_task_result_round_trip(task: Task) -> None:
    wire = over_the_wire(codec_2026.encode_get_task_result(task))
    assert wire["resultType"] == "complete"
    assert codec_2026.decode_get_task_result(wire) == task


@given(detailed_tasks())
def test_2026_tasks_notification_carries_the_detailed_task(task: Task) -> None:
    message = over_the_wire(codec_2026.encode_tasks_notification(task))
    assert message["method"] == "notifications/tasks"
    assert "resultType" not in message["params"]
    assert codec_2026.decode_task(message["params"], strict=True) == task


@given(st.text(max_size=40))
def test_2026_task_id_params_round_trip(task_id: str) -> None:
    assert (
        codec_2026.decode_task_id_params(over_the_wire(codec_2026.encode_task_id_params(task_id))) == task_id
    )


@given(st.text(max_size=40), st.dictionaries(st.text(max_size=8), json_objects, max_size=3))
def test_2026_update_params_round_trip(task_id: str, responses: dict[str, dict[str, Any]]) -> None:
    wire = over_the_wire(codec_2026.encode_update_params(task_id, responses))
    assert codec_2026.decode_update_params(wire) == (task_id, responses)


def test_2026_negotiation_entries() -> None:
    meta = codec_2026.request_capability_meta()
    assert meta == {
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    }
    assert codec_2026.request_declares_tasks(over_the_wire(meta))
    assert codec_2026.request_declares_tasks(
        {**meta, "io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    )
    assert not codec_2026.request_declares_tasks({"io.modelcontextprotocol/clientCapabilities": {}})
    assert not codec_2026.request_declares_tasks(
        {"io.modelcontextprotocol/clientCapabilities": {"extensions": {}}}
    )
    assert not codec_2026.request_declares_tasks(None)
    assert codec_2026.server_offers_tasks({"extensions": codec_2026.SERVER_EXTENSION_ENTRY})
    assert codec_2026.SERVER_EXTENSION_ENTRY == {"io.modelcontextprotocol/tasks": {}}
    assert not codec_2026.server_offers_tasks({"extensions": {"io.example/other": {}}})
    assert not codec_2026.server_offers_tasks({"tasks": {}})


def test_2026_acks_and_errors_are_the_spec_shapes() -> None:
    assert codec_2026.ACK == {"resultType": "complete"}
    assert codec_2026.missing_capability_error().to_wire() == {
        "code": -32021,
        "message": "Missing required client capability",
        "data": {"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}},
    }
    assert codec_2026.invalid_task_id_error("abc").to_wire() == {
        "code": -32602,
        "message": "Failed to retrieve task: Task not found",
        "data": {"taskId": "abc"},
    }
    assert (
        codec_2026.invalid_task_id_error("abc", expired=True).message
        == "Failed to retrieve task: Task has expired"
    )


def test_2026_failed_task_without_a_recorded_error_still_reports_one() -> None:
    wire = codec_2026.encode_get_task_result(make_task(status=TaskStatus.FAILED, status_message="disk full"))
    assert wire["error"] == {"code": INTERNAL_ERROR, "message": "disk full"}


def test_2026_payload_only_for_its_status() -> None:
    # A result recorded on a failed (2025-style isError) task is not shown as 2026 "result".
    task = make_task(status=TaskStatus.FAILED, result={"content": [], "isError": True}, error=None)
    assert "result" not in codec_2026.encode_get_task_result(task)
    working = codec_2026.encode_get_task_result(make_task(input_requests={"k": {"method": "roots/list"}}))
    assert "inputRequests" not in working


def test_2026_get_task_result_accepts_missing_or_task_result_type_but_not_others() -> None:
    wire = codec_2026.encode_get_task_result(make_task())
    del wire["resultType"]
    assert codec_2026.decode_get_task_result(wire) == make_task()
    assert codec_2026.decode_get_task_result({**wire, "resultType": "task"}) == make_task()  # SEP erratum
    with pytest.raises(PeerProtocolError) as caught:
        codec_2026.decode_get_task_result({**wire, "resultType": "input_required"})
    assert caught.value.jsonrpc_code == INTERNAL_ERROR


# === ttl null ===================================================================================


@pytest.mark.parametrize(
    "encode",
    [
        codec_2026.encode_task,
        codec_2026.encode_create_task_result,
        codec_2026.encode_get_task_result,
        lambda task: codec_2026.encode_tasks_notification(task)["params"],
    ],
    ids=["task", "create", "get", "notification"],
)
def test_2026_unlimited_ttl_is_written_as_null_never_dropped(
    encode: Callable[[Task], dict[str, Any]],
) -> None:
    wire = encode(make_task(ttl_ms=None))
    assert "ttlMs" in wire
    assert wire["ttlMs"] is None
    assert '"ttlMs": null' in json.dumps(wire)


def test_2025_unlimited_ttl_is_written_as_null_never_dropped() -> None:
    wire = codec_2025.encode_create_task_result(make_task(ttl_ms=None))
    assert wire["task"]["ttl"] is None
    assert '"ttl": null' in json.dumps(wire)


def test_2026_strict_decoding_requires_ttl_ms_but_accepts_null() -> None:
    wire = codec_2026.encode_task(make_task(ttl_ms=None))
    assert codec_2026.decode_task(wire, strict=True).ttl_ms is None
    del wire["ttlMs"]
    with pytest.raises(PeerProtocolError, match="'ttlMs' is required"):
        codec_2026.decode_task(wire, strict=True)
    assert codec_2026.decode_task(wire).ttl_ms is None  # lenient client reading


# === isError semantics ==========================================================================


@given(tool_results)
def test_is_error_means_failed_in_2025_and_completed_in_2026(result: dict[str, Any]) -> None:
    expected_2025 = TaskStatus.FAILED if result.get("isError") is True else TaskStatus.COMPLETED
    assert codec_2025.status_for_tool_result(result) is expected_2025
    assert codec_2026.status_for_tool_result(result) is TaskStatus.COMPLETED


def test_is_error_examples() -> None:
    errored = {"content": [{"type": "text", "text": "no such file"}], "isError": True}
    assert codec_2025.status_for_tool_result(errored) is TaskStatus.FAILED
    assert codec_2026.status_for_tool_result(errored) is TaskStatus.COMPLETED
    assert codec_2025.status_for_tool_result({"content": []}) is TaskStatus.COMPLETED
    # Only a real boolean true counts; a truthy string is not an error flag.
    assert codec_2025.status_for_tool_result({"content": [], "isError": "yes"}) is TaskStatus.COMPLETED
    # In 2026-07-28 the errored tool result is shown inline as the completed task's result.
    task = make_task(status=TaskStatus.COMPLETED, result=errored)
    assert codec_2026.decode_get_task_result(codec_2026.encode_get_task_result(task)).result == errored


# === cross-dialect equivalence ==================================================================

RENAMED = {"ttl": "ttlMs", "pollInterval": "pollIntervalMs"}


@given(tasks())
def test_both_dialects_write_the_same_values_under_their_own_names(task: Task) -> None:
    wire_2025 = codec_2025.encode_task(task)
    wire_2026 = codec_2026.encode_task(task)
    assert {RENAMED.get(key, key): value for key, value in wire_2025.items()} == wire_2026


@given(tasks())
def test_a_task_keeps_its_shared_fields_from_2025_to_2026(task: Task) -> None:
    via_2025 = codec_2025.decode_create_task_result(over_the_wire(codec_2025.encode_create_task_result(task)))
    via_2026 = codec_2026.decode_get_task_result(over_the_wire(codec_2026.encode_get_task_result(via_2025)))
    assert shared(via_2026) == shared(via_2025) == shared(task)


@given(detailed_tasks())
def test_a_task_keeps_its_shared_fields_from_2026_to_2025(task: Task) -> None:
    via_2026 = codec_2026.decode_get_task_result(over_the_wire(codec_2026.encode_get_task_result(task)))
    listed, _cursor = codec_2025.decode_list_tasks_result(
        over_the_wire(codec_2025.encode_list_tasks_result([via_2026]))
    )
    assert shared(listed[0]) == shared(via_2026) == shared(task)


# === totality ===================================================================================

DECODERS: dict[str, Callable[[Any], object]] = {
    "2025 decode_task": codec_2025.decode_task,
    "2025 decode_task_params": codec_2025.decode_task_params,
    "2025 decode_task_id_params": codec_2025.decode_task_id_params,
    "2025 decode_create_task_result": codec_2025.decode_create_task_result,
    "2025 decode_list_tasks_result": codec_2025.decode_list_tasks_result,
    "2025 decode_task_payload": lambda value: codec_2025.decode_task_payload(value, "t-1"),
    "2026 decode_task": codec_2026.decode_task,
    "2026 decode_task strict": lambda value: codec_2026.decode_task(value, strict=True),
    "2026 decode_create_task_result": codec_2026.decode_create_task_result,
    "2026 decode_get_task_result": codec_2026.decode_get_task_result,
    "2026 decode_task_id_params": codec_2026.decode_task_id_params,
    "2026 decode_update_params": codec_2026.decode_update_params,
}

# Readers documented as never raising: they answer "no" to anything malformed.
PREDICATES: dict[str, Callable[[Any], object]] = {
    "2025 read_related_task": codec_2025.read_related_task,
    "2025 server_offers_tool_tasks": codec_2025.server_offers_tool_tasks,
    "2025 decode_tool_task_support": codec_2025.decode_tool_task_support,
    "2026 request_declares_tasks": codec_2026.request_declares_tasks,
    "2026 server_offers_tasks": codec_2026.server_offers_tasks,
}

# Valid encodings to mutate, one per decoder, so that near-valid input reaches the deep checks.
VALID_WIRE: dict[str, st.SearchStrategy[Any]] = {
    "2025 decode_task": tasks().map(codec_2025.encode_task),
    "2025 decode_task_params": st.builds(
        lambda ttl: {"name": "x", "task": codec_2025.encode_task_params(ttl)}, st.none() | st.integers(0, 10)
    ),
    "2025 decode_task_id_params": st.text(max_size=5).map(codec_2025.encode_task_id_params),
    "2025 decode_create_task_result": tasks().map(codec_2025.encode_create_task_result),
    "2025 decode_list_tasks_result": st.lists(tasks(), max_size=2).map(codec_2025.encode_list_tasks_result),
    "2025 decode_task_payload": st.builds(
        lambda task, result: codec_2025.encode_task_payload(task.evolve(result=result)), tasks(), tool_results
    ),
    "2026 decode_task": detailed_tasks().map(codec_2026.encode_get_task_result),
    "2026 decode_task strict": detailed_tasks().map(codec_2026.encode_get_task_result),
    "2026 decode_create_task_result": tasks().map(codec_2026.encode_create_task_result),
    "2026 decode_get_task_result": detailed_tasks().map(codec_2026.encode_get_task_result),
    "2026 decode_task_id_params": st.text(max_size=5).map(codec_2026.encode_task_id_params),
    "2026 decode_update_params": st.builds(
        codec_2026.encode_update_params,
        st.text(max_size=5),
        st.dictionaries(st.text(max_size=4), input_requests),
    ),
}


# What each decoder returns when it accepts its input.
RETURNS: dict[str, type | tuple[type, ...]] = {
    "2025 decode_task": Task,
    "2025 decode_task_params": (dict, type(None)),
    "2025 decode_task_id_params": str,
    "2025 decode_create_task_result": Task,
    "2025 decode_list_tasks_result": tuple,
    "2025 decode_task_payload": dict,
    "2026 decode_task": Task,
    "2026 decode_task strict": Task,
    "2026 decode_create_task_result": Task,
    "2026 decode_get_task_result": Task,
    "2026 decode_task_id_params": str,
    "2026 decode_update_params": tuple,
}


def _decodes_or_refuses(name: str, value: Any) -> None:
    try:
        decoded = DECODERS[name](value)
    except PeerProtocolError as error:
        # Only our error escapes, and it says what to answer the peer with.
        refusal = error
    else:
        refusal = None
    if refusal is not None:
        assert refusal.jsonrpc_code in (INVALID_PARAMS, INTERNAL_ERROR)
        assert refusal.code == "peer-protocol"
    else:
        assert isinstance(decoded, RETURNS[name])
        if isinstance(decoded, Task):
            assert isinstance(decoded.status, TaskStatus)
            assert decoded.created_at.tzinfo is not None


def test_totality_tables_cover_every_decoder_of_both_codecs() -> None:
    for codec in (codec_2025, codec_2026):
        decoders = {name for name in codec.__all__ if name.startswith("decode_")}
        covered = {name.split()[1] for name in DECODERS if name.startswith(codec.DIALECT[:4])}
        covered |= {name.split()[1] for name in PREDICATES if name.startswith(codec.DIALECT[:4])}
        assert decoders <= covered, (
            f"{codec.__name__}: add {sorted(decoders - covered)} to the totality tables"
        )
    assert set(VALID_WIRE) == set(DECODERS) == set(RETURNS)


@pytest.mark.parametrize("name", sorted(DECODERS))
@given(value=json_values)
def test_decoding_any_json_returns_a_model_or_raises_peer_protocol_error(name: str, value: Any) -> None:
    _decodes_or_refuses(name, value)


@pytest.mark.parametrize("name", sorted(DECODERS))
@given(data=st.data())
def test_decoding_near_valid_json_returns_a_model_or_raises_peer_protocol_error(
    name: str, data: st.DataObject
) -> None:
    value = data.draw(mutated(VALID_WIRE[name]))
    _decodes_or_refuses(name, value)


@pytest.mark.parametrize("name", sorted(PREDICATES))
@given(value=json_values | mutated(detailed_tasks().map(codec_2026.encode_get_task_result)))
def test_readers_never_raise(name: str, value: Any) -> None:
    PREDICATES[name](value)


WORKING_AT_T0 = {"taskId": "a", "status": "working", "createdAt": "2025-11-25T10:30:00Z"}


@pytest.mark.parametrize(
    ("decode", "value", "message"),
    [
        (codec_2025.decode_task, [], "task: expected a JSON object, got list"),
        (codec_2025.decode_task, {**WORKING_AT_T0, "status": "done"}, "unknown task status 'done'"),
        (
            codec_2025.decode_task,
            {**WORKING_AT_T0, "createdAt": "soon"},
            "'createdAt' is not an ISO 8601 timestamp",
        ),
        (codec_2025.decode_task_id_params, {"taskId": 7}, "params: 'taskId' must be a string"),
        (codec_2025.decode_create_task_result, {"taskId": "a"}, "CreateTaskResult: 'task' is required"),
        (codec_2026.decode_create_task_result, {"task": {}}, "CreateTaskResult: resultType must be 'task'"),
        (codec_2026.decode_update_params, {"taskId": "a"}, "params.inputResponses: expected a JSON object"),
        (codec_2026.decode_task, {**WORKING_AT_T0, "ttlMs": -1}, "'ttlMs' must be a non-negative integer"),
        (codec_2026.decode_task, {**WORKING_AT_T0, "error": {"message": "x"}}, "'code' must be an integer"),
    ],
)
def test_refusals_say_what_is_wrong_and_where(
    decode: Callable[[Any], object], value: Any, message: str
) -> None:
    with pytest.raises(PeerProtocolError) as caught:
        decode(value)
    assert message in caught.value.message


def test_request_params_errors_answer_invalid_params_and_result_errors_internal_error() -> None:
    with pytest.raises(PeerProtocolError) as params_error:
        codec_2026.decode_task_id_params({})
    assert params_error.value.jsonrpc_code == INVALID_PARAMS
    with pytest.raises(PeerProtocolError) as result_error:
        codec_2026.decode_get_task_result({"resultType": "complete"})
    assert result_error.value.jsonrpc_code == INTERNAL_ERROR


def test_durations_accept_integral_floats_from_javascript_peers_only() -> None:
    wire = codec_2026.encode_task(make_task())
    assert codec_2026.decode_task({**wire, "ttlMs": 60000.0}).ttl_ms == 60000
    for bad in (1.5, True, "60000", float("inf")):
        with pytest.raises(PeerProtocolError):
            codec_2026.decode_task({**wire, "ttlMs": bad})


def test_json_rpc_error_round_trips_through_a_failed_task() -> None:
    error = JsonRpcError(-32000, "quota exceeded", data={"retryAfterMs": 1000})
    task = make_task(status=TaskStatus.FAILED, error=error, status_message="quota exceeded")
    assert (
        codec_2026.decode_get_task_result(over_the_wire(codec_2026.encode_get_task_result(task))).error
        == error
    )
