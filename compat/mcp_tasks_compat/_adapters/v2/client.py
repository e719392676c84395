"""mcp 2.x client adapter: one ``ClientSession``, either task dialect, chosen per connection.

* 2026-07-28 (``server/discover`` declared ``io.modelcontextprotocol/tasks``): the public seams.
  :func:`session_kwargs` registers the extension with a ``ResultClaim`` on ``resultType: "task"``
  (version-scoped to 2026-07-28), ``call_tool(allow_claimed=True)`` hands back
  :class:`TaskHandle`, and ``tasks/get`` / ``tasks/cancel`` are typed requests whose
  ``name_param = "taskId"`` makes the SDK send ``Mcp-Name`` over streamable HTTP.
* 2026-07-28 input requests (``inputRequests`` on ``tasks/get``) are answered through the
  session's own callbacks (``ClientSession.dispatch_input_request``, the table a plain call's
  server-to-client requests go through) and sent back with ``tasks/update``.
* 2026-07-28 multi-round-trip input (SEP-2322): a ``tools/call`` answered ``input_required`` is
  received with the public ``call_tool(allow_input_required=True)``, its ``inputRequests``
  answered through the same callbacks, and the call sent again with ``input_responses=`` and the
  ``request_state=`` echoed (the loop and its bound are :func:`.._client.answer_rounds`).
* 2025-11-25 (a handshake-era server, e.g. an mcp 1.x one): the public ``ClientSession`` rejects
  the nested ``{"task": {...}}`` answer to ``tools/call`` in its result sieve, so that one request
  goes through the narrowest private seam, ``session._dispatcher.send_raw_request`` (feature
  ``v2.raw_request``, probed by :mod:`.._detect`). ``tasks/*`` are custom methods the sieve lets
  through. ``notifications/tasks/status`` (absent from 2.x's core tables) arrives through a
  ``NotificationBinding`` that :func:`session_kwargs` adds.
* Push on 2026-07-28 (``session_kwargs(push=True)``): one ``subscriptions/listen`` request per
  session asking for ``notifications.taskIds`` (:class:`.._client.PushLink` decides which and
  when), sent with the public ``send_request`` and run in the session's own task group (the
  SDK's ``listen()`` driver does the same; absent, the session polls); its
  ``notifications/tasks`` arrive through a ``NotificationBinding``, its acknowledgement through
  the session's ``message_handler`` (an ack without a listen route of the SDK's own goes there).

The pieces live beside this module: the request models and the two wires in
:mod:`.task_wires`, the per-session config and its notification routes in
:mod:`.session_config`, the calls through private seams in :mod:`.tool_calls`, the handshake
in :mod:`.handshake`. This module composes them into the client facet (:mod:`..base`): one
connection class per negotiated dialect (:class:`Connection2026`, :class:`Connection2025`) and a
plain one (:class:`PlainConnection`), picked once per session by :func:`connection`.

Everything about *what* to send and *what it means* lives in :mod:`.._client`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar, NoReturn, cast

import mcp_types
from mcp.client.extension import ClientExtension, NotificationBinding, ResultClaim
from mcp.client.session import ClientSession
from mcp.shared.dispatcher import ProgressFnT
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..._client import (
    ConnectionCache,
    InputReply,
    InputRound,
    Negotiated,
    NegotiatedConnection,
    OnStatus,
    ToolCall,
    answer_rounds,
)
from ..._detect import sdk_info
from ...core._model import Task
from ...dialects import (
    ALL_DIALECTS,
    DIALECT_2025_11_25,
    DIALECT_2026_07_28,
    TASKS_EXTENSION_ID,
    Dialect,
)
from ...errors import INTERNAL_ERROR, PeerProtocolError, UnsupportedOptIn, UnsupportedOptInError
from ..session import check_sdk_options
from ..session import task_session_class as task_session_class  # the same on both majors
from .handshake import list_tools as list_tools  # the client facet's, as wire JSON
from .handshake import negotiate
from .session_config import (
    STATUS_NOTIFICATION,
    TASKS_NOTIFICATION,
    CatchAcks,
    ResolveTask,
    RoutePushed,
    RouteStatus,
    SessionConfig,
    config_of,
)
from .session_config import listen_available as listen_available
from .task_wires import TaskHandle, TaskStatusParams, Wire2025, Wire2026, answer_input
from .tool_calls import (
    Answer,
    SdkInputRound,
    call_as_2025_task,
    call_declining_task,
    call_publicly,
    meta_arg,
    reply_from_options,
)

__all__ = [
    "STATUS_NOTIFICATION",
    "Connection",
    "Connection2025",
    "Connection2026",
    "PlainConnection",
    "TaskHandle",
    "TasksClientExtension",
    "connection",
    "session_kwargs",
    "task_session_class",
    "tasks_extension",
]

logger = logging.getLogger("mcp_tasks_compat.client")

_MODERN_TASK_VERSIONS = frozenset({DIALECT_2026_07_28})


def session_kwargs(
    *,
    dialect: Dialect | None,
    extensions: Mapping[str, Mapping[str, Any]] | None,
    result_claims: Mapping[str, Sequence[ResultClaim[Any]]] | None,
    notification_bindings: Sequence[NotificationBinding[Any]] | None,
    message_handler: Any,
    push: bool = True,
) -> dict[str, Any]:
    """``ClientSession`` keyword arguments: the Tasks extension and its claim, composed with the caller's."""
    dialects: tuple[Dialect, ...] = ALL_DIALECTS if dialect is None else (dialect,)
    if DIALECT_2025_11_25 in dialects and DIALECT_2025_11_25 not in sdk_info().client_dialects:
        # Only reachable without an explicit dialect (an explicit one was refused already): this
        # release lost the private seam, so handshake-era connections will run plain calls.
        logger.warning(
            "mcp %s lacks the private seam v2.raw_request; 2025-11-25 tasks are unavailable on this install",
            sdk_info().mcp_version,
        )
        dialects = tuple(d for d in dialects if d != DIALECT_2025_11_25)
    config = SessionConfig(dialects=dialects, push=push and DIALECT_2026_07_28 in dialects)

    merged_extensions: dict[str, dict[str, Any]] = {
        key: dict(value) for key, value in (extensions or {}).items()
    }
    merged_claims: dict[str, list[ResultClaim[Any]]] = {
        key: list(value) for key, value in (result_claims or {}).items()
    }
    for claims in merged_claims.values():
        for claim in claims:
            if claim.result_type == "task":
                raise ValueError(
                    "result_claims already claims resultType 'task'; mcp-tasks-compat registers its own "
                    "claim for the Tasks extension. Drop yours (call_tool/start_tool resolve tasks for you)."
                )
    if DIALECT_2026_07_28 in dialects:
        merged_extensions.setdefault(TASKS_EXTENSION_ID, {})
        claim = ResultClaim(
            result_type="task",
            model=TaskHandle,
            resolve=ResolveTask(config),
            protocol_versions=_MODERN_TASK_VERSIONS,
        )
        merged_claims.setdefault(TASKS_EXTENSION_ID, []).append(claim)

    bindings = list(notification_bindings or ())
    chained = next((b for b in bindings if b.method == STATUS_NOTIFICATION), None)
    chained_pushed = next((b for b in bindings if b.method == TASKS_NOTIFICATION), None)
    ours = {STATUS_NOTIFICATION} | ({TASKS_NOTIFICATION} if config.push else set[str]())
    bindings = [b for b in bindings if b.method not in ours]
    bindings.append(
        NotificationBinding(
            method=STATUS_NOTIFICATION, params_type=TaskStatusParams, handler=RouteStatus(config, chained)
        )
    )
    if config.push:
        bindings.append(
            NotificationBinding(
                method=TASKS_NOTIFICATION,
                params_type=TaskStatusParams,
                handler=RoutePushed(config, chained_pushed),
            )
        )
        message_handler = CatchAcks(config, message_handler)

    kwargs: dict[str, Any] = {"notification_bindings": bindings}
    if merged_extensions:
        kwargs["extensions"] = merged_extensions
    if merged_claims:
        kwargs["result_claims"] = merged_claims
    if message_handler is not None:
        kwargs["message_handler"] = message_handler
    return kwargs


