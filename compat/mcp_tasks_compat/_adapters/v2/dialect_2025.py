"""2025-11-25 experimental tasks on an mcp 2.x server: routing ``Server.middleware`` to the service.

What the peer sees is decided by :class:`~mcp_tasks_compat._server.Tasks2025Service` (the same
object that answers on mcp 1.x); this middleware only routes. The 2.x runner sieves every handler
result on a handshake-era connection through the 2025 surface, which turns a nested
``CreateTaskResult`` into -32603; it trusts a middleware that answers without calling
``call_next`` (the probed private seam ``v2.server_middleware``), so this middleware:

* answers ``tools/call`` with ``params.task`` itself (the service serves it from plan to answer;
  the rest of the chain, without ``params.task``, is the task's work);
* answers ``tasks/get|result|list|cancel`` (not spec methods on 2.x; -32601 stays the answer on
  2026-07-28 for ``tasks/result`` and ``tasks/list`` because nothing else serves them);
* adds ``capabilities.tasks`` to the ``initialize`` result and ``execution.taskSupport`` to
  ``tools/list`` on those connections, by post-processing ``call_next``'s output.

It does so on every handshake-era connection, not only at 2025-11-25: mcp 1.23.0 clients use
this dialect while negotiating 2025-06-18 (their latest version), and a client that does not
know tasks never sends ``params.task`` or ``tasks/*``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

from ..._server import TASK_METHODS_2025, Tasks2025Service
from .progress import progress_sender
from .runtime import TasksRuntime, ToolResultWire, sdk_errors, tool_work, with_request

__all__ = ["Dialect2025Middleware", "as_dict"]


def as_dict(result: HandlerResult) -> dict[str, Any]:
    """A handler's result as wire JSON."""
    if result is None:
        return {}
    if isinstance(result, BaseModel):
        return result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dict(result)


class Dialect2025Middleware:
    """The ``Server.middleware`` entry that speaks 2025-11-25 tasks on handshake-era connections."""

    def __init__(self, runtime: TasksRuntime) -> None:
        self._runtime = runtime
        self.service = Tasks2025Service(runtime.tasks)
        self._modern_passes = runtime.serves_2026
        """A 2026-07-28 request passes straight through when the extension serves that dialect (its
        interceptor knows the request of a tool body); else a ``tools/call`` is noted here."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS and self._modern_passes:
            return await call_next(ctx)  # 2026-07-28: nothing here (the extension has its calls)
        with sdk_errors():
            return await self._dispatch(ctx, call_next)

    async def _dispatch(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.request_id is None:  # a notification
            return await call_next(ctx)
        method = ctx.method
        if method == "tools/call":
            # The tool body may ask for input; it needs to know its request (plain or task).
            return await with_request(ctx, lambda: self._any_tools_call(ctx, call_next))
        if method == "initialize":
            return self._advertise(await call_next(ctx))
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return await call_next(ctx)
        if method == "tools/list":
            return self._annotate_tools(await call_next(ctx))
        if method in TASK_METHODS_2025:
            return await self.service.serve(method, ctx.params, self._runtime.caller(ctx))
        return await call_next(ctx)

    async def _any_tools_call(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return await call_next(ctx)
        return await self.service.call_tool(
            ctx.params,
            self._runtime.caller(ctx, without_task=True),  # the run: the rest of the chain, no params.task
            work=tool_work(call_next),
            plain=lambda: call_next(ctx),
            answer=_as_handler_result,
            progress=progress_sender(ctx),
        )

    # --- what the handshake and tools/list say ---------------------------------------------------

    def _advertise(self, result: HandlerResult) -> HandlerResult:
        wire = as_dict(result)
        capability = self.service.capability()
        if wire.get("protocolVersion") not in HANDSHAKE_PROTOCOL_VERSIONS or capability is None:
            return result
        wire["capabilities"] = {
            **cast(Mapping[str, Any], wire.get("capabilities") or {}),
            "tasks": capability,
        }
        return wire

    def _annotate_tools(self, result: HandlerResult) -> HandlerResult:
        wire = as_dict(result)
        tools = wire.get("tools")
        if not isinstance(tools, list):
            return result
        annotated: list[Any] = []
        for tool in cast(list[Any], tools):
            name = cast(Mapping[str, Any], tool).get("name") if isinstance(tool, Mapping) else None
            declared = None
            if isinstance(name, str):
                declared = self.service.tool_execution(name, cast(Mapping[str, Any], tool).get("execution"))
            if declared is not None:
                tool = {**cast(Mapping[str, Any], tool), "execution": declared}
            annotated.append(tool)
        wire["tools"] = annotated
        return wire


def _as_handler_result(wire: Mapping[str, Any]) -> HandlerResult:
    """The service's answer as the SDK's: a tool's own result (a plain hand-off's call that ended
    in time) is the SDK's model again, as a plain call would have answered it."""
    if isinstance(wire, ToolResultWire):
        return wire.model
    return wire if isinstance(wire, dict) else dict(wire)
