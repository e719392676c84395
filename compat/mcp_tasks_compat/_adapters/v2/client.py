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

Everything about *what* to send and *what it means* lives in :mod:`.._client`.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import anyio
import anyio.abc
import mcp_types
from mcp.client.extension import ClaimContext, ClientExtension, NotificationBinding, ResultClaim
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    INVALID_PARAMS,
    REQUEST_TIMEOUT,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from ... import _client as client_logic
from ..._detect import sdk_info
from ...core import codec_2025, codec_2026
from ...core.model import Task
from ...dialects import (
    ALL_DIALECTS,
    DIALECT_2025_11_25,
    DIALECT_2026_07_28,
    TASKS_EXTENSION_ID,
    Dialect,
    TaskSupport,
)
from ...errors import METHOD_NOT_FOUND, UnsupportedOptIn, UnsupportedOptInError, UnsupportedSdkError
from ..session import task_session_class as task_session_class  # the same on both majors
from ..shared import list_all_tools

__all__ = [
    "STATUS_NOTIFICATION",
    "TaskHandle",
    "TasksClientExtension",
    "connection",
    "session_kwargs",
    "task_session_class",
    "tasks_extension",
]

logger = logging.getLogger("mcp_tasks_compat.client")

STATUS_NOTIFICATION = "notifications/tasks/status"
TASKS_NOTIFICATION = "notifications/tasks"
_SUBSCRIPTION_ID_META_KEY = "io.modelcontextprotocol/subscriptionId"
_LISTEN_TIMEOUT_SECONDS = 86_400.0
"""A listen request's read timeout: its answer comes only when the stream ends."""
_MODERN_TASK_VERSIONS = frozenset({DIALECT_2026_07_28})
_PROTOCOL_VERSION_HEADER = "mcp-protocol-version"


# --- wire models (SEP-2663 and 2025-11-25 tasks/*; the JSON is read by the core codecs) -------


class TaskHandle(mcp_types.Result):
    """The SEP-2663 ``CreateTaskResult`` (flat, ``resultType: "task"``) as the claim model.

    Only the discriminator is typed: every Task field stays raw (``extra="allow"``) and is read
    by :mod:`..core.codec_2026`, so one decoder serves every path and a deviating server is
    judged once.
    """

    model_config = ConfigDict(extra="allow")

    result_type: Literal["task"] = "task"


class _RawResult(mcp_types.Result):
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
_INPUT_RESPONSES: TypeAdapter[mcp_types.InputResponses] = TypeAdapter(mcp_types.InputResponses)


class _TaskResultRequest(mcp_types.Request[_TaskIdParams, Literal["tasks/result"]]):
    method: Literal["tasks/result"] = "tasks/result"
    params: _TaskIdParams


class _TaskStatusParams(mcp_types.NotificationParams):
    model_config = ConfigDict(extra="allow")