class TasksClientExtension(ClientExtension):
    """The Tasks extension as ``mcp.Client(server, extensions=[TaskClientSession.extension()])`` takes it.

    The same pieces :func:`session_kwargs` gives a ``ClientSession``: the extension entry, the
    result claim on ``resultType: "task"`` (``mcp.Client.call_tool`` then follows a task to its
    result, on the session's one listen stream where the server pushes, else by polling) and the
    status bindings, so ``call_tool(client.session, ...)`` runs tasks too. ``on_status`` hears
    the statuses of every task ``mcp.Client.call_tool`` follows (its resolver is handed no
    per-call callback).
    """

    identifier = TASKS_EXTENSION_ID

    def __init__(self, dialect: Dialect | None, on_status: OnStatus | None = None) -> None:
        kwargs = session_kwargs(
            dialect=dialect,
            extensions=None,
            result_claims=None,
            notification_bindings=None,
            message_handler=None,
        )
        self._claims: list[ResultClaim[Any]] = [
            replace(claim, resolve=ResolveTask(claim.resolve.config, on_status))
            if isinstance(claim.resolve, ResolveTask)
            else claim
            for claim in kwargs.get("result_claims", {}).get(TASKS_EXTENSION_ID, ())
        ]
        self._bindings: list[NotificationBinding[Any]] = list(kwargs["notification_bindings"])

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return self._claims

    def notifications(self) -> Sequence[NotificationBinding[Any]]:
        return self._bindings


