"""mcp 1.x servers: the messages we send as exact wire JSON, and the input requests of a tool body.

Our results are sent as the exact wire JSON the codec builds (:class:`WireResult`): the SDK
serializes with ``exclude_none``, which would drop the required ``"ttl": null`` of an unlimited
task. The public input functions of :mod:`...server` come here for the 1.x pieces: the ordinary
server-to-client request of a plain call (:func:`plain_input`), the client's declared
capabilities (:func:`undeclared_capability`) and the SDK's result types (:func:`input_result`).
Kept apart from :mod:`.server` (the ``run`` wrapping) and :mod:`.task_handlers` (the request
handlers), which both send these.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp.types as types
from mcp.server.lowlevel.server import request_ctx
from mcp.server.session import ServerSession
from mcp.shared.exceptions import McpError
from mcp.shared.message import ServerMessageMetadata
from pydantic import ConfigDict, PrivateAttr, ValidationError

from ...errors import INVALID_PARAMS

__all__ = [
    "WireNotification",
    "WireResult",
    "input_result",
    "jsonrpc_error",
    "plain_input",
    "send_input",
    "undeclared_capability",
]


class WireResult(types.ServerResult):
    """A result whose wire JSON is ours, sent unchanged (``"ttl": null`` survives)."""

    _wire: dict[str, Any] = PrivateAttr(default_factory=lambda: dict[str, Any]())

    @classmethod
    def of(cls, wire: Mapping[str, Any]) -> WireResult:
        result = cls(types.EmptyResult())
        result._wire = dict(wire)
        return result

    def model_dump(self, **_: Any) -> dict[str, Any]:
        return dict(self._wire)


class WireNotification(types.ServerNotification):
    """A notification whose wire JSON is ours, sent unchanged."""

    _wire: dict[str, Any] = PrivateAttr(default_factory=lambda: dict[str, Any]())

    @classmethod
    def of(cls, wire: Mapping[str, Any]) -> WireNotification:
        notification = cls(types.TaskStatusNotification.model_validate(wire))
        notification._wire = dict(wire)
        return notification

    def model_dump(self, **_: Any) -> dict[str, Any]:
        return dict(self._wire)


class _WireRequest(types.ServerRequest):
    """A server-to-client request whose wire JSON is ours (params and ``_meta`` exactly as built)."""

    _wire: dict[str, Any] = PrivateAttr(default_factory=lambda: dict[str, Any]())

    @classmethod
    def of(cls, wire: Mapping[str, Any]) -> _WireRequest:
        request = cls(types.PingRequest(method="ping"))
        request._wire = dict(wire)
        return request

    def model_dump(self, **_: Any) -> dict[str, Any]:
        return dict(self._wire)


class _RawAnswer(types.Result):
    """Any result object the client answers; :func:`input_result` gives it the SDK's type."""

    model_config = ConfigDict(extra="allow")


_RESULT_TYPES: Mapping[str, type[types.Result]] = {
    "elicitation/create": types.ElicitResult,
    "sampling/createMessage": types.CreateMessageResult,
    "roots/list": types.ListRootsResult,
}

_CAPABILITIES: Mapping[str, str] = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}


async def send_input(
    sdk_session: ServerSession, request: Mapping[str, Any], related_request_id: types.RequestId
) -> dict[str, Any]:
    """One input request on the stream of ``related_request_id``; the client's answer as wire JSON."""
    answer = await sdk_session.send_request(
        _WireRequest.of(request),
        _RawAnswer,
        metadata=ServerMessageMetadata(related_request_id=related_request_id),
    )
    return answer.model_dump(by_alias=True, mode="json", exclude_unset=True)


async def plain_input(method: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """A plain call's input: the ordinary request, on the stream of the current ``tools/call``."""
    try:
        context = request_ctx.get()
    except LookupError:
        raise RuntimeError(
            f"mcp_tasks_compat.server: {method} can only be asked from inside a tool call"
        ) from None
    request: dict[str, Any] = {"method": method}
    if params:
        request["params"] = dict(params)
    return await send_input(context.session, request, context.request_id)


def undeclared_capability(method: str) -> str | None:
    """The client capability ``method`` needs when the session's client did not declare it."""
    try:
        context = request_ctx.get()
    except LookupError:
        return None
    client = context.session.client_params
    if client is None:
        return None
    name = _CAPABILITIES.get(method)
    if name is None:
        return None
    return name if getattr(client.capabilities, name, None) is None else None


def input_result(method: str, answer: Mapping[str, Any]) -> Any:
    """The client's answer as the SDK's result type (``ElicitResult``, ...)."""
    model = _RESULT_TYPES.get(method)
    if model is None:
        return dict(answer)
    try:
        return model.model_validate(dict(answer))
    except ValidationError as exc:
        raise jsonrpc_error(
            INVALID_PARAMS, f"the client's answer to {method} is not a valid {model.__name__}: {exc}"
        ) from None


def jsonrpc_error(code: int, message: str, data: Any = None) -> McpError:
    return McpError(types.ErrorData(code=code, message=message, data=data))