def _raw(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(by_alias=True, mode="json", exclude_unset=True)


def _remote(error: MCPError) -> client_logic.RemoteError:
    return client_logic.RemoteError(
        error.code, error.message, error.data, timed_out=error.code == REQUEST_TIMEOUT
    )


# --- what session_kwargs() plants in the session ------------------------------------------------


@dataclass
class _SessionConfig:
    """The per-session choices made in :func:`session_kwargs`, found again from the session."""

    dialects: tuple[Dialect, ...]
    statuses: client_logic.StatusListeners = field(default_factory=client_logic.StatusListeners)
    push: bool = True
    links: weakref.WeakKeyDictionary[ClientSession, client_logic.PushLink] = field(
        default_factory=lambda: weakref.WeakKeyDictionary[ClientSession, client_logic.PushLink]()
    )

    def listen(self, task_id: str, listener: client_logic.StatusListener) -> Callable[[], None]:
        return self.statuses.listen(task_id, listener)

    def push_link(self, session: ClientSession) -> client_logic.PushLink | None:
        """The session's push link (made on first use); ``None`` when push is off or unavailable."""
        if not self.push or not listen_available():
            return None
        link = self.links.get(session)
        if link is None:
            group: object = getattr(session, "_task_group", None)
            if not isinstance(group, anyio.abc.TaskGroup):
                return None  # not entered, or an SDK whose session keeps no task group: poll
            link = self.links[session] = client_logic.PushLink(
                lambda stream_id, task_ids: _listen(session, task_ids), group.start_soon
            )
        return link

    def all_links(self) -> list[client_logic.PushLink]:
        return list(self.links.values())


class _ResolveTask:
    """``ResultClaim.resolve``: follows the task to its result (``mcp.Client.call_tool`` calls it)."""

    def __init__(self, config: _SessionConfig) -> None:
        self.config = config

    async def __call__(self, handle: TaskHandle, context: ClaimContext) -> mcp_types.CallToolResult:
        task = codec_2026.decode_create_task_result(_raw(handle))
        wire = _Wire2026(context.session, self.config)
        return await client_logic.follow(
            wire, task, on_status=None, overall_timeout=None, cancel_grace=client_logic.CANCEL_GRACE_SECONDS
        )


class _RouteStatus:
    """``NotificationBinding`` handler: passes 2025-11-25 status notifications to whoever follows the task."""

    def __init__(self, config: _SessionConfig, chained: NotificationBinding[Any] | None) -> None:
        self.config = config
        self.chained = chained

    async def __call__(self, params: _TaskStatusParams) -> None:
        raw = _raw(params)
        self.config.statuses.deliver(raw)
        if self.chained is not None:
            await self.chained.handler(self.chained.params_type.model_validate(raw, by_name=False))


class _RoutePushed:
    """``NotificationBinding`` handler: 2026-07-28 ``notifications/tasks`` to the session's push link."""

    def __init__(self, config: _SessionConfig, chained: NotificationBinding[Any] | None) -> None:
        self.config = config
        self.chained = chained

    async def __call__(self, params: _TaskStatusParams) -> None:
        raw = _raw(params)
        raw.pop("_meta", None)
        for link in self.config.all_links():
            link.deliver(raw)
        if self.chained is not None:
            await self.chained.handler(self.chained.params_type.model_validate(_raw(params), by_name=False))


class _CatchAcks:
    """``message_handler``: the acknowledgements of our listen streams, the rest to the caller's handler."""

    def __init__(self, config: _SessionConfig, chained: Any) -> None:
        self.config = config
        self.chained = chained

    async def __call__(self, message: Any) -> None:
        if isinstance(message, mcp_types.SubscriptionsAcknowledgedNotification) and self._claimed(message):
            return
        if self.chained is not None:
            await self.chained(message)

    def _claimed(self, message: mcp_types.SubscriptionsAcknowledgedNotification) -> bool:
        params = message.params
        subscription_id = (params.meta or {}).get(_SUBSCRIPTION_ID_META_KEY)
        extra = params.notifications.model_extra or {}
        raw_ids: object = extra.get("taskIds")
        task_ids: list[str] | None = None
        if isinstance(raw_ids, list):
            task_ids = [item for item in cast("list[object]", raw_ids) if isinstance(item, str)]
        links = self.config.all_links()
        if any(link.acknowledged(subscription_id, task_ids) for link in links):
            return True
        # A late ack of a stream this session already closed: only task listens ask for taskIds.
        return bool(links) and task_ids is not None


async def _listen(session: ClientSession, task_ids: Sequence[str]) -> None:
    """One ``subscriptions/listen`` for ``task_ids``, until it ends (:data:`.._client.push.OpenStream`)."""
    filter_ = mcp_types.SubscriptionFilter.model_validate({"taskIds": list(task_ids)})
    request = mcp_types.SubscriptionsListenRequest(
        params=mcp_types.SubscriptionsListenRequestParams(notifications=filter_)
    )
    try:
        await session.send_request(request, _RawResult, request_read_timeout_seconds=_LISTEN_TIMEOUT_SECONDS)
    except MCPError as error:
        raise _remote(error) from None


def listen_available() -> bool:
    """Whether this SDK has ``subscriptions/listen`` (feature ``v2.listen``)."""
    return "v2.listen" in sdk_info().features


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
    config = _SessionConfig(dialects=dialects, push=push and DIALECT_2026_07_28 in dialects)

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
            resolve=_ResolveTask(config),
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
            method=STATUS_NOTIFICATION, params_type=_TaskStatusParams, handler=_RouteStatus(config, chained)
        )
    )
    if config.push:
        bindings.append(
            NotificationBinding(
                method=TASKS_NOTIFICATION,
                params_type=_TaskStatusParams,
                handler=_RoutePushed(config, chained_pushed),
            )
        )
        message_handler = _CatchAcks(config, message_handler)

    kwargs: dict[str, Any] = {"notification_bindings": bindings}
    if merged_extensions:
        kwargs["extensions"] = merged_extensions
    if merged_claims:
        kwargs["result_claims"] = merged_claims
    if message_handler is not None:
        kwargs["message_handler"] = message_handler
    return kwargs


