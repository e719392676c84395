"""mcp 2.x client: the ``tools/call`` requests the connections send, one function per kind.

The public one (:func:`call_publicly`, ``ClientSession.call_tool`` itself, which checks a plain
result against the tool's output schema) and two through private seams, probed at call time and
refused loudly when gone: a 2026-07-28 call that declines a task for itself
(:func:`call_declining_task`) and a 2025-11-25 task-augmented call, whose nested answer the
session's result sieve would reject (:func:`call_as_2025_task`). A result those two receive goes
through :func:`.task_wires.to_result`, the same check. The conversions of an ``input_required``
round are here too, as both the public and the private path need them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

import mcp_types
from mcp.client.extension import UnexpectedClaimedResult
from mcp.client.session import ClientSession
from mcp.shared.dispatcher import ProgressFnT
from mcp_types import CLIENT_CAPABILITIES_META_KEY

from ..._client import (
    InputReply,
    InputRound,
)
from ..._detect import sdk_info
from ...core import _codec_2025 as codec_2025
from ...core import _codec_2026 as codec_2026
from ...core._model import Task
from ...dialects import DIALECT_2025_11_25, TASKS_EXTENSION_ID
from ...errors import UnsupportedSdkError
from .task_wires import INPUT_RESPONSES, TaskHandle, to_result

__all__ = [
    "Answer",
    "SdkInputRound",
    "call_as_2025_task",
    "call_declining_task",
    "call_publicly",
    "input_responses",
    "input_round",
    "meta_arg",
    "reply_from_options",
]

_PROTOCOL_VERSION_HEADER = "mcp-protocol-version"

Answer = Task | mcp_types.CallToolResult | InputRound
"""What one ``tools/call`` can be answered with: a task, a result, or an ``input_required`` round
(a claimed result of another extension, kept for a caller that passed ``allow_claimed=True``,
travels as a ``CallToolResult`` in name only: it is handed back unchanged)."""


@dataclass(frozen=True)
class SdkInputRound(InputRound):
    """An ``input_required`` round that keeps the SDK's own answer, for a caller who asked for it."""

    sdk_result: mcp_types.InputRequiredResult | None = None


def _handle_json(handle: TaskHandle) -> dict[str, Any]:
    """A claimed task handle's wire JSON, read off the model rather than serialized (once per
    created task): its Task fields are kept raw (``extra="allow"``), so only the discriminator
    and ``_meta`` are fields."""
    wire: dict[str, Any] = dict(handle.model_extra or {})
    wire["resultType"] = handle.result_type
    if handle.meta is not None:
        wire["_meta"] = handle.meta
    return wire


def meta_arg(meta: dict[str, Any] | None) -> Any:
    return dict(meta) if meta else None


def input_round(answer: mcp_types.InputRequiredResult) -> SdkInputRound:
    """An ``input_required`` answer as the SDK-free round (its requests as wire JSON)."""
    requests = {
        key: request.model_dump(by_alias=True, mode="json", exclude_none=True)
        for key, request in (answer.input_requests or {}).items()
    }
    return SdkInputRound(requests, answer.request_state, answer)


def reply_from_options(options: Mapping[str, Any]) -> InputReply | None:
    """The caller's ``input_responses=`` / ``request_state=`` (the SDK's keywords) as the first reply."""
    responses: object = options.get("input_responses")
    state: object = options.get("request_state")
    if responses is None and state is None:
        return None
    raw: dict[str, Any] | None = None
    if responses is not None:
        validated = INPUT_RESPONSES.validate_python(responses, by_name=False)
        raw = cast(
            "dict[str, Any]",
            INPUT_RESPONSES.dump_python(validated, by_alias=True, mode="json", exclude_none=True),
        )
    return InputReply(raw, state if isinstance(state, str) else None)


def input_responses(reply: InputReply | None) -> mcp_types.InputResponses | None:
    """The previous round's answers as the SDK's ``input_responses=`` (``None``: a first call)."""
    if reply is None or reply.input_responses is None:
        return None
    raw = {key: dict(value) for key, value in reply.input_responses.items()}
    return INPUT_RESPONSES.validate_python(raw, by_name=False)


async def call_as_2025_task(
    session: ClientSession,
    name: str,
    arguments: dict[str, Any] | None,
    *,
    ttl_ms: int | None,
    meta: dict[str, Any] | None,
) -> Task | mcp_types.CallToolResult:
    """A 2025-11-25 task-augmented ``tools/call`` through ``_dispatcher.send_raw_request``."""
    params: dict[str, Any] = {"name": name, "task": codec_2025.encode_task_params(ttl_ms)}
    if arguments is not None:
        params["arguments"] = arguments
    if meta:
        params["_meta"] = dict(meta)
    dispatcher: Any = getattr(session, "_dispatcher", None)
    send_raw: Callable[..., Awaitable[dict[str, Any]]] | None = getattr(dispatcher, "send_raw_request", None)
    if send_raw is None:
        raise UnsupportedSdkError(
            f"mcp {sdk_info().mcp_version}: ClientSession._dispatcher.send_raw_request "
            "(feature v2.raw_request) is gone, and it is the only way a 2.x client can receive a "
            "2025-11-25 CreateTaskResult. "
            "fix: pip install 'mcp>=2.0,<=2.3' or report the release that removed it"
        )
    version = session.protocol_version or DIALECT_2025_11_25
    raw = await send_raw("tools/call", params, {"headers": {_PROTOCOL_VERSION_HEADER: version}})
    if "task" in raw:
        return codec_2025.decode_create_task_result(raw)
    # The server ran it as a plain call after all (e.g. it ignores params.task).
    return await to_result(session, raw, tool=name)


