"""mcp 2.x client: the ``tasks/*`` request models and the two wires that send them.

Kept apart from :mod:`.client` so the models and the per-dialect wire objects (what the
followers drive: ``tasks/get`` and ``tasks/cancel`` on both, ``tasks/result`` on
:class:`Wire2025`, ``tasks/update`` on :class:`Wire2026`) can be read without the session
plumbing. :func:`to_result` is the one way a result JSON becomes the SDK's ``CallToolResult``.
The JSON itself is read by the core codecs; only discriminators and parameter names are typed here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, Protocol

import mcp_types
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, REQUEST_TIMEOUT
from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from ..._client import (
    PushLink,
    RemoteError,
    StatusListener,
)
from ...core import _codec_2025 as codec_2025
from ...core import _codec_2026 as codec_2026
from ...core._model import Task
from ...dialects import DIALECT_2025_11_25, DIALECT_2026_07_28
from ...errors import INTERNAL_ERROR

__all__ = [
    "INPUT_RESPONSES",
    "RawResult",
    "SessionRoutes",
    "TaskHandle",
    "TaskStatusParams",
    "Wire2025",
    "Wire2026",
    "WireBase",
    "answer_input",
    "raw_json",
    "remote",
    "to_result",
]


# --- wire models (SEP-2663 and 2025-11-25 tasks/*; the JSON is read by the core codecs) -------


class TaskHandle(mcp_types.Result):
    """The SEP-2663 ``CreateTaskResult`` (flat, ``resultType: "task"``) as the claim model.

    Only the discriminator is typed: every Task field stays raw (``extra="allow"``) and is read
    by :mod:`..core._codec_2026`, so one decoder serves every path and a deviating server is
    judged once.
    """

    model_config = ConfigDict(extra="allow")

    result_type: Literal["task"] = "task"


class RawResult(mcp_types.Result):
    """Accepts any result object; the codecs do the reading."""

    model_config = ConfigDict(extra="allow")


class _TaskIdParams(mcp_types.RequestParams):
    task_id: str


class _GetTaskRequest(mcp_types.Request[_TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: _TaskIdParams
    name_param = "taskId"


class _CancelTaskRequest(mcp_types.Request[_TaskIdParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: _TaskIdParams
    name_param = "taskId"


class _UpdateParams(mcp_types.RequestParams):
    task_id: str
    input_responses: dict[str, Any]


class _UpdateTaskRequest(mcp_types.Request[_UpdateParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    params: _UpdateParams
    name_param = "taskId"


_INPUT_REQUEST: TypeAdapter[mcp_types.InputRequest] = TypeAdapter(mcp_types.InputRequest)
INPUT_RESPONSES: TypeAdapter[mcp_types.InputResponses] = TypeAdapter(mcp_types.InputResponses)


class _TaskResultRequest(mcp_types.Request[_TaskIdParams, Literal["tasks/result"]]):
    method: Literal["tasks/result"] = "tasks/result"
    params: _TaskIdParams


class TaskStatusParams(mcp_types.NotificationParams):
    model_config = ConfigDict(extra="allow")


def raw_json(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(by_alias=True, mode="json", exclude_unset=True)


def remote(error: MCPError) -> RemoteError:
    return RemoteError(error.code, error.message, error.data, timed_out=error.code == REQUEST_TIMEOUT)


# --- the two wires -----------------------------------------------------------------------------


class SessionRoutes(Protocol):
    """What a wire asks of the session's configuration (``session_config.SessionConfig``)."""

    def listen(self, task_id: str, listener: StatusListener) -> Callable[[], None]: ...

    def push_link(self, session: ClientSession) -> PushLink | None: ...


async def answer_input(session: ClientSession, key: str, request: Mapping[str, Any]) -> dict[str, Any]:
    """One input request (a task's or a round's) through the session's own callback table."""
    try:
        parsed = _INPUT_REQUEST.validate_python(dict(request), by_name=False)
    except ValidationError as error:
        raise RemoteError(
            INVALID_PARAMS, f"unreadable input request ({error.error_count()} validation error(s))"
        ) from None
    params = parsed.params
    context = ClientRequestContext(
        session=session, request_id=key, meta=params.meta if params is not None else None
    )
    answer = await session.dispatch_input_request(context, parsed)
    if isinstance(answer, mcp_types.ErrorData):
        raise RemoteError(answer.code, answer.message, answer.data)
    return answer.model_dump(by_alias=True, mode="json", exclude_none=True)