def tasks_extension(*, dialect: Dialect | None, on_status: OnStatus | None = None) -> TasksClientExtension:
    return TasksClientExtension(dialect, on_status)


def _has_claim_for_task(session: ClientSession) -> bool:
    claims: object = getattr(session, "_active_claims", None)
    return isinstance(claims, Mapping) and "task" in claims


def _advertises_tasks_without_claim(session: ClientSession) -> bool:
    extensions: object = getattr(session, "_extensions", None)
    claims: object = getattr(session, "_result_claims", None)
    if not isinstance(extensions, Mapping) or TASKS_EXTENSION_ID not in extensions:
        return False
    return not (isinstance(claims, Mapping) and claims.get(TASKS_EXTENSION_ID))  # pyright: ignore[reportUnknownMemberType]


_NO_KWARGS = UnsupportedOptIn(
    asked="a task call on a ClientSession built without the library's session settings",
    supported_by=(
        "a session built as mcp_tasks_compat.client.TaskClientSession(read, write), which "
        "registers the Tasks extension and its result claim (without it the SDK rejects a task answer only "
        "after the server has created the task)"
    ),
    fix=(
        "build the session as TaskClientSession(read, write, ...) (your own extensions=, result_claims=, "
        "notification_bindings= and message_handler= are composed with the library's); for a session that "
        "mcp.Client builds, pass mcp.Client(..., extensions=[TaskClientSession.extension()]) "
        "(see docs/integrations.md); "
        "mode='auto' runs such calls plainly"
    ),
)

_ADVERTISE_ONLY = UnsupportedOptIn(
    asked=(
        f"tools/call on a ClientSession that declares {TASKS_EXTENSION_ID} without a result claim for 'task'"
    ),
    supported_by="a session whose Tasks extension comes from mcp_tasks_compat.client.TaskClientSession",
    fix=(
        "drop your own io.modelcontextprotocol/tasks entry and build the session as "
        "TaskClientSession(read, write)"
    ),
)


# --- one negotiated session: a connection class per dialect, and a plain one --------------------


