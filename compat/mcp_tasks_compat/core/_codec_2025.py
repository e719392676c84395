"""Codec for 2025-11-25 experimental tasks (SEP-1686): wire JSON ⇄ :class:`Task`.

Shapes: ``params.task = {ttl?}`` opt-in, nested ``{"task": {...}}`` CreateTaskResult, ``ttl`` /
``pollInterval``, ``tasks/get|result|list|cancel``, ``notifications/tasks/status``,
``capabilities.tasks``, ``execution.taskSupport`` and the related-task ``_meta``.

Semantics that differ from 2026-07-28: a tool result with ``isError: true`` makes the task
``failed`` here; the failure payload is fetched with ``tasks/result``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from ..dialects import TaskSupport
from ..errors import INTERNAL_ERROR, INVALID_PARAMS, PeerProtocolError
from . import _read as read
from ._model import Progress, Task, TaskStatus, format_timestamp

__all__ = [
    "MODEL_IMMEDIATE_RESPONSE_KEY",
    "RELATED_TASK_KEY",
    "SERVER_TASKS_CAPABILITY",
    "decode_create_task_result",
    "decode_list_tasks_result",
    "decode_task",
    "decode_task_id_params",
    "decode_task_params",
    "decode_task_payload",
    "decode_tool_task_support",
    "encode_create_task_result",
    "encode_list_tasks_result",
    "encode_status_notification",
    "encode_task",
    "encode_task_id_params",
    "encode_task_params",
    "encode_task_payload",
    "encode_tool_execution",
    "read_related_task",
    "related_task_meta",
    "server_offers_tool_tasks",
    "status_for_tool_result",
]

DIALECT: Final = "2025-11-25"
RELATED_TASK_KEY: Final = "io.modelcontextprotocol/related-task"
MODEL_IMMEDIATE_RESPONSE_KEY: Final = "io.modelcontextprotocol/model-immediate-response"

SERVER_TASKS_CAPABILITY: Final[Mapping[str, Any]] = {
    "list": {},
    "cancel": {},
    "requests": {"tools": {"call": {}}},
}
"""What a task-capable server puts under ``capabilities.tasks`` in ``initialize``."""


# --- the Task object ---------------------------------------------------------------------------


def encode_task(task: Task) -> dict[str, Any]:
    """The 2025-11-25 ``Task`` object (``ttl`` is required and written as null when unlimited)."""
    wire: dict[str, Any] = {"taskId": task.task_id, "status": task.status.value}
    if task.status_message is not None:
        wire["statusMessage"] = task.status_message
    wire["createdAt"] = format_timestamp(task.created_at)
    wire["lastUpdatedAt"] = format_timestamp(task.last_updated_at)
    wire["ttl"] = task.ttl_ms
    if task.poll_interval_ms is not None:
        wire["pollInterval"] = task.poll_interval_ms
    if task.progress is not None:
        wire["_meta"] = task.progress.to_meta()
    return wire


def decode_task(value: object, *, where: str = "task", code: int = INVALID_PARAMS) -> Task:
    """Decode a 2025-11-25 ``Task``. A missing ``ttl`` is read as unlimited (1.x servers drop null)."""
    data = read.obj(value, where, code)
    created = read.timestamp(data, "createdAt", where, code)
    return Task(
        task_id=read.string(data, "taskId", where, code),
        status=read.status(data, where, code),
        status_message=read.opt_string(data, "statusMessage", where, code),
        created_at=created,
        last_updated_at=read.timestamp(data, "lastUpdatedAt", where, code)
        if "lastUpdatedAt" in data
        else created,
        ttl_ms=read.opt_millis(data, "ttl", where, code),
        poll_interval_ms=read.opt_millis(data, "pollInterval", where, code),
        progress=Progress.from_meta(data.get("_meta")),
    )


# --- requests ----------------------------------------------------------------------------------


def encode_task_params(ttl_ms: int | None) -> dict[str, Any]:
    """``params.task`` of a task-augmented request (``{}`` asks the server for its default TTL)."""
    return {} if ttl_ms is None else {"ttl": ttl_ms}


def decode_task_params(params: object) -> dict[str, Any] | None:
    """``params.task`` of an incoming request: ``None`` when absent, else ``{"ttl": int | None}``."""
    data = read.obj(params, "params")
    if data.get("task") is None:
        return None
    task = read.obj(data["task"], "params.task")
    return {"ttl": read.opt_millis(task, "ttl", "params.task")}


def encode_task_id_params(task_id: str) -> dict[str, Any]:
    return {"taskId": task_id}


def decode_task_id_params(params: object) -> str:
    """``taskId`` of ``tasks/get|result|cancel`` params; -32602 when malformed."""
    data = read.obj(params, "params")
    return read.string(data, "taskId", "params")


# --- results -----------------------------------------------------------------------------------


def encode_create_task_result(task: Task, *, model_immediate_response: str | None = None) -> dict[str, Any]:
    """The nested ``{"task": {...}}`` answer to a task-augmented ``tools/call``."""
    wire: dict[str, Any] = {"task": encode_task(task)}
    if model_immediate_response is not None:
        wire["_meta"] = {MODEL_IMMEDIATE_RESPONSE_KEY: model_immediate_response}
    return wire


def decode_create_task_result(value: object) -> Task:
    data = read.obj(value, "CreateTaskResult", INTERNAL_ERROR)
    if "task" not in data:
        raise PeerProtocolError("CreateTaskResult: 'task' is required", jsonrpc_code=INTERNAL_ERROR)
    return decode_task(data["task"], where="CreateTaskResult.task", code=INTERNAL_ERROR)


def encode_list_tasks_result(tasks: Iterable[Task], next_cursor: str | None = None) -> dict[str, Any]:
    wire: dict[str, Any] = {"tasks": [encode_task(task) for task in tasks]}
    if next_cursor is not None:
        wire["nextCursor"] = next_cursor
    return wire


def decode_list_tasks_result(value: object) -> tuple[list[Task], str | None]:
    data = read.obj(value, "ListTasksResult", INTERNAL_ERROR)
    raw = data.get("tasks")
    if not isinstance(raw, list):
        raise PeerProtocolError("ListTasksResult: 'tasks' must be a list", jsonrpc_code=INTERNAL_ERROR)
    tasks = [decode_task(item, where=f"tasks[{i}]", code=INTERNAL_ERROR) for i, item in enumerate(raw)]  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    return tasks, read.opt_string(data, "nextCursor", "ListTasksResult", INTERNAL_ERROR)


def related_task_meta(task_id: str) -> dict[str, Any]:
    return {RELATED_TASK_KEY: {"taskId": task_id}}


def read_related_task(meta: object) -> str | None:
    """The related task id in a ``_meta`` object, or ``None`` (never raises)."""
    if not isinstance(meta, Mapping):
        return None
    related = meta.get(RELATED_TASK_KEY)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    if not isinstance(related, Mapping):
        return None
    task_id = related.get("taskId")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    return task_id if isinstance(task_id, str) else None


def encode_task_payload(task: Task) -> dict[str, Any]:
    """The ``tasks/result`` answer for a terminal task, with the related-task ``_meta`` merged in.

    Completed (and isError-failed) tasks answer the tool's result. A task that failed with a
    JSON-RPC error has no result payload: the server answers that error instead. Cancelled tasks
    answer an empty result carrying only ``_meta``.
    """
    payload: dict[str, Any] = dict(task.result) if task.result is not None else {}
    meta = dict(read.obj(payload.get("_meta") or {}, "result._meta", INTERNAL_ERROR))
    meta.update(related_task_meta(task.task_id))
    payload["_meta"] = meta
    return payload


def decode_task_payload(value: object, task_id: str) -> dict[str, Any]:
    """The tool result carried by ``tasks/result`` (related-task ``_meta`` removed)."""
    data = dict(read.obj(value, "tasks/result", INTERNAL_ERROR))
    meta = data.get("_meta")
    if isinstance(meta, Mapping):
        rest = {k: v for k, v in meta.items() if k != RELATED_TASK_KEY}  # pyright: ignore[reportUnknownVariableType]
        if rest:
            data["_meta"] = rest
        else:
            del data["_meta"]
    return data


def encode_status_notification(task: Task) -> dict[str, Any]:
    """A ``notifications/tasks/status`` message (params = the Task, no result payload)."""
    return {"method": "notifications/tasks/status", "params": encode_task(task)}


# --- capabilities and tools --------------------------------------------------------------------


def server_offers_tool_tasks(capabilities: object) -> bool:
    """Whether ``initialize`` capabilities offer task-augmented ``tools/call``.

    Accepts both ``requests.tools.call`` (1.27+) and the bare ``requests.tools`` of mcp 1.23-1.26.
    """
    if not isinstance(capabilities, Mapping):
        return False
    tasks = capabilities.get("tasks")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    if not isinstance(tasks, Mapping):
        return False
    requests = tasks.get("requests")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    return isinstance(requests, Mapping) and isinstance(requests.get("tools"), Mapping)  # pyright: ignore[reportUnknownMemberType]


def decode_tool_task_support(tool: object) -> TaskSupport:
    """A tool's ``execution.taskSupport``; absent or unknown values mean ``"forbidden"``."""
    if not isinstance(tool, Mapping):
        return "forbidden"
    execution = tool.get("execution")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    if not isinstance(execution, Mapping):
        return "forbidden"
    support = execution.get("taskSupport")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    if support == "optional":
        return "optional"
    if support == "required":
        return "required"
    return "forbidden"


def encode_tool_execution(support: TaskSupport) -> dict[str, Any]:
    return {"taskSupport": support}


def status_for_tool_result(result: Mapping[str, Any]) -> TaskStatus:
    """2025-11-25: a tool result with ``isError: true`` ends the task ``failed``."""
    return TaskStatus.FAILED if result.get("isError") is True else TaskStatus.COMPLETED