class TasksClientExtension(ClientExtension):
    """The Tasks extension as ``mcp.Client(server, extensions=[tasks_extension()])`` takes it.

    The same pieces :func:`session_kwargs` gives a ``ClientSession``: the extension entry, the
    result claim on ``resultType: "task"`` (``mcp.Client.call_tool`` then follows a task to its
    result) and the 2025-11-25 status binding, so ``call_tool(client.session, ...)`` runs tasks too.
    """

    identifier = TASKS_EXTENSION_ID

    def __init__(self, dialect: Dialect | None) -> None:
        kwargs = session_kwargs(
            dialect=dialect,
            extensions=None,
            result_claims=None,
            notification_bindings=None,
            message_handler=None,
        )
        self._claims: list[ResultClaim[Any]] = list(
            kwargs.get("result_claims", {}).get(TASKS_EXTENSION_ID, ())
        )
        self._bindings: list[NotificationBinding[Any]] = list(kwargs["notification_bindings"])

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return self._claims

    def notifications(self) -> Sequence[NotificationBinding[Any]]:
        return self._bindings


def tasks_extension(*, dialect: Dialect | None) -> TasksClientExtension:
    return TasksClientExtension(dialect)


def _config_of(session: ClientSession) -> _SessionConfig | None:
    """The config :func:`session_kwargs` planted, or ``None`` for a session built without it."""
    bindings: object = getattr(session, "_notification_bindings", None)
    if isinstance(bindings, Mapping):
        binding = cast("Mapping[str, object]", bindings).get(STATUS_NOTIFICATION)
        handler: object = getattr(binding, "handler", None)
        if isinstance(handler, _RouteStatus):
            return handler.config
    return None


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
    asked="a task call on a ClientSession built without session_kwargs()",
    supported_by=(
        "a session built as ClientSession(read, write, **mcp_tasks_compat.client.session_kwargs()), which "
        "registers the Tasks extension and its result claim (without it the SDK rejects a task answer only "
        "after the server has created the task)"
    ),
    fix=(
        "build the session with **session_kwargs() and pass your own extensions=, result_claims=, "
        "notification_bindings= and message_handler= through session_kwargs(...); for a session that "
        "mcp.Client builds, pass mcp.Client(..., extensions=[mcp_tasks_compat.client.tasks_extension()]) "
        "(see docs/integrations.md); "
        "mode='auto' runs such calls plainly"
    ),
)

_ADVERTISE_ONLY = UnsupportedOptIn(
    asked=(
        f"tools/call on a ClientSession that declares {TASKS_EXTENSION_ID} without a result claim for 'task'"
    ),
    supported_by="a session whose Tasks extension comes from mcp_tasks_compat.client.session_kwargs()",
    fix="drop your own io.modelcontextprotocol/tasks entry and build the session with **session_kwargs()",
)


# --- the two wires -----------------------------------------------------------------------------


async def _answer_input(session: ClientSession, key: str, request: Mapping[str, Any]) -> dict[str, Any]:
    """One input request (a task's or a round's) through the session's own callback table."""
    try:
        parsed = _INPUT_REQUEST.validate_python(dict(request), by_name=False)
    except ValidationError as error:
        raise client_logic.RemoteError(
            INVALID_PARAMS, f"unreadable input request ({error.error_count()} validation error(s))"
        ) from None
    params = parsed.params
    context = ClientRequestContext(
        session=session, request_id=key, meta=params.meta if params is not None else None
    )
    answer = await session.dispatch_input_request(context, parsed)
    if isinstance(answer, mcp_types.ErrorData):
        raise client_logic.RemoteError(answer.code, answer.message, answer.data)
    return answer.model_dump(by_alias=True, mode="json", exclude_none=True)