class _Negotiated(NegotiatedConnection[ClientSession]):
    """What every connection of one session shares, and the ``input_required`` rounds of a call."""

    def __init__(self, session: ClientSession, negotiated: Negotiated) -> None:
        super().__init__(session, negotiated, lambda: list_tools(session))

    async def _answering_rounds(
        self,
        call: ToolCall,
        send: Callable[[InputReply | None], Awaitable[Answer]],
        first: Answer | None = None,
    ) -> Task | mcp_types.CallToolResult:
        """``send`` once (unless ``first`` is its answer already), then again per
        ``input_required`` round (SEP-2322) until a final answer.

        The first send carries the caller's own ``input_responses`` / ``request_state``; with
        ``allow_input_required=True`` an ``input_required`` answer is the caller's to answer, so
        it is handed back as the SDK's ``InputRequiredResult`` (no task exists yet).
        """
        name = call.name
        if first is None:
            reply = None
            if call.sdk_options:
                check_sdk_options(call.sdk_options)
                reply = reply_from_options(call.sdk_options)
            first = await send(reply)
        if not isinstance(first, InputRound):
            return first
        if call.sdk_options.get("allow_input_required"):
            assert isinstance(first, SdkInputRound)
            assert first.sdk_result is not None
            return cast(
                "mcp_types.CallToolResult", first.sdk_result
            )  # the SDK's answer, as its call_tool returns it
        session = self._session

        async def answer(key: str, request: Mapping[str, Any]) -> dict[str, Any]:
            return await answer_input(session, key, request)

        return await answer_rounds(first, answer=answer, retry=send, what=f"tools/call {name!r}")

    async def _publicly(self, call: ToolCall, reply: InputReply | None, *, allow_claimed: bool) -> Answer:
        progress = cast("ProgressFnT | None", call.progress)
        return await call_publicly(
            self._session,
            call.name,
            call.arguments,
            call.meta,
            progress=progress,
            read_timeout=call.read_timeout,
            reply=reply,
            allow_claimed=allow_claimed,
            keep_claims=bool(call.sdk_options.get("allow_claimed")),
        )

    async def _declining(self, call: ToolCall, reply: InputReply | None) -> Answer:
        progress = cast("ProgressFnT | None", call.progress)
        return await call_declining_task(
            self._session,
            call.name,
            call.arguments,
            call.meta,
            progress=progress,
            read_timeout=call.read_timeout,
            reply=reply,
        )

    async def _handshake_era(self, call: ToolCall) -> mcp_types.CallToolResult:
        """The base class's ``call_tool`` (a session subclass that overrides it is not re-entered),
        with the caller's own SDK keywords: a handshake-era call can create no task of the SDK's."""
        check_sdk_options(call.sdk_options)
        progress = cast("ProgressFnT | None", call.progress)
        sdk_call = cast("Callable[..., Awaitable[mcp_types.CallToolResult]]", ClientSession.call_tool)
        return await sdk_call(
            self._session,
            call.name,
            call.arguments,
            call.read_timeout,
            progress,
            meta=meta_arg(call.meta),
            **call.sdk_options,
        )


class Connection2026(_Negotiated):
    """A 2026-07-28 connection whose session claims ``resultType: "task"``: the server decides per call."""

    sends_task_at_once: ClassVar[bool] = True  # this library's server answers start_tool with a task

    def __init__(self, session: ClientSession, negotiated: Negotiated, config: SessionConfig) -> None:
        super().__init__(session, negotiated)
        self._wire = Wire2026(session, config)

    def wire(self) -> Wire2026:
        return self._wire

    async def call(self, call: ToolCall) -> Task | mcp_types.CallToolResult:
        """``as_task`` (``auto``, ``task``): the public call, receiving a task handle when the server
        makes one; else (``plain``) the Tasks extension left out of this request's capabilities."""

        async def send(reply: InputReply | None) -> Answer:
            if call.as_task:
                return await self._publicly(call, reply, allow_claimed=True)
            return await self._declining(call, reply)

        if call.as_task and not call.sdk_options:
            # The common call (every start_tool): the public call sent straight, nothing of the
            # caller's to check or continue; the rounds only once the server asks for input.
            first = await self._publicly(call, None, allow_claimed=True)
            if not isinstance(first, InputRound):
                return first
            return await self._answering_rounds(call, send, first)
        return await self._answering_rounds(call, send)


