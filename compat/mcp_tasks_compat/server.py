"""Task-capable tools on mcp 1.x and 2.x; one 2.x server serves both dialects.

Declare per-tool task support once, the same way on both majors::

    tasks = ServerTasks(tools={"build": "optional", "deploy": "required"})

then enable it on the server kind you have:

* mcp 1.x low-level ``Server`` or ``FastMCP``, mcp 2.x low-level ``Server``: ``tasks.install(server)``;
* mcp 2.x ``MCPServer`` (extensions are fixed at construction):
  ``MCPServer("name", **tasks.mcpserver_kwargs(lifespan=my_lifespan))``.

Inside a tool body, :func:`report_status` sets the task's status message and
:func:`current_task` tells whether the call runs as a task. In a plain call both are no-ops by
design, so one tool body serves both kinds of call.

:func:`elicit`, :func:`create_message` and :func:`list_roots` ask the client for input from
inside a tool body. Run as a task, the task goes ``input_required`` until the client answers (in
2026-07-28 through ``inputRequests`` and ``tasks/update``, in 2025-11-25 through a request
delivered on the client's open ``tasks/result``); in a plain call they are the ordinary
server-to-client requests of the current ``tools/call``. They return the installed SDK's own
result types (``ElicitResult``, ``CreateMessageResult``, ``ListRootsResult``).

This module imports no ``mcp``: the adapter for the installed major is imported on first use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import anyio
import anyio.lowlevel

from . import _engine
from ._adapters import get_adapter
from ._detect import refuse_unsupported
from ._engine import DEFAULT_TTL_FLOOR_MS, InMemoryTaskStore, PollPolicy, TaskPolicy, TaskStore
from .core.model import Task
from .dialects import DIALECT_2025_11_25, TaskSupport
from .errors import TaskStateError

__all__ = [
    "DEFAULT_TTL_FLOOR_MS",
    "InMemoryTaskStore",
    "PollPolicy",
    "ServerTasks",
    "TaskStore",
    "TaskSupport",
    "create_message",
    "current_task",
    "elicit",
    "list_roots",
    "report_status",
]


class ServerTasks(TaskPolicy):
    """Task support for one server: which tools may run as tasks, and how tasks are kept.

    ``tools`` maps tool names to ``"optional" | "required" | "forbidden"``; tools not listed get
    ``default_support``. ``ttl_floor_ms`` is the least TTL a task gets (default one hour),
    ``poll_policy`` the adaptive poll hint, ``store`` where tasks live (in memory by default).
    ``dialects`` limits which task dialects are served; ``None`` serves every dialect the
    installed SDK can, and naming one it cannot is refused here, at construction.
    """

    def install(self, server: Any) -> None:
        """Enable tasks on an already-built server (1.x ``Server``/``FastMCP``, 2.x low-level ``Server``).

        An already-built 2.x ``MCPServer`` is refused with the form to use instead.
        """
        get_adapter().server.install(self, server)

    def mcpserver_kwargs(self, **user_kwargs: Any) -> dict[str, Any]:
        """Keyword arguments for ``MCPServer(...)`` on mcp 2.x, composed with the user's own.

        Pass your own ``lifespan``, ``extensions`` and ``middleware`` here rather than to
        ``MCPServer`` directly; they are composed with ours. Refused on mcp 1.x.
        """
        refuse_unsupported(["MCPServer"], side="server")
        return get_adapter().server.mcpserver_kwargs(self, **user_kwargs)


async def report_status(message: str) -> None:
    """Set the running task's status message (rate-bounded). Does nothing in a plain call."""
    await _engine.report_status(message)


def current_task() -> Task | None:
    """The task this tool call runs as (its state now), or ``None`` for a plain call.

    Each call reads the task's latest state, so inside the tool's cancel handler (a ``finally`` or
    an ``except`` for the cancellation) it says ``cancelled``; the returned ``Task`` itself is a
    frozen value that does not change afterwards.
    """
    run = _engine.current_run()
    if run is None:
        return None
    _engine_of_run, record = run
    return record.task