class _WireBase:
    def __init__(self, session: ClientSession, config: _SessionConfig | None) -> None:
        self._session = session
        self._config = config

    def to_result(self, payload: Mapping[str, Any]) -> mcp_types.CallToolResult:
        return mcp_types.CallToolResult.model_validate(dict(payload), by_name=False)

    @property
    def push(self) -> client_logic.PushLink | None:
        return None

    async def _send(self, request: mcp_types.Request[Any, Any]) -> dict[str, Any]:
        try:
            return _raw(await self._session.send_request(request, _RawResult))
        except MCPError as error:
            raise _remote(error) from None

    def listen(self, task_id: str, listener: client_logic.StatusListener) -> Callable[[], None]:
        if self._config is None:
            return lambda: None
        return self._config.listen(task_id, listener)

    async def answer_input(self, key: str, request: Mapping[str, Any]) -> dict[str, Any]:
        return await _answer_input(self._session, key, request)

    async def update(self, task_id: str, responses: Mapping[str, Mapping[str, Any]]) -> None:
        params = _UpdateParams(task_id=task_id, input_responses={k: dict(v) for k, v in responses.items()})
        await self._send(_UpdateTaskRequest(params=params))


class _Wire2026(_WireBase):
    """SEP-2663: ``tasks/get`` carries the result or error inline; ``tasks/cancel`` is an ack."""

    @property
    def dialect(self) -> Dialect:
        return DIALECT_2026_07_28

    async def get(self, task_id: str) -> Task:
        raw = await self._send(_GetTaskRequest(params=_TaskIdParams(task_id=task_id)))
        return codec_2026.decode_get_task_result(raw)

    async def result_payload(self, task_id: str) -> dict[str, Any]:
        raise client_logic.RemoteError(METHOD_NOT_FOUND, "tasks/result does not exist in the Tasks extension")

    async def cancel(self, task_id: str) -> Task | None:
        await self._send(_CancelTaskRequest(params=_TaskIdParams(task_id=task_id)))
        return None

    def listen(self, task_id: str, listener: client_logic.StatusListener) -> Callable[[], None]:
        return lambda: None  # notifications/tasks come only on a listen stream: see push

    @property
    def push(self) -> client_logic.PushLink | None:
        return self._config.push_link(self._session) if self._config is not None else None


class _Wire2025(_WireBase):
    """2025-11-25 over 2.x: ``tasks/*`` are custom methods here, so the public path carries them."""

    @property
    def dialect(self) -> Dialect:
        return DIALECT_2025_11_25

    async def get(self, task_id: str) -> Task:
        raw = await self._send(_GetTaskRequest(params=_TaskIdParams(task_id=task_id)))
        return codec_2025.decode_task(raw, where="tasks/get", code=-32603)

    async def result_payload(self, task_id: str) -> dict[str, Any]:
        raw = await self._send(_TaskResultRequest(params=_TaskIdParams(task_id=task_id)))
        return codec_2025.decode_task_payload(raw, task_id)

    async def cancel(self, task_id: str) -> Task | None:
        raw = await self._send(_CancelTaskRequest(params=_TaskIdParams(task_id=task_id)))
        return codec_2025.decode_task(raw, where="tasks/cancel", code=-32603)


# --- one negotiated session --------------------------------------------------------------------


