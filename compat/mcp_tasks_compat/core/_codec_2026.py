"""Codec for the Tasks extension (SEP-2663, ``io.modelcontextprotocol/tasks``, protocol 2026-07-28).

Shapes: per-request capability in ``_meta``, the ``server/discover`` extension entry, the flat
``resultType: "task"`` CreateTaskResult, ``ttlMs`` (required, nullable: written as null, never
dropped), ``pollIntervalMs``, ``tasks/get`` with ``result`` | ``error`` | ``inputRequests`` and
``resultType: "complete"``, ``tasks/update``, the ``tasks/cancel`` ack, ``notifications/tasks``
and the -32021 error data.

Semantics that differ from 2025-11-25: a tool result with ``isError: true`` is ``completed``
(with that result inline); ``failed`` is only for JSON-RPC errors, carried inline as ``error``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ..dialects import TASKS_EXTENSION_ID
from ..errors import INTERNAL_ERROR, INVALID_PARAMS, MISSING_REQUIRED_CLIENT_CAPABILITY, PeerProtocolError
from . import _read as read
from ._model import JsonRpcError, Progress, Task, TaskStatus, format_timestamp

__all__ = [
    "ACK",
    "CLIENT_CAPABILITIES_META_KEY",
    "EXTENSION_ID",
    "SERVER_EXTENSION_ENTRY",
    "decode_create_task_result",
    "decode_get_task_result",
    "decode_task",
    "decode_task_id_params",
    "decode_update_params",
    "encode_create_task_result",
    "encode_get_task_result",
    "encode_task",
    "encode_task_id_params",
    "encode_tasks_notification",
    "encode_update_params",
    "invalid_task_id_error",
    "missing_capability_error",
    "request_capability_meta",
    "request_declares_tasks",
    "server_offers_tasks",
    "status_for_tool_result",
]

DIALECT: Final = "2026-07-28"
EXTENSION_ID: Final = TASKS_EXTENSION_ID
CLIENT_CAPABILITIES_META_KEY: Final = "io.modelcontextprotocol/clientCapabilities"
SERVER_EXTENSION_ENTRY: Final[Mapping[str, Any]] = {EXTENSION_ID: {}}
"""What the server puts under ``capabilities.extensions`` in ``server/discover``."""

ACK: Final[Mapping[str, Any]] = {"resultType": "complete"}
"""The answer to ``tasks/update`` and ``tasks/cancel``."""


# --- the Task object ---------------------------------------------------------------------------


def encode_task(task: Task) -> dict[str, Any]:
    """The flat ``Task`` fields; ``ttlMs`` is always present (null = unlimited)."""
    wire: dict[str, Any] = {"taskId": task.task_id, "status": task.status.value}
    if task.status_message is not None:
        wire["statusMessage"] = task.status_message
    wire["createdAt"] = format_timestamp(task.created_at)
    wire["lastUpdatedAt"] = format_timestamp(task.last_updated_at)
    wire["ttlMs"] = task.ttl_ms
    if task.poll_interval_ms is not None:
        wire["pollIntervalMs"] = task.poll_interval_ms
    if task.progress is not None:
        wire["_meta"] = task.progress.to_meta()
    return wire


def decode_task(
    value: object, *, where: str = "task", code: int = INTERNAL_ERROR, strict: bool = False
) -> Task:
    """Decode the flat Task fields plus the DetailedTask payloads.

    ``strict=False`` (the client's reading) accepts a missing ``ttlMs`` or ``lastUpdatedAt`` from
    servers that deviate; ``strict=True`` requires them as the schema does.
    """
    data = read.obj(value, where, code)
    created = read.timestamp(data, "createdAt", where, code)
    status = read.status(data, where, code)
    if strict:
        ttl_ms = read.required_nullable_millis(data, "ttlMs", where, code)
        updated = read.timestamp(data, "lastUpdatedAt", where, code)
    else:
        ttl_ms = read.opt_millis(data, "ttlMs", where, code)
        updated = read.timestamp(data, "lastUpdatedAt", where, code) if "lastUpdatedAt" in data else created
    result = read.opt_object(data, "result", where, code)
    error_raw = data.get("error")
    error = read.jsonrpc_error(error_raw, f"{where}.error", code) if error_raw is not None else None
    requests_raw = data.get("inputRequests")
    input_requests = (
        read.input_requests(requests_raw, f"{where}.inputRequests", code) if requests_raw is not None else {}
    )
    return Task(
        task_id=read.string(data, "taskId", where, code),
        status=status,
        status_message=read.opt_string(data, "statusMessage", where, code),
        created_at=created,
        last_updated_at=updated,
        ttl_ms=ttl_ms,
        poll_interval_ms=read.opt_millis(data, "pollIntervalMs", where, code),
        result=dict(result) if result is not None else None,
        error=error,
        input_requests=input_requests,
        progress=Progress.from_meta(data.get("_meta")),
    )


# --- results -----------------------------------------------------------------------------------


def encode_create_task_result(task: Task) -> dict[str, Any]:
    """The flat answer to ``tools/call``: ``resultType: "task"`` plus the Task fields."""
    return {"resultType": "task", **encode_task(task)}


def decode_create_task_result(value: object) -> Task:
    data = read.obj(value, "CreateTaskResult", INTERNAL_ERROR)
    if data.get("resultType") != "task":
        raise PeerProtocolError("CreateTaskResult: resultType must be 'task'", jsonrpc_code=INTERNAL_ERROR)
    return decode_task(data, where="CreateTaskResult")


def encode_get_task_result(task: Task) -> dict[str, Any]:
    """``tasks/get``: ``resultType: "complete"``, the Task, and its status-specific payload."""
    wire: dict[str, Any] = {"resultType": "complete", **encode_task(task)}
    if task.status is TaskStatus.COMPLETED and task.result is not None:
        wire["result"] = dict(task.result)
    elif task.status is TaskStatus.FAILED:
        error = task.error or JsonRpcError(INTERNAL_ERROR, task.status_message or "task failed")
        wire["error"] = error.to_wire()
    elif task.status is TaskStatus.INPUT_REQUIRED:
        wire["inputRequests"] = {key: dict(request) for key, request in task.input_requests.items()}
    return wire


def decode_get_task_result(value: object) -> Task:
    """Decode ``tasks/get`` (a missing ``resultType`` is tolerated; a wrong one is not)."""
    data = read.obj(value, "GetTaskResult", INTERNAL_ERROR)
    result_type = data.get("resultType", "complete")
    if result_type not in ("complete", "task"):  # "task" appears in SEP examples (errata 3)
        raise PeerProtocolError(
            f"GetTaskResult: unexpected resultType {result_type!r}", jsonrpc_code=INTERNAL_ERROR
        )
    return decode_task(data, where="GetTaskResult")


# --- requests ----------------------------------------------------------------------------------


def encode_task_id_params(task_id: str) -> dict[str, Any]:
    return {"taskId": task_id}


def decode_task_id_params(params: object) -> str:
    data = read.obj(params, "params")
    return read.string(data, "taskId", "params")


def encode_update_params(task_id: str, input_responses: Mapping[str, Any]) -> dict[str, Any]:
    return {"taskId": task_id, "inputResponses": dict(input_responses)}


def decode_update_params(params: object) -> tuple[str, dict[str, Mapping[str, Any]]]:
    data = read.obj(params, "params")
    task_id = read.string(data, "taskId", "params")
    responses = read.obj(data.get("inputResponses"), "params.inputResponses")
    return task_id, {
        key: read.obj(value, f"params.inputResponses[{key!r}]") for key, value in responses.items()
    }


def encode_tasks_notification(task: Task) -> dict[str, Any]:
    """``notifications/tasks``: params are the full DetailedTask."""
    params = encode_get_task_result(task)
    del params["resultType"]
    return {"method": "notifications/tasks", "params": params}


# --- negotiation -------------------------------------------------------------------------------


def request_capability_meta() -> dict[str, Any]:
    """The per-request ``_meta`` entry that declares the extension."""
    return {CLIENT_CAPABILITIES_META_KEY: {"extensions": {EXTENSION_ID: {}}}}


def request_declares_tasks(meta: object) -> bool:
    """Whether a request's ``_meta`` declares the Tasks extension (never raises)."""
    if not isinstance(meta, Mapping):
        return False
    caps = meta.get(CLIENT_CAPABILITIES_META_KEY)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    if not isinstance(caps, Mapping):
        return False
    extensions = caps.get("extensions")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    return isinstance(extensions, Mapping) and isinstance(extensions.get(EXTENSION_ID), Mapping)  # pyright: ignore[reportUnknownMemberType]


def server_offers_tasks(capabilities: object) -> bool:
    """Whether ``server/discover`` capabilities carry the extension entry."""
    if not isinstance(capabilities, Mapping):
        return False
    extensions = capabilities.get("extensions")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    return isinstance(extensions, Mapping) and isinstance(extensions.get(EXTENSION_ID), Mapping)  # pyright: ignore[reportUnknownMemberType]


def missing_capability_error() -> JsonRpcError:
    """-32021 with ``requiredCapabilities`` naming the extension."""
    return JsonRpcError(
        code=MISSING_REQUIRED_CLIENT_CAPABILITY,
        message="Missing required client capability",
        data={"requiredCapabilities": {"extensions": {EXTENSION_ID: {}}}},
    )


def status_for_tool_result(result: Mapping[str, Any]) -> TaskStatus:
    """2026-07-28: any tool result, ``isError`` or not, ends the task ``completed``."""
    del result
    return TaskStatus.COMPLETED


def invalid_task_id_error(task_id: str, *, expired: bool = False) -> JsonRpcError:
    reason = "Task has expired" if expired else "Task not found"
    return JsonRpcError(
        code=INVALID_PARAMS, message=f"Failed to retrieve task: {reason}", data={"taskId": task_id}
    )