# --- input from the client -----------------------------------------------------------------------


def _wire(value: Any) -> Any:
    """SDK models (``SamplingMessage``, ``ModelPreferences``, ...) as wire JSON; JSON values as they are."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(by_alias=True, mode="json", exclude_none=True)
    if isinstance(value, Mapping):
        return {str(key): _wire(item) for key, item in cast("Mapping[object, Any]", value).items()}
    if isinstance(value, (list, tuple)):
        return [_wire(item) for item in cast("Sequence[Any]", value)]
    return value


async def _ask(method: str, params: dict[str, Any]) -> Any:
    """One input request: relayed through the task in a task, sent on the current request otherwise."""
    adapter = get_adapter().server
    run = _engine.current_run()
    if run is None:
        return adapter.input_result(method, await adapter.plain_input(method, params))
    engine, record = run
    if record.dialect == DIALECT_2025_11_25:
        missing = adapter.undeclared_capability(method)
        if missing is not None:
            # The session told the server in initialize that it cannot answer this: end the task
            # now, as a 2026-07-28 client would, rather than leave it input_required until its TTL.
            reason = (
                f"the client cannot answer {method}: it did not declare the {missing!r} capability "
                "(it has no callback for it)"
            )
            with anyio.CancelScope(shield=True):  # the cancel stops this very work: finish it first
                await engine.cancel(record.task.task_id, record.owner, strict=False, reason=reason)
            await anyio.lowlevel.checkpoint()  # the run's cancel scope ends the work here
            raise TaskStateError(f"task {record.task.task_id} was cancelled: {reason}")
    request: dict[str, Any] = {"method": method}
    if params:
        request["params"] = params
    answer = await engine.inputs.request(record, request)
    return adapter.input_result(method, answer)


async def elicit(message: str, requested_schema: Mapping[str, Any]) -> Any:
    """Ask the user for input (form-mode elicitation): the SDK's ``ElicitResult``.

    ``requested_schema`` is the JSON schema of the form (an object of primitive properties), as
    ``ServerSession.elicit_form`` takes it. Check ``result.action`` (``"accept"``, ``"decline"``,
    ``"cancel"``) before reading ``result.content``. A JSON-RPC error answer raises the SDK's
    error in a plain call; in a task, a client that cannot answer ends the task ``cancelled``.
    """
    params = {"mode": "form", "message": message, "requestedSchema": _wire(dict(requested_schema))}
    return await _ask("elicitation/create", params)


async def create_message(
    messages: Sequence[Any],
    *,
    max_tokens: int,
    system_prompt: str | None = None,
    include_context: str | None = None,
    temperature: float | None = None,
    stop_sequences: Sequence[str] | None = None,
    metadata: Mapping[str, Any] | None = None,
    model_preferences: Any = None,
) -> Any:
    """Ask the client's model for a completion (sampling): the SDK's ``CreateMessageResult``.

    The keywords are ``ServerSession.create_message``'s. ``messages`` and ``model_preferences``
    may be the SDK's models (``SamplingMessage``, ``ModelPreferences``) or their wire JSON.
    """
    params: dict[str, Any] = {"messages": _wire(list(messages)), "maxTokens": max_tokens}
    optional = {
        "systemPrompt": system_prompt,
        "includeContext": include_context,
        "temperature": temperature,
        "stopSequences": list(stop_sequences) if stop_sequences is not None else None,
        "metadata": _wire(metadata) if metadata is not None else None,
        "modelPreferences": _wire(model_preferences) if model_preferences is not None else None,
    }
    params.update({key: value for key, value in optional.items() if value is not None})
    return await _ask("sampling/createMessage", params)


async def list_roots() -> Any:
    """The client's roots: the SDK's ``ListRootsResult``."""
    return await _ask("roots/list", {})