class _Connection:
    """:class:`~.._client.ClientConnection` for one 2.x ``ClientSession``."""

    def __init__(
        self, session: ClientSession, negotiated: client_logic.Negotiated, config: _SessionConfig | None
    ) -> None:
        self._session = session
        self._negotiated = negotiated
        self._config = config
        self._tools = client_logic.DeclaredSupport(negotiated.tool_task_support, lambda: list_tools(session))

    @property
    def negotiated(self) -> client_logic.Negotiated:
        return self._negotiated

    @property
    def installed(self) -> str:
        return f"mcp {sdk_info().mcp_version}"

    def wire(self) -> _Wire2025 | _Wire2026:
        if self._negotiated.dialect == DIALECT_2026_07_28:
            return _Wire2026(self._session, self._config)
        return _Wire2025(self._session, self._config)

    def task_readiness(self) -> UnsupportedOptIn | None:
        return _NO_KWARGS if self._config is None else None

    async def tool_support(self, name: str) -> TaskSupport:
        return await self._tools.of(name)

    async def call(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        *,
        as_task: bool,
        ttl_ms: int | None,
        meta: dict[str, Any] | None,
        progress: client_logic.ProgressSink | None = None,
        read_timeout: float | None = None,
    ) -> Task | mcp_types.CallToolResult:
        session = self._session

        async def send(reply: client_logic.InputReply | None) -> _Answer:
            return await self._call_once(
                name,
                arguments,
                as_task=as_task,
                ttl_ms=ttl_ms,
                meta=meta,
                progress=progress,
                read_timeout=read_timeout,
                reply=reply,
            )

        first = await send(None)
        if not isinstance(first, client_logic.InputRound):
            return first

        async def answer(key: str, request: Mapping[str, Any]) -> dict[str, Any]:
            return await _answer_input(session, key, request)

        return await client_logic.answer_rounds(first, answer=answer, retry=send, what=f"tools/call {name!r}")

    async def _call_once(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        *,
        as_task: bool,
        ttl_ms: int | None,
        meta: dict[str, Any] | None,
        progress: client_logic.ProgressSink | None,
        read_timeout: float | None,
        reply: client_logic.InputReply | None,
    ) -> _Answer:
        """One ``tools/call``; ``reply`` carries the previous round's answers and its ``requestState``."""
        session = self._session
        if self._config is None and _advertises_tasks_without_claim(session):
            raise UnsupportedOptInError([_ADVERTISE_ONLY], installed=self.installed)
        # The base class's call_tool throughout: a session subclass that overrides it is not re-entered.
        plain = ClientSession.call_tool
        callback = cast("ProgressFnT | None", progress)
        if session.protocol_version in MODERN_PROTOCOL_VERSIONS:
            responses = _input_responses(reply)
            state = reply.request_state if reply is not None else None
            if not _has_claim_for_task(session):
                answer = await plain(
                    session,
                    name,
                    arguments,
                    read_timeout,
                    callback,
                    meta=_meta(meta),
                    input_responses=responses,
                    request_state=state,
                    allow_input_required=True,
                )
                return _round(answer) if isinstance(answer, mcp_types.InputRequiredResult) else answer
            if not as_task:
                return await _call_declining_task(
                    session, name, arguments, meta, progress=callback, read_timeout=read_timeout, reply=reply
                )
            # The server decides (even on a "plain" call); a task handle is followed by the client_logic.
            answer = await plain(
                session,
                name,
                arguments,
                read_timeout,
                callback,
                meta=_meta(meta),
                input_responses=responses,
                request_state=state,
                allow_input_required=True,
                allow_claimed=True,
            )
            if isinstance(answer, mcp_types.InputRequiredResult):
                return _round(answer)
            if isinstance(answer, mcp_types.CallToolResult):
                return answer
            return codec_2026.decode_create_task_result(_raw(answer))
        if not as_task:
            return await plain(session, name, arguments, read_timeout, callback, meta=_meta(meta))
        return await self._call_as_2025_task(name, arguments, ttl_ms=ttl_ms, meta=meta)

    async def _call_as_2025_task(
        self, name: str, arguments: dict[str, Any] | None, *, ttl_ms: int | None, meta: dict[str, Any] | None
    ) -> Task | mcp_types.CallToolResult:
        params: dict[str, Any] = {"name": name, "task": codec_2025.encode_task_params(ttl_ms)}
        if arguments is not None:
            params["arguments"] = arguments
        if meta:
            params["_meta"] = dict(meta)
        dispatcher: Any = getattr(self._session, "_dispatcher", None)
        send_raw: Callable[..., Awaitable[dict[str, Any]]] | None = getattr(
            dispatcher, "send_raw_request", None
        )
        if send_raw is None:
            raise UnsupportedSdkError(
                f"mcp {sdk_info().mcp_version}: ClientSession._dispatcher.send_raw_request "
                "(feature v2.raw_request) is gone, and it is the only way a 2.x client can receive a "
                "2025-11-25 CreateTaskResult. "
                "fix: pip install 'mcp>=2.0,<=2.3' or report the release that removed it"
            )
        version = self._session.protocol_version or DIALECT_2025_11_25
        raw = await send_raw("tools/call", params, {"headers": {_PROTOCOL_VERSION_HEADER: version}})
        if "task" in raw:
            return codec_2025.decode_create_task_result(raw)
        # The server ran it as a plain call after all (e.g. it ignores params.task).
        return mcp_types.CallToolResult.model_validate(raw, by_name=False)


