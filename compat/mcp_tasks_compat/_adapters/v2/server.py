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

What the peer sees (the plan of a call, the inline grace and its plain answers, multi-round-trip
rounds, every refusal's words) is decided in ``_server`` (:class:`~.._server.Tasks2026Service`,
``_server/rounds_2026.py``); this module routes the SDK's requests there and gives what only the
SDK can: the tool chain as work, a result read as an ``input_required`` wire and the answers set
as the retry's params (the two round primitives), an answer validated against the SDK's result
type, the ``Mcp-Name`` header read.

``MCPServer`` fixes its extensions, lifespan and middleware when it is built, so it is enabled
with :func:`mcpserver_kwargs`; the low-level ``Server`` is enabled in place with :func:`install`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, cast

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
from ..._engine import InputRefused, TaskPolicy, current_run
from ..._server import InvalidAnswer, ToolCall2026, no_input_channel, refuse_plain_call, relay_rounds
from ...dialects import ALL_DIALECTS, DIALECT_2026_07_28, TASKS_EXTENSION_ID, Dialect
from ...errors import UnsupportedOptIn, UnsupportedOptInError
from .dialect_2025 import Dialect2025Middleware
from .listing import listing_middleware
from .progress import progress_sender
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


def _mcp_name(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The request's ``Mcp-Name`` header, decoded, if it has one (the SDK checks it only for its
    own name-bearing methods; the service checks it for ``tasks/*``)."""
    headers = getattr(ctx.request, "headers", None)
    raw = headers.get(MCP_NAME_HEADER) if headers is not None else None
    return None if raw is None else decode_header_value(str(raw))


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
            return await _relayed_rounds(params, ctx, call_next)
        meta: object = params.meta
        call = ToolCall2026(
            params.name,
            params.arguments,
            cast("Mapping[str, Any]", meta) if isinstance(meta, Mapping) else None,
            declares_tasks(ctx),
            _wire_responses(params),
            params.request_state,
        )
        answer = await self._service.call_tool(
            call,
            self._runtime.caller(ctx),
            # Detached from the start, as a task's run: the call may become a task at any moment,
            # and its running frames keep whatever request context they were given.
            work=tool_work(lambda run: _relayed_rounds(params, run, call_next)),
            plain=lambda: call_next(ctx),
            ends_round=_RoundTripRequest,
            progress=progress_sender(ctx),
        )
        return _handler_result(answer)

    # --- tasks/* ---------------------------------------------------------------------------------

    def _task_id(self, ctx: ServerRequestContext[Any, Any]) -> str:
        task_id = self._service.task_id(ctx.params, declares_tasks=declares_tasks(ctx))
        self._service.check_mcp_name(task_id, _mcp_name(ctx))
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
            self._service.check_mcp_name(task_id, _mcp_name(ctx))
            return await self._service.update(task_id, responses, self._runtime.caller(ctx), _invalid_answer)


# --- the SDK's part of the inline grace and multi-round-trip input (the rest: _server) --------------


class _RoundTripRequest(MCPError):
    """Ends a tool body that asked ``before_task`` while its call is undecided (an ``MCPError``, so
    ``MCPServer``'s tool layer lets it through); the service answers the round plainly."""

    def __init__(self, result: Mapping[str, Any]) -> None:
        super().__init__(code=INTERNAL_ERROR, message="the tool asks for input before it runs as a task")
        self.result = dict(result)


def _wire_responses(params: CallToolRequestParams) -> dict[str, Any] | None:
    if params.input_responses is None:
        return None
    return {
        key: response.model_dump(by_alias=True, mode="json", exclude_none=True)
        for key, response in params.input_responses.items()
    }


def _input_required_wire(result: HandlerResult) -> Mapping[str, Any] | None:
    """The primitive "result to wire": an ``input_required`` result as wire JSON, else ``None``."""
    if isinstance(result, BaseModel):
        if getattr(result, "result_type", None) != "input_required":
            return None
        return result.model_dump(by_alias=True, mode="json", exclude_none=True)
    if isinstance(result, Mapping) and result.get("resultType") == "input_required":
        return cast("Mapping[str, Any]", result)
    return None


def _retry_with(params: CallToolRequestParams, answers: Mapping[str, Any], request_state: str | None) -> None:
    """The primitive "answers to retry params": the handler is invoked with this very params object
    (the SDK binds it into the chain), so the next round is the retry the client would send."""
    retry = CallToolRequestParams.model_validate(
        {"name": params.name, "arguments": params.arguments, "inputResponses": answers}, by_name=False
    )
    params.input_responses = retry.input_responses
    params.request_state = request_state


async def _relayed_rounds(
    params: CallToolRequestParams, ctx: ServerRequestContext[Any, Any], call_next: CallNext
) -> HandlerResult:
    """The rest of the chain, its ``input_required`` rounds handled by ``_server``
    (:func:`~.._server.relay_rounds`), given this module's two primitives."""
    return await relay_rounds(
        lambda: call_next(ctx),
        input_required=_input_required_wire,
        retry_with=lambda answers, state: _retry_with(params, answers, state),
    )


def _handler_result(answer: HandlerResult | Mapping[str, Any]) -> HandlerResult:
    """The service's answer as the SDK's: a tool result answered within the grace is the SDK's own
    model again, as a plain call would have answered it."""
    if isinstance(answer, ToolResultWire):
        return answer.model
    if answer is None or isinstance(answer, (BaseModel, dict)):
        return answer
    return dict(answer)


def _invalid_answer(method: str, response: Mapping[str, Any]) -> InvalidAnswer | None:
    """Why ``response`` is not the SDK's result type of a ``method`` request, else ``None``."""
    model = INPUT_RESULT_TYPES.get(method)
    if model is None:
        return None
    try:
        model.model_validate(response, by_name=False)
    except ValidationError as exc:
        return InvalidAnswer(model.__name__, exc.error_count())
    return None


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
        raise mcp_error(no_input_channel(method, declares_tasks=declares_tasks(ctx)))
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
    middleware.extend([*push_middleware(runtime), *listing_middleware(runtime)])
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
    lowlevel.middleware.extend([*push_middleware(runtime), *listing_middleware(runtime)])
    lowlevel.lifespan = runtime.compose_lifespan(lowlevel.lifespan)