async def call_declining_task(
    session: ClientSession,
    name: str,
    arguments: dict[str, Any] | None,
    meta: dict[str, Any] | None,
    *,
    progress: ProgressFnT | None = None,
    read_timeout: float | None = None,
    reply: InputReply | None = None,
) -> Answer:
    """A 2026-07-28 ``tools/call`` whose per-request capabilities leave the Tasks extension out.

    A server reads the client's capabilities per request from ``_meta`` (SEP-2575), so this one
    call asks for no task while the session keeps the extension for the others. The SDK stamps
    the session's own capabilities over any ``_meta`` the caller passes, so the request is stamped
    here (private ``ClientSession._stamp``), edited, and sent through the raw-request seam
    (``v2.raw_request``); both are probed at call time and refused loudly when gone.
    """
    stamp: Callable[[dict[str, Any], dict[str, Any]], None] | None = getattr(session, "_stamp", None)
    send_raw: Callable[..., Awaitable[dict[str, Any]]] | None = getattr(
        getattr(session, "_dispatcher", None), "send_raw_request", None
    )
    if not callable(stamp) or send_raw is None:
        raise UnsupportedSdkError(
            f"mcp {sdk_info().mcp_version}: ClientSession._stamp or ._dispatcher.send_raw_request is gone, "
            "and they are how a 2.x client declines a task for one 2026-07-28 call (mode='plain'). "
            "fix: pip install 'mcp>=2.0,<=2.3', use mode='auto', or report the release that removed them"
        )
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    if meta:
        params["_meta"] = dict(meta)
    if reply is not None and reply.input_responses is not None:
        params["inputResponses"] = {key: dict(value) for key, value in reply.input_responses.items()}
    if reply is not None and reply.request_state is not None:
        params["requestState"] = reply.request_state
    data: dict[str, Any] = {"method": "tools/call", "params": params}
    options: dict[str, Any] = {}
    stamp(data, options)
    stamped: dict[str, Any] = data["params"].setdefault("_meta", {})
    capabilities = dict(stamped.get(CLIENT_CAPABILITIES_META_KEY) or {})
    declared = dict(capabilities.get("extensions") or {})
    extensions = {key: value for key, value in declared.items() if key != TASKS_EXTENSION_ID}
    if extensions:
        capabilities["extensions"] = extensions
    else:
        capabilities.pop("extensions", None)
    stamped[CLIENT_CAPABILITIES_META_KEY] = capabilities
    timeout: object = (
        read_timeout if read_timeout is not None else getattr(session, "_session_read_timeout_seconds", None)
    )
    if isinstance(timeout, (int, float)):
        options["timeout"] = timeout
    if progress is not None:  # the dispatcher sets the progress token from the request id
        options["on_progress"] = progress
    raw = await send_raw("tools/call", data["params"], options)
    if raw.get("resultType") == "task":  # a server that ignores per-request capabilities: followed
        return codec_2026.decode_create_task_result(raw)
    if raw.get("resultType") == "input_required":
        return input_round(mcp_types.InputRequiredResult.model_validate(raw, by_name=False))
    return await to_result(session, raw, tool=name)


async def call_publicly(
    session: ClientSession,
    name: str,
    arguments: dict[str, Any] | None,
    meta: dict[str, Any] | None,
    *,
    progress: ProgressFnT | None,
    read_timeout: float | None,
    reply: InputReply | None,
    allow_claimed: bool,
    keep_claims: bool = False,
) -> Answer:
    """A 2026-era ``tools/call`` through the public ``ClientSession.call_tool``.

    The base class's method, so a session subclass that overrides it is not re-entered;
    ``allow_claimed`` receives a task handle (the server decides), decoded here as a :class:`Task`.
    ``keep_claims`` (the caller's own ``allow_claimed=True``) hands back another extension's
    claimed result unchanged; without it that result raises ``UnexpectedClaimedResult``, as in the SDK.
    """
    answer = await ClientSession.call_tool(
        session,
        name,
        arguments,
        read_timeout,
        progress,
        meta=meta_arg(meta),
        input_responses=input_responses(reply),
        request_state=reply.request_state if reply is not None else None,
        allow_input_required=True,
        allow_claimed=allow_claimed or keep_claims,
    )
    if isinstance(answer, mcp_types.InputRequiredResult):
        return input_round(answer)
    if isinstance(answer, mcp_types.CallToolResult):
        return answer
    if isinstance(answer, TaskHandle):
        return codec_2026.decode_create_task_result(_handle_json(answer))  # a claimed task handle
    if keep_claims:
        return cast("mcp_types.CallToolResult", answer)  # another extension's claim, as the SDK returns it
    raise UnexpectedClaimedResult(answer)
