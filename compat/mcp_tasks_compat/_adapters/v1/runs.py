"""mcp 1.x servers: a task's run, detached from the request that created it.

The run calls the tool's own handler (its ``CallToolResult`` becomes the task's result as wire
JSON) in a request context that keeps nothing of the exchange the create answer ends.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

import mcp.types as types
from mcp.shared.context import RequestContext
from mcp.shared.exceptions import McpError

from ..._engine import ToolCallFailure
from ...core._model import JsonRpcError
from ...errors import INTERNAL_ERROR
from ..shared import DetachedHttpRequest, compact_headers

__all__ = ["RequestHandler", "call_original", "detached_request_context"]

RequestHandler = Callable[[Any], Awaitable[types.ServerResult]]


def detached_request_context(context: RequestContext[Any, Any, Any]) -> RequestContext[Any, Any, Any]:
    """The request context a task's tool sees (``ctx`` of a FastMCP tool): the request's, minus
    what ends with the exchange (the HTTP request object, the SSE stream-close callbacks).

    Kept: request id and ``_meta`` (progress token), the session (the tool's back channel), the
    lifespan value, the SDK's ``experimental`` data, and the HTTP headers.
    """
    headers = compact_headers(getattr(context.request, "headers", None))
    return replace(
        context,
        request=None if headers is None else DetachedHttpRequest(headers),
        close_sse_stream=None,
        close_standalone_sse_stream=None,
    )


async def call_original(original: RequestHandler, req: types.CallToolRequest) -> dict[str, Any]:
    """The work of a task: the tool's own handler; its CallToolResult as wire JSON."""
    try:
        result = await original(req)
    except McpError as exc:
        error = exc.error
        raise ToolCallFailure(JsonRpcError(error.code, error.message, error.data)) from exc
    if not isinstance(result.root, types.CallToolResult):
        kind = type(result.root).__name__
        raise ToolCallFailure(
            JsonRpcError(INTERNAL_ERROR, f"the tool handler answered {kind}, not CallToolResult")
        )
    return result.root.model_dump(by_alias=True, mode="json", exclude_none=True)