def _meta(meta: dict[str, Any] | None) -> Any:
    return dict(meta) if meta else None


_Answer = Task | mcp_types.CallToolResult | client_logic.InputRound
"""What one ``tools/call`` can be answered with: a task, a result, or an ``input_required`` round."""


def _round(answer: mcp_types.InputRequiredResult) -> client_logic.InputRound:
    """An ``input_required`` answer as the SDK-free round (its requests as wire JSON)."""
    requests = {
        key: request.model_dump(by_alias=True, mode="json", exclude_none=True)
        for key, request in (answer.input_requests or {}).items()
    }
    return client_logic.InputRound(requests, answer.request_state)


def _input_responses(reply: client_logic.InputReply | None) -> mcp_types.InputResponses | None:
    """The previous round's answers as the SDK's ``input_responses=`` (``None``: a first call)."""
    if reply is None or reply.input_responses is None:
        return None
    raw = {key: dict(value) for key, value in reply.input_responses.items()}
    return _INPUT_RESPONSES.validate_python(raw, by_name=False)


async def _call_declining_task(
    session: ClientSession,
    name: str,
    arguments: dict[str, Any] | None,
    meta: dict[str, Any] | None,
    *,
    progress: ProgressFnT | None = None,
    read_timeout: float | None = None,
    reply: client_logic.InputReply | None = None,
) -> _Answer:
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
        return _round(mcp_types.InputRequiredResult.model_validate(raw, by_name=False))
    return mcp_types.CallToolResult.model_validate(raw, by_name=False)


async def list_tools(session: ClientSession) -> list[dict[str, Any]]:
    """Every tool (all pages) as wire JSON."""

    async def page(cursor: str | None) -> dict[str, Any]:
        params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
        listing = await session.list_tools(params=params)
        return listing.model_dump(by_alias=True, mode="json", exclude_none=True)

    return await list_all_tools(page)


def _capabilities(session: ClientSession) -> dict[str, Any]:
    caps = session.server_capabilities
    return caps.model_dump(by_alias=True, mode="json", exclude_none=True) if caps is not None else {}


async def _handshake(session: ClientSession, discover_timeout: float) -> str | None:
    """``server/discover`` first (time-bounded), else ``initialize``; returns why discover did not win."""
    try:
        with anyio.fail_after(discover_timeout):
            await session.discover()
        return None
    except TimeoutError:
        reason = f"server/discover got no answer within {discover_timeout:g} s"
    except MCPError as error:
        if error.code == UNSUPPORTED_PROTOCOL_VERSION:
            data: object = error.data
            supported = (
                cast("Mapping[str, object]", data).get("supported") if isinstance(data, Mapping) else None
            )
            if isinstance(supported, list) and not any(v in HANDSHAKE_PROTOCOL_VERSIONS for v in supported):  # pyright: ignore[reportUnknownVariableType]
                raise  # a modern-only server sharing no version with this client: a real incompatibility
        reason = f"server/discover was refused ({error.code}: {error.message})"
    except (RuntimeError, ValidationError) as error:
        reason = f"server/discover named no protocol version this client speaks ({error})"
    try:
        await session.initialize()
    except MCPError as error:
        if error.code != UNSUPPORTED_PROTOCOL_VERSION:
            raise
        # The unanswered probe locked the connection modern after all: ask once more, unbounded.
        await session.discover()
        return None
    return reason