async def to_result(
    session: ClientSession, payload: Mapping[str, Any], *, tool: str | None
) -> mcp_types.CallToolResult:
    """A tool result JSON as the SDK's ``CallToolResult``, checked as ``ClientSession.call_tool`` checks one.

    The SDK's own public check (``ClientSession.validate_tool_result``: the tool's declared output
    schema, listed once and cached by the session; ``RuntimeError`` when the structured content
    does not conform), skipped for an ``isError`` result as the SDK skips it, and for ``tool=None``.
    """
    result = mcp_types.CallToolResult.model_validate(dict(payload), by_name=False)
    if tool is not None and not result.is_error:
        await session.validate_tool_result(tool, result)
    return result


class WireBase:
    """What both wires share: the session, its routes, sending one ``tasks/*`` request, the result."""

    def __init__(self, session: ClientSession, config: SessionRoutes | None) -> None:
        self._session = session
        self._config = config

    async def to_result(self, payload: Mapping[str, Any], *, tool: str | None) -> mcp_types.CallToolResult:
        return await to_result(self._session, payload, tool=tool)

    async def _send(
        self, request: mcp_types.Request[Any, Any], read_timeout: float | None = None
    ) -> dict[str, Any]:
        try:
            return raw_json(
                await self._session.send_request(
                    request, RawResult, request_read_timeout_seconds=read_timeout
                )
            )
        except MCPError as error:
            raise remote(error) from None


class Wire2026(WireBase):
    """SEP-2663: ``tasks/get`` carries the result or error inline; ``tasks/cancel`` is an ack."""

    @property
    def dialect(self) -> Literal["2026-07-28"]:
        return DIALECT_2026_07_28

    async def get(self, task_id: str, *, read_timeout: float | None = None) -> Task:
        raw = await self._send(_GetTaskRequest(params=_TaskIdParams(task_id=task_id)), read_timeout)
        return codec_2026.decode_get_task_result(raw)

    async def cancel(self, task_id: str) -> Task | None:
        await self._send(_CancelTaskRequest(params=_TaskIdParams(task_id=task_id)))
        return None

    @property
    def push(self) -> PushLink | None:
        """``notifications/tasks`` come only on a listen stream (the session's push link)."""
        return self._config.push_link(self._session) if self._config is not None else None

    async def answer_input(self, key: str, request: Mapping[str, Any]) -> dict[str, Any]:
        return await answer_input(self._session, key, request)

    async def update(self, task_id: str, responses: Mapping[str, Mapping[str, Any]]) -> None:
        params = _UpdateParams(task_id=task_id, input_responses={k: dict(v) for k, v in responses.items()})
        await self._send(_UpdateTaskRequest(params=params))


class Wire2025(WireBase):
    """2025-11-25 over 2.x: ``tasks/*`` are custom methods here, so the public path carries them."""

    @property
    def dialect(self) -> Literal["2025-11-25"]:
        return DIALECT_2025_11_25

    async def get(self, task_id: str, *, read_timeout: float | None = None) -> Task:
        raw = await self._send(_GetTaskRequest(params=_TaskIdParams(task_id=task_id)), read_timeout)
        return codec_2025.decode_task(raw, where="tasks/get", code=INTERNAL_ERROR)

    async def result_payload(self, task_id: str) -> dict[str, Any]:
        raw = await self._send(_TaskResultRequest(params=_TaskIdParams(task_id=task_id)))
        return codec_2025.decode_task_payload(raw, task_id)

    async def cancel(self, task_id: str) -> Task | None:
        raw = await self._send(_CancelTaskRequest(params=_TaskIdParams(task_id=task_id)))
        return codec_2025.decode_task(raw, where="tasks/cancel", code=INTERNAL_ERROR)

    def listen(self, task_id: str, listener: StatusListener) -> Callable[[], None]:
        """``notifications/tasks/status``, routed by the session's status binding."""
        if self._config is None:
            return lambda: None
        return self._config.listen(task_id, listener)