class Connection2025(_Negotiated):
    """A 2025-11-25 connection (a handshake-era server that offers tasks for ``tools/call``)."""

    def __init__(self, session: ClientSession, negotiated: Negotiated, config: SessionConfig) -> None:
        super().__init__(session, negotiated)
        self._wire = Wire2025(session, config)

    def wire(self) -> Wire2025:
        return self._wire

    async def call(self, call: ToolCall) -> Task | mcp_types.CallToolResult:
        """``as_task``: ``params.task`` through the raw-request seam; else the public ``call_tool``
        (also for a call that continues an ``input_required`` round, a 2026-era exchange)."""
        if not call.as_task or reply_from_options(call.sdk_options) is not None:
            return await self._handshake_era(call)
        check_sdk_options(call.sdk_options)
        return await call_as_2025_task(
            self._session, call.name, call.arguments, ttl_ms=call.ttl_ms, meta=call.meta
        )


class PlainConnection(_Negotiated):
    """A connection that runs no task: none negotiated, or a session that could not follow one.

    A session built without :func:`session_kwargs` may still have negotiated a dialect (the
    server offers tasks); :meth:`task_readiness` then says why it cannot run them, and ``auto``
    calls go out plainly. Where the session's own claim on ``resultType: "task"`` is active, a
    call declines the task for itself (as ``mode="plain"`` does on a task connection).
    """

    def __init__(self, session: ClientSession, negotiated: Negotiated, config: SessionConfig | None) -> None:
        super().__init__(session, negotiated)
        self._readiness = _NO_KWARGS if config is None else None
        self._refusal = (
            _ADVERTISE_ONLY if config is None and _advertises_tasks_without_claim(session) else None
        )
        self._modern = session.protocol_version in MODERN_PROTOCOL_VERSIONS
        self._declines = self._modern and _has_claim_for_task(session)

    def task_readiness(self) -> UnsupportedOptIn | None:
        return self._readiness

    def wire(self) -> NoReturn:
        raise RuntimeError(f"this connection runs no tasks ({self._negotiated.reason or 'not ready'})")

    async def call(self, call: ToolCall) -> mcp_types.CallToolResult:
        """A plain ``tools/call`` (``as_task`` is moot here), answering its ``input_required`` rounds."""
        if self._refusal is not None:
            raise UnsupportedOptInError([self._refusal], installed=self.installed)
        if not self._modern:
            return await self._handshake_era(call)

        async def send(reply: InputReply | None) -> Answer:
            if self._declines:
                return await self._declining(call, reply)
            return await self._publicly(call, reply, allow_claimed=False)

        answer = await self._answering_rounds(call, send)
        if isinstance(answer, Task):
            raise PeerProtocolError(
                f"tools/call {call.name!r} declined a task, yet the server created task {answer.task_id}",
                jsonrpc_code=INTERNAL_ERROR,
            )
        return answer


Connection = Connection2026 | Connection2025 | PlainConnection
"""What :func:`connection` hands out: one class per negotiated dialect, and the plain one."""


def _connect(session: ClientSession, negotiated: Negotiated) -> Connection:
    """The connection class for what ``session`` negotiated (chosen once; the calls never ask again)."""
    config = config_of(session)
    if config is not None and negotiated.dialect == DIALECT_2026_07_28 and _has_claim_for_task(session):
        return Connection2026(session, negotiated, config)
    if config is not None and negotiated.dialect == DIALECT_2025_11_25:
        return Connection2025(session, negotiated, config)
    return PlainConnection(session, negotiated, config)


_CONNECTIONS = ConnectionCache[ClientSession, Connection]()


async def connection(session: object, *, discover_timeout: float = 5.0) -> Connection:
    """The negotiated connection for ``session`` (negotiating on first use, then cached per session)."""
    if not isinstance(session, ClientSession):
        raise TypeError(f"expected an mcp.client.session.ClientSession, got {type(session).__name__}")

    async def open_connection() -> Connection:
        return _connect(session, await negotiate(session, discover_timeout))

    return await _CONNECTIONS.get(session, open_connection)
