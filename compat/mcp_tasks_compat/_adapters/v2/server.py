"""Task-capable tools on an mcp 2.x server, in both dialects, on our own engine.

* 2026-07-28 connections: :class:`TasksExtension`, a subclass of the SDK's public ``Extension``
  (SEP-2133). It advertises ``io.modelcontextprotocol/tasks`` in ``server/discover``, turns a
  ``tools/call`` into a task in ``intercept_tool_call`` when the request declares the extension
  and the tool allows it, and serves ``tasks/get|update|cancel`` as ``MethodBinding``s scoped to
  2026-07-28.
* 2025-11-25 connections of the same server (e.g. an mcp 1.x client): the middleware in
  ``dialect_2025``, offered only when the SDK still has the seam it needs.
* The work runs in a task group owned by the server lifespan, composed with the user's.
* Input from inside a tool body (:mod:`..server`'s ``elicit`` / ``create_message`` /
  ``list_roots``): in a task the engine relays it (``inputRequests`` and ``tasks/update`` here;
  the ``tasks/result`` stream in ``dialect_2025``); in a plain call it is the ordinary request of the
  current ``tools/call`` (:func:`plain_input`), which a 2026-07-28 plain call cannot make.

``MCPServer`` fixes its extensions, lifespan and middleware when it is built, so it is enabled
with :func:`mcpserver_kwargs`; the low-level ``Server`` is enabled in place with :func:`install`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, cast

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding, RequestHandler, compose_tool_call_handler
from mcp.server.lowlevel.server import Server
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import decode_header_value
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND, CallToolRequestParams, RequestParams
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ValidationError

from ..._detect import SdkInfo, refuse_unsupported, sdk_info
from ..._engine import (
    InputRefused,
    InputRelay,
    Outcome,
    RoundTripAnswer,
    RoundTrips,
    TaskPolicy,
    TaskRecord,
    ToolCallFailure,
    current_run,
    pending_call,
    rounds_of_plain_call,
)
from ..._server import ToolCall2026, refuse_plain_call
from ...core import _codec_2026 as codec_2026
from ...dialects import ALL_DIALECTS, DIALECT_2026_07_28, TASKS_EXTENSION_ID, Dialect
from ...errors import HEADER_MISMATCH, PeerProtocolError, UnsupportedOptIn, UnsupportedOptInError
from .dialect_2025 import Dialect2025Middleware
from .push import push_middleware
from .runtime import (
    INPUT_CAPABILITIES,
    INPUT_RESULT_TYPES,
    TasksRuntime,
    ToolResultWire,
    current_request,
    declares_tasks,
    mcp_error,
    sdk_errors,
    send_input,
    tool_work,
    with_request,
)

__all__ = [
    "TasksExtension",
    "input_result",
    "install",
    "mcpserver_kwargs",
    "plain_input",
    "served_dialects",
    "undeclared_capability",
]

TASKS_PROTOCOL_VERSIONS: Final = frozenset({DIALECT_2026_07_28})
MCP_NAME_HEADER: Final = "mcp-name"

INSTALL_ON_MCPSERVER_FIX: Final = (
    "MCPServer(name, **tasks.mcpserver_kwargs(lifespan=..., extensions=[...], middleware=[...]))"
)


def served_dialects(tasks: TaskPolicy, info: SdkInfo | None = None) -> tuple[Dialect, ...]:
    """The dialects this server will speak: the ones asked for, else all the installed SDK can.

    2025-11-25 on 2.x needs the private seam ``v2.server_middleware``; asking for it on a release
    without the seam is refused loudly, not asking simply leaves it out.
    """
    info = info or sdk_info()
    if tasks.dialects is None:
        return tuple(d for d in ALL_DIALECTS if d in info.server_dialects)
    refuse_unsupported([f"dialect={d!r}" for d in tasks.dialects], side="server", info=info)
    return tasks.dialects


def _check_mcp_name(ctx: ServerRequestContext[Any, Any], task_id: str) -> None:
    """-32020 when an ``Mcp-Name`` header is present and names another task.

    The SDK checks the header only for its own name-bearing methods; some clients omit it for
    ``tasks/*``, so a missing header is accepted.
    """
    headers = getattr(ctx.request, "headers", None)
    if headers is None:
        return
    raw = headers.get(MCP_NAME_HEADER)
    if raw is None:
        return
    if decode_header_value(str(raw)) != task_id:
        raise PeerProtocolError(
            "Mcp-Name header does not match the request body's 'taskId' parameter",
            jsonrpc_code=HEADER_MISMATCH,
        )


class TasksExtension(Extension):
    """The Tasks extension (SEP-2663) for 2026-07-28 connections, on our engine."""

    identifier = TASKS_EXTENSION_ID

    def __init__(self, runtime: TasksRuntime) -> None:
        self._runtime = runtime
        self._service = runtime.service_2026

    def settings(self) -> dict[str, Any]:
        return {}

    def methods(self) -> Sequence[MethodBinding]:
        return [
            MethodBinding(
                "tasks/get", RequestParams, self.tasks_get, protocol_versions=TASKS_PROTOCOL_VERSIONS
            ),
            MethodBinding(
                "tasks/update", RequestParams, self.tasks_update, protocol_versions=TASKS_PROTOCOL_VERSIONS
            ),
            MethodBinding(
                "tasks/cancel", RequestParams, self.tasks_cancel, protocol_versions=TASKS_PROTOCOL_VERSIONS
            ),
        ]

    async def intercept_tool_call(
        self, params: CallToolRequestParams, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        with sdk_errors():
            return await with_request(ctx, lambda: self._tool_call(params, ctx, call_next))

    async def _tool_call(
        self, params: CallToolRequestParams, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            # Handshake era: the 2025-11-25 middleware (when served) made any task already, and the
            # work of such a task passes through here; a plain call to a required tool is refused
            # with the 2025-11-25 service's words, the same on both majors.
            if current_run() is None:
                refuse_plain_call(params.name, self._runtime.tasks.support_for(params.name))
                return await call_next(ctx)
            return await _with_round_trips(params, ctx, call_next, None)
        rounds = _rounds_of(params)
        meta: object = params.meta
        call = ToolCall2026(
            params.name,
            params.arguments,
            cast("Mapping[str, Any]", meta) if isinstance(meta, Mapping) else None,
            declares_tasks(ctx),
        )
        answer = await self._service.call_tool(
            call,
            self._runtime.caller(ctx),
            # Detached from the start, as a task's run: the call may become a task at any moment,
            # and its running frames keep whatever request context they were given.
            work=tool_work(lambda run: _with_round_trips(params, run, call_next, rounds)),
            plain=lambda: _plain_with_rounds(params, ctx, call_next, rounds),
            rounds=rounds,
        )
        return _plain_answer(answer) if isinstance(answer, Outcome) else answer

    # --- tasks/* ---------------------------------------------------------------------------------

    def _task_id(self, ctx: ServerRequestContext[Any, Any]) -> str:
        task_id = self._service.task_id(ctx.params, declares_tasks=declares_tasks(ctx))
        _check_mcp_name(ctx, task_id)
        return task_id

    async def tasks_get(self, ctx: ServerRequestContext[Any, Any], params: RequestParams) -> HandlerResult:
        with sdk_errors():
            return await self._service.get(self._task_id(ctx), self._runtime.caller(ctx))

    async def tasks_cancel(self, ctx: ServerRequestContext[Any, Any], params: RequestParams) -> HandlerResult:
        with sdk_errors():
            return await self._service.cancel(self._task_id(ctx), self._runtime.caller(ctx))

    async def tasks_update(self, ctx: ServerRequestContext[Any, Any], params: RequestParams) -> HandlerResult:
        with sdk_errors():
            task_id, responses = self._service.update_params(ctx.params, declares_tasks=declares_tasks(ctx))
            _check_mcp_name(ctx, task_id)
            return await self._service.update(
                task_id, responses, self._runtime.caller(ctx), _check_input_response
            )


# --- the inline grace and multi-round-trip input ---------------------------------------------------


class _RoundTripRequest(MCPError):
    """Ends a tool body that asked ``before_task`` while its call is undecided (an ``MCPError``, so
    ``MCPServer``'s tool layer lets it through); the interceptor answers the round plainly."""

    def __init__(self, result: Mapping[str, Any]) -> None:
        super().__init__(code=INTERNAL_ERROR, message="the tool asks for input before it runs as a task")
        self.result = dict(result)


def _rounds_of(params: CallToolRequestParams) -> RoundTrips:
    """The call's multi-round-trip state: its ``inputResponses`` and ``requestState``."""
    return RoundTrips(_wire_responses(params), params.request_state, error=_RoundTripRequest)


async def _plain_with_rounds(
    params: CallToolRequestParams,
    ctx: ServerRequestContext[Any, Any],
    call_next: CallNext,
    call_rounds: RoundTrips,
) -> HandlerResult:
    """A plain 2026-07-28 call: a ``before_task`` question is answered as a round, no task needed."""
    with rounds_of_plain_call(call_rounds) as rounds:
        try:
            result = await call_next(ctx)
        except Exception:
            if rounds.question is not None:
                return rounds.question
            raise
        return rounds.question if rounds.question is not None else result


def _wire_responses(params: CallToolRequestParams) -> dict[str, Any] | None:
    if params.input_responses is None:
        return None
    return {
        key: response.model_dump(by_alias=True, mode="json", exclude_none=True)
        for key, response in params.input_responses.items()
    }


def _result_wire(result: HandlerResult) -> Mapping[str, Any] | None:
    """An ``input_required`` result as wire JSON, else ``None``."""
    if isinstance(result, BaseModel):
        if getattr(result, "result_type", None) != "input_required":
            return None
        return result.model_dump(by_alias=True, mode="json", exclude_none=True)
    if isinstance(result, Mapping) and result.get("resultType") == "input_required":
        return cast("Mapping[str, Any]", result)
    return None


async def _with_round_trips(
    params: CallToolRequestParams,
    ctx: ServerRequestContext[Any, Any],
    call_next: CallNext,
    rounds: RoundTrips | None,
) -> HandlerResult:
    """The rest of the chain, with the tool's multi-round-trip input handled.

    While the call is undecided, an ``input_required`` round (the tool's own, or a ``before_task``
    question) is the call's plain answer: :class:`RoundTripAnswer` carries it out of the work.
    Once the call is a task, the tool's ``inputRequests`` are relayed as the task's (status
    ``input_required``, answered by ``tasks/update``, or on ``tasks/result`` in 2025-11-25) and
    the tool runs again with the answers and its ``requestState``, as the client would retry it.
    """
    while True:
        try:
            result = await call_next(ctx)
        except Exception:
            if rounds is not None and rounds.question is not None:
                raise RoundTripAnswer(rounds.question) from None
            raise
        if rounds is not None and rounds.question is not None:  # the tool swallowed the exception
            raise RoundTripAnswer(rounds.question)
        wire = _result_wire(result)
        if wire is None:
            return result
        call = pending_call()
        if call is not None and call.is_open:
            raise RoundTripAnswer(wire)
        if call is not None:
            await call.task()
        run = current_run()
        if run is None:
            return result
        engine, record = run
        requests = cast("Mapping[str, Mapping[str, Any]]", wire.get("inputRequests") or {})
        answers = await _relayed(engine.inputs, record, requests)
        # The handler is invoked with this very params object (the SDK binds it into the chain);
        # the next round is the retry the client would send: the answers and the echoed state.
        retry = CallToolRequestParams.model_validate(
            {"name": params.name, "arguments": params.arguments, "inputResponses": answers}, by_name=False
        )
        params.input_responses = retry.input_responses
        params.request_state = cast("str | None", wire.get("requestState"))


async def _relayed(
    inputs: InputRelay, record: TaskRecord, requests: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """Every request relayed through the task at once; the answers under the tool's own keys."""
    answers: dict[str, Any] = {}

    async def relay(key: str, request: Mapping[str, Any]) -> None:
        answers[key] = await inputs.request(record, request)

    async with anyio.create_task_group() as group:
        for key, request in requests.items():
            group.start_soon(relay, key, request)
    return answers


def _plain_answer(outcome: Outcome) -> HandlerResult:
    """What the ``tools/call`` answers when the call ended within the grace: what it would have."""
    error = outcome.error
    if error is None:
        result = outcome.result
        if isinstance(result, ToolResultWire):
            return result.model  # the SDK's own result, as a plain call would have answered
        return dict(result or {})
    if isinstance(error, RoundTripAnswer):
        return error.result
    if isinstance(error, ToolCallFailure):
        if isinstance(error.__cause__, Exception):
            raise error.__cause__
        failure = error.error
        raise PeerProtocolError(failure.message, jsonrpc_code=failure.code, data=failure.data)
    raise error


def _check_input_response(key: str, method: str, response: Mapping[str, Any]) -> None:
    """-32602 for an answer to an outstanding request that is not that request's result type."""
    model = INPUT_RESULT_TYPES.get(method)
    if model is None:
        return
    try:
        model.model_validate(response, by_name=False)
    except ValidationError as exc:
        raise PeerProtocolError(
            f"inputResponses[{key!r}] is not a valid {model.__name__} (the answer to {method}): "
            f"{exc.error_count()} validation error(s)",
            jsonrpc_code=INVALID_PARAMS,
        ) from None


# --- input from inside a tool body ----------------------------------------------------------------


def _required_request(method: str) -> ServerRequestContext[Any, Any]:
    ctx = current_request()
    if ctx is None:
        raise RuntimeError(
            f"mcp_tasks_compat.server: {method} can only be asked from inside a tool call of a server "
            "whose tasks were enabled with ServerTasks (mcpserver_kwargs or install)"
        )
    return ctx


async def plain_input(method: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """A plain call's input: the ordinary request on the current ``tools/call``'s stream.

    A 2026-07-28 request has no channel for server-to-client requests (the SDK raises
    ``NoBackChannelError``); the input must then come through a task, and the error says so.
    """
    ctx = _required_request(method)
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        if declares_tasks(ctx):
            raise MCPError(
                code=INTERNAL_ERROR,
                message=f"the tool asked for input ({method}) in a plain 2026-07-28 call, which has no "
                "channel for it, and the tool does not run as a task; declare it 'optional' or 'required' "
                "in ServerTasks(tools=...)",
            )
        error = codec_2026.missing_capability_error()
        raise MCPError(
            code=error.code,
            message=f"{error.message}: the tool asks for input ({method}), which a 2026-07-28 call can "
            f"only give as a task; declare the {TASKS_EXTENSION_ID} extension",
            data=error.data,
        )
    request: dict[str, Any] = {"method": method}
    if params:
        request["params"] = dict(params)
    try:
        return await send_input(ctx.session, request, ctx.request_id)
    except InputRefused as refused:  # an answer of the wrong shape: the SDK's error, as the SDK would
        raise mcp_error(refused.error) from None


def undeclared_capability(method: str) -> str | None:
    """The client capability ``method`` needs when the task's session did not declare it."""
    ctx = current_request()
    name = INPUT_CAPABILITIES.get(method)
    if ctx is None or name is None:
        return None
    capabilities = ctx.session.client_capabilities
    if capabilities is None:
        return name
    return name if getattr(capabilities, name, None) is None else None


def input_result(method: str, answer: Mapping[str, Any]) -> Any:
    """The client's answer as the SDK's result type (``ElicitResult``, ...)."""
    model = INPUT_RESULT_TYPES.get(method)
    if model is None:
        return dict(answer)
    try:
        return model.model_validate(dict(answer), by_name=False)
    except ValidationError as exc:
        raise MCPError(
            code=INVALID_PARAMS,
            message=f"the client's answer to {method} is not a valid {model.__name__}: "
            f"{exc.error_count()} validation error(s)",
        ) from None


def _version_gated(binding: MethodBinding) -> RequestHandler:
    """What ``MCPServer`` does for a scoped ``MethodBinding``, for the low-level ``Server``."""
    versions = binding.protocol_versions or frozenset()

    async def gated(ctx: ServerRequestContext[Any, Any], params: Any) -> HandlerResult:
        if ctx.protocol_version not in versions:
            raise MCPError(code=METHOD_NOT_FOUND, message="Method not found", data=binding.method)
        return await binding.handler(ctx, params)

    return gated


def mcpserver_kwargs(policy: TaskPolicy, **user_kwargs: Any) -> dict[str, Any]:
    """``MCPServer(...)`` keyword arguments: ours composed with the user's, the rest passed through.

    The user's extensions and middleware come first (outermost), so they see every call before a
    task is made; ours are innermost. The user's lifespan wraps the engine's task group, and its
    value is what tools see.
    """
    runtime = TasksRuntime(policy, served_dialects(policy))
    kwargs = dict(user_kwargs)
    extensions: list[Extension] = list(kwargs.pop("extensions", None) or ())
    if any(getattr(extension, "identifier", None) == TASKS_EXTENSION_ID for extension in extensions):
        raise ValueError(
            f"extensions already holds an {TASKS_EXTENSION_ID!r} extension; ServerTasks provides it, "
            "so pass only your other extensions"
        )
    if runtime.serves_2026:
        extensions.append(TasksExtension(runtime))
    middleware: list[Any] = list(kwargs.pop("middleware", None) or ())
    if runtime.serves_2025:
        middleware.append(Dialect2025Middleware(runtime))
    middleware.extend(push_middleware(runtime))
    kwargs["extensions"] = extensions
    kwargs["middleware"] = middleware
    kwargs["lifespan"] = runtime.compose_lifespan(kwargs.pop("lifespan", None))
    return kwargs


def install(policy: TaskPolicy, server: Any) -> None:
    """Enable tasks on an mcp 2.x low-level ``Server`` in place; refuse an ``MCPServer``."""
    if isinstance(server, MCPServer):
        raise UnsupportedOptInError(
            [
                UnsupportedOptIn(
                    asked="ServerTasks.install() on an already-built MCPServer",
                    supported_by="the construction-time form, since an MCPServer fixes its extensions, "
                    "lifespan and middleware when it is built",
                    fix=INSTALL_ON_MCPSERVER_FIX,
                )
            ],
            installed=f"mcp {sdk_info().mcp_version}",
        )
    if not isinstance(server, Server):
        raise TypeError(
            f"ServerTasks.install() takes an mcp 2.x low-level Server; got {type(server).__name__} "
            "(for MCPServer use MCPServer(name, **tasks.mcpserver_kwargs(...)))"
        )
    lowlevel = cast("Server[Any]", server)
    if policy.reruns:
        raise UnsupportedOptInError(
            [
                UnsupportedOptIn(
                    asked=f"reruns of {sorted(policy.reruns)} on a low-level Server",
                    supported_by="an MCPServer (TaskServer, or MCPServer(name, **tasks.mcpserver_kwargs())), "
                    "whose tools can be called again without a request",
                    fix="build the server as TaskServer(...) or MCPServer(name, **tasks.mcpserver_kwargs())",
                )
            ],
            installed=f"mcp {sdk_info().mcp_version}",
        )
    if TASKS_EXTENSION_ID in lowlevel.extensions:
        raise ValueError(f"tasks are already installed on server {lowlevel.name!r}")
    call_tool = lowlevel.get_request_handler("tools/call")
    if call_tool is None:
        raise ValueError(
            f"server {lowlevel.name!r} has no tools/call handler to run as tasks; "
            "build it with on_call_tool=..."
        )
    runtime = TasksRuntime(policy, served_dialects(policy))
    if runtime.serves_2026:
        extension = TasksExtension(runtime)
        bindings = extension.methods()
        taken = [b.method for b in bindings if lowlevel.get_request_handler(b.method) is not None]
        if taken:
            raise ValueError(
                f"server {lowlevel.name!r} already serves {taken}; the Tasks extension needs them"
            )
        for binding in bindings:
            lowlevel.add_request_handler(binding.method, binding.params_type, _version_gated(binding))
        lowlevel.add_request_handler(
            "tools/call", call_tool.params_type, compose_tool_call_handler([extension], call_tool.handler)
        )
        lowlevel.extensions[TASKS_EXTENSION_ID] = extension.settings()
    if runtime.serves_2025:
        lowlevel.middleware.append(Dialect2025Middleware(runtime))
    lowlevel.middleware.extend(push_middleware(runtime))
    lowlevel.lifespan = runtime.compose_lifespan(lowlevel.lifespan)
