"""mcp 1.x servers: routing the SDK's typed requests to the 2025-11-25 task service.

``tools/list`` and ``tools/call`` are wrapped and ``tasks/get|result|list|cancel`` answered by
:class:`~mcp_tasks_compat._server.Tasks2025Service`, which decides everything the peer sees and
serves a ``tools/call`` from plan to answer. Here: typed requests become wire params, a request
becomes a :class:`~.sessions.SessionCaller` (with the run primitive), the tool's own handler is the
task's work (:mod:`.runs`), and the service's errors become ``McpError`` (:func:`_service_errors`,
the one mapping of this adapter).
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from contextlib import contextmanager
from functools import partial
from typing import Any

import anyio
import mcp.types as types
from mcp.server.lowlevel.server import request_ctx

from ..._engine import TaskPolicy
from ..._server import Tasks2025Service
from ..._server.task_tools import listed as handoff_listing
from ...errors import INTERNAL_ERROR, PeerProtocolError, TaskStoreError
from .messages import WireResult, jsonrpc_error
from .runs import RequestHandler, call_original
from .sessions import (
    SessionCaller,
    SessionTasks,
    abandon_request,
    authenticated_principal,
    current_session,
    wire_params,
)

__all__ = ["TaskHandlers"]


class TaskHandlers:
    """The request handlers: ``tools/list`` and ``tools/call`` wrapped, ``tasks/*`` routed to the service."""

    detach_runs: bool = True
    """Internal switch, for the benchmarks only: ``False`` lets a run keep its request's whole
    context (the HTTP request, the stream callbacks), as before runs were detached."""

    def __init__(self, tasks: TaskPolicy) -> None:
        self.tasks = tasks
        self.engine = tasks.engine
        self.service = Tasks2025Service(tasks)

    # --- who is asking ----------------------------------------------------------------------------

    def _session(self) -> SessionTasks:
        session = current_session.get()
        if session is None:
            raise jsonrpc_error(
                INTERNAL_ERROR, "mcp-tasks-compat: this request did not arrive through the server's run()"
            )
        return session

    def _caller(self, *, trace_carrier: Mapping[str, Any] | None = None) -> SessionCaller:
        session = self._session()
        context = request_ctx.get()
        return SessionCaller(
            principal=authenticated_principal(context.request),
            session_key=None if session.stateless else session.key,
            speaks_tasks=declared_tasks(context.session),
            session=session,
            context=context,
            detach=self.detach_runs,
            trace_carrier=trace_carrier,
        )

    # --- tools ------------------------------------------------------------------------------------

    def make_list_tools(self, original: RequestHandler) -> RequestHandler:
        async def list_tools(req: types.ListToolsRequest | None) -> types.ServerResult:
            result = await original(req)
            if not isinstance(result.root, types.ListToolsResult):
                return result
            tools: list[types.Tool] = []
            for tool in result.root.tools:
                declared = None if tool.execution is None else tool.execution.model_dump(exclude_none=True)
                execution = self.service.tool_execution(tool.name, declared)
                if execution is not None:
                    tool = tool.model_copy(
                        update={"execution": types.ToolExecution.model_validate(execution)}
                    )
                tools.append(tool)
            return types.ServerResult(result.root.model_copy(update={"tools": self._handed(tools)}))

        return list_tools

    def _handed(self, tools: list[types.Tool]) -> list[types.Tool]:
        """The listing as the plain hand-off shows it to this session (``_server.task_tools.listed``)."""
        handoff = self.service.handoff
        if handoff.deadline_s is None:
            return tools
        plain_client = not declared_tasks(request_ctx.get().session)
        by_name = {tool.name: tool for tool in tools}
        wire = [tool.model_dump(by_alias=True, mode="json", exclude_none=True) for tool in tools]
        shown: list[types.Tool] = []
        for listed in handoff_listing(handoff, wire, plain_client=plain_client):
            tool = by_name.get(str(listed.get("name")))
            if tool is None:  # a task tool the server did not register (the install form)
                shown.append(types.Tool.model_validate(listed))
            elif "outputSchema" not in listed and tool.outputSchema is not None:
                shown.append(tool.model_copy(update={"outputSchema": None}))  # it may answer a hand-off
            else:
                shown.append(tool)
        return shown

    def make_call_tool(self, original: RequestHandler) -> RequestHandler:
        async def call_tool(req: types.CallToolRequest) -> types.ServerResult:
            params = wire_params(req, only={"name", "task"})
            params["arguments"] = req.params.arguments  # validated by the SDK: not copied
            meta = req.params.meta
            caller = self._caller(trace_carrier=meta.model_dump() if meta is not None else None)
            with _service_errors():
                return await self.service.call_tool(
                    params,
                    caller,
                    work=partial(call_original, original, req),
                    plain=partial(original, req),
                    answer=WireResult.of,
                    progress=_progress_sender(caller.context),
                )

        return call_tool

    # --- tasks/* ----------------------------------------------------------------------------------

    async def _serve(self, method: str, req: Any) -> types.ServerResult:
        with _service_errors():
            return WireResult.of(await self.service.serve(method, wire_params(req), self._caller()))

    async def get_task(self, req: types.GetTaskRequest) -> types.ServerResult:
        return await self._serve("tasks/get", req)

    async def list_tasks(self, req: types.ListTasksRequest) -> types.ServerResult:
        return await self._serve("tasks/list", req)

    async def cancel_task(self, req: types.CancelTaskRequest) -> types.ServerResult:
        return await self._serve("tasks/cancel", req)

    async def get_task_result(self, req: types.GetTaskPayloadRequest) -> types.ServerResult:
        """``tasks/result``, stopped without an answer when the peer goes away."""
        session = self._session()
        waiter = anyio.CancelScope()
        session.waiters.add(waiter)
        if session.closed.is_set():
            waiter.cancel()
        try:
            with waiter:
                return await self._serve("tasks/result", req)
        finally:
            session.waiters.discard(waiter)
        abandon_request()  # reached only when the waiter was cancelled: the peer is gone


def _progress_sender(context: Any) -> Any:
    """:func:`_send_progress` for the request ``context`` is of if it sent a progress token, else
    ``None``: a waiting plain call then starts no heartbeat (the bench's section 10)."""
    token = None if context.meta is None else getattr(context.meta, "progressToken", None)
    return None if token is None else partial(_send_progress, context, token)


async def _send_progress(
    context: Any, token: Any, progress: float, total: float | None, message: str | None
) -> bool:
    """A ``notifications/progress`` for the request ``context`` is of, with its ``token``."""
    await context.session.send_progress_notification(
        token, progress, total, message, related_request_id=str(context.request_id)
    )
    return True


def declared_tasks(session: Any) -> bool:
    """Whether the session's client declared ``capabilities.tasks`` at ``initialize``: it speaks
    2025-11-25 tasks, so the plain hand-off leaves it alone."""
    params = getattr(session, "client_params", None)
    capabilities = getattr(params, "capabilities", None)
    return getattr(capabilities, "tasks", None) is not None


@contextmanager
def _service_errors() -> Generator[None]:
    """The service's refusals (and a store that cannot answer) as JSON-RPC errors; the session lives on."""
    try:
        yield
    except PeerProtocolError as exc:
        raise jsonrpc_error(exc.jsonrpc_code, exc.message, exc.data) from None
    except TaskStoreError as exc:
        raise jsonrpc_error(INTERNAL_ERROR, exc.message) from None