async def _handshake_pinned_2025(session: ClientSession) -> str | None:
    """``session_kwargs(dialect="2025-11-25")``: ``initialize`` first, as a handshake-era client would.

    A server that speaks both eras would otherwise win ``server/discover`` and leave the pinned
    dialect inactive. A modern-only server refuses ``initialize`` with -32022; the connection is
    then opened with ``server/discover`` and runs plain calls, saying why.
    """
    try:
        await session.initialize()
    except MCPError as error:
        if error.code != UNSUPPORTED_PROTOCOL_VERSION:
            raise
        await session.discover()
        return f"the server refused initialize ({error.code}: {error.message})"
    return None


async def _negotiate(session: ClientSession, discover_timeout: float) -> client_logic.Negotiated:
    fallback_reason: str | None = None
    config = _config_of(session)
    if session.protocol_version is None:
        if config is not None and config.dialects == (DIALECT_2025_11_25,):
            fallback_reason = await _handshake_pinned_2025(session)
        else:
            fallback_reason = await _handshake(session, discover_timeout)
    version = session.protocol_version
    caps = _capabilities(session)
    if version in MODERN_PROTOCOL_VERSIONS:
        offers = codec_2026.server_offers_tasks(caps)
        if not offers:
            reason = f"the server did not declare {TASKS_EXTENSION_ID} in server/discover"
            return _inactive(version, reason, offers=False)
        if config is not None and DIALECT_2026_07_28 not in config.dialects:
            reason = "session_kwargs(dialect='2025-11-25') keeps tasks to handshake-era connections"
            if fallback_reason:
                reason = f"{fallback_reason}, so the connection is {version}; {reason}"
            else:
                reason += " (negotiate() opens such a session with initialize; this one was opened already)"
            return _inactive(version, reason, offers=True)
        return client_logic.Negotiated(version, DIALECT_2026_07_28, None, server_offers_tasks=True)
    prefix = f"{fallback_reason}, so the connection uses the {version} handshake; " if fallback_reason else ""
    offers = codec_2025.server_offers_tool_tasks(caps)
    if not offers:
        return _inactive(
            version, f"{prefix}its initialize capabilities do not offer tasks for tools/call", offers=False
        )
    if DIALECT_2025_11_25 not in sdk_info().client_dialects:
        reason = (
            f"{prefix}mcp {sdk_info().mcp_version} lacks the private seam v2.raw_request that "
            "2025-11-25 tasks need on mcp 2.x"
        )
        return _inactive(version, reason, offers=True)
    if config is not None and DIALECT_2025_11_25 not in config.dialects:
        reason = f"{prefix}session_kwargs(dialect='2026-07-28') keeps tasks to the Tasks extension"
        return _inactive(version, reason, offers=True)
    support = client_logic.declared_support(await list_tools(session))
    return client_logic.Negotiated(
        version, DIALECT_2025_11_25, support, server_offers_tasks=True, reason=None
    )


def _inactive(version: str | None, reason: str, *, offers: bool) -> client_logic.Negotiated:
    logger.info("tasks are inactive on this connection: %s", reason)
    return client_logic.Negotiated(version, None, None, server_offers_tasks=offers, reason=reason)


_CONNECTIONS: weakref.WeakKeyDictionary[ClientSession, _Connection] = weakref.WeakKeyDictionary()
_LOCKS: weakref.WeakKeyDictionary[ClientSession, anyio.Lock] = weakref.WeakKeyDictionary()


async def connection(session: object, *, discover_timeout: float = 5.0) -> _Connection:
    """The negotiated connection for ``session`` (negotiating on first use, then cached per session)."""
    if not isinstance(session, ClientSession):
        raise TypeError(f"expected an mcp.client.session.ClientSession, got {type(session).__name__}")
    cached = _CONNECTIONS.get(session)
    if cached is not None:
        return cached
    lock = _LOCKS.setdefault(session, anyio.Lock())
    async with lock:
        cached = _CONNECTIONS.get(session)
        if cached is None:
            negotiated = await _negotiate(session, discover_timeout)
            cached = _CONNECTIONS[session] = _Connection(session, negotiated, _config_of(session))
        return cached
