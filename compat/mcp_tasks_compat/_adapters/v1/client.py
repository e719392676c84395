"""mcp 1.x client adapter: 2025-11-25 experimental tasks on one ``ClientSession``.

Raw ``send_request`` with the 1.x request types rather than ``session.experimental``: the
experimental helpers raise a pydantic ``ValidationError`` when a server answers a task request
with a plain result, cannot send ``params.task = {}`` and reject a ``Task`` whose null ``ttl``
a 1.x server dropped; they also warn on every access from mcp 1.28. The answers are read by
:mod:`..core._codec_2025`, so nothing here touches the deprecated API and no warning reaches users.

:func:`session_kwargs` is optional on 1.x: it only adds a ``message_handler`` that passes
``notifications/tasks/status`` to whoever follows that task (then to the caller's own handler),
so ``on_status`` hears statuses as they happen instead of at the next poll.

A session's connection is :class:`Connection2025` where the server offers tasks, else
:class:`PlainConnection`, picked once by :func:`connection`; a task's result and a plain answer to
a task-augmented call go through :func:`to_result`, which checks them as ``call_tool`` checks its own.
"""

from __future__ import annotations

import contextlib
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any, Literal, NoReturn, TypeVar, cast

import anyio
import anyio.lowlevel
import mcp.types as types
from mcp.client.session import ClientSession
from mcp.shared.exceptions import McpError
from mcp.shared.session import ProgressFnT
from pydantic import BaseModel, ConfigDict

from ..._client import (
    ConnectionCache,
    Handshake,
    Negotiated,
    NegotiatedConnection,
    OnStatus,
    RemoteError,
    StatusListener,
    StatusListeners,
    ToolCall,
    negotiate,
)
from ..._detect import sdk_info
from ...core import _codec_2025 as codec_2025
from ...core._model import Task
from ...dialects import DIALECT_2025_11_25, Dialect
from ...errors import INTERNAL_ERROR
from ..session import check_sdk_options
from ..session import task_session_class as task_session_class  # the same on both majors
from ..shared import list_all_tools

__all__ = [
    "Connection",
    "Connection2025",
    "PlainConnection",
    "Wire2025",
    "connection",
    "initialize_answer",
    "keep_initialize_answer",
    "session_kwargs",
    "task_session_class",
    "tasks_extension",
    "to_result",
]

logger = logging.getLogger("mcp_tasks_compat.client")

_REQUEST_TIMEOUT = 408
"""mcp 1.x reports its own read timeout as ``McpError`` with the HTTP status code."""

_T = TypeVar("_T")
_warned_no_seam = False


class _RoutedAtOnce:
    """One pending request's answer stream, as the session's receive loop sees it.

    The SDK's ``send`` checkpoints before it delivers; this one delivers at once (the stream has
    room for the one answer), and an answer whose waiter is gone (closed stream) is dropped
    instead of raised into the receive loop. Either way the table hears that the answer came.
    """

    __slots__ = ("_key", "_stream", "_table")

    def __init__(self, stream: Any, table: _CancelSafeTable, key: Any) -> None:
        self._stream = stream
        self._table = table
        self._key = key

    async def send(self, item: Any) -> None:
        # No await before delivery: the waiter cannot be cancelled and close the stream between
        # the loop taking it from the table and handing it the answer.
        self._table.answered(self._key)
        with contextlib.suppress(anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._stream.send_nowait(item)

    def send_nowait(self, item: Any) -> None:
        self._table.answered(self._key)
        self._stream.send_nowait(item)

    async def aclose(self) -> None:
        await self._stream.aclose()

    def close(self) -> None:
        self._stream.close()


class _CancelSafeTable(dict[Any, Any]):
    """A session's pending-request table whose answer streams are :class:`_RoutedAtOnce`, and which
    knows the answers still owed to requests their callers gave up (cancelled, timed out).

    mcp 1.x never tells the server a request was given up, so its answer still comes, maybe after
    the caller has closed the session; over stdio that answer, read after the session closed its
    end of the stream, kills the transport's reader with ``BrokenResourceError`` and turns the
    caller's ``CancelledError`` into an ``ExceptionGroup``. :meth:`settle` waits for those answers.
    """

    def __init__(self) -> None:
        super().__init__()
        self._owed: dict[Any, _RoutedAtOnce] = {}
        self._settled: anyio.Event | None = None

    def __setitem__(self, key: Any, value: Any) -> None:
        if isinstance(value, _RoutedAtOnce):
            value = value._stream  # pyright: ignore[reportPrivateUsage]
        super().__setitem__(key, _RoutedAtOnce(value, self, key))

    # The SDK takes an entry out in two places, both as ``pop(id, None)``: the receive loop when
    # the answer comes (and hands it over at once), and the requester when it stops waiting. An
    # entry taken out before its answer came is owed until the answer comes; the receive loop
    # then finds it here and drops the answer into its closed stream.
    def pop(self, key: Any, *default: Any) -> Any:
        if key in self:
            entry = super().pop(key)
            self._owed[key] = entry  # until its send (at once, when it is the receive loop's pop)
            return entry
        owed = self._owed.get(key)
        if owed is not None:
            return owed
        return super().pop(key, *default)

    def clear(self) -> None:
        """The session ended: nothing more is answered, so nothing is owed any longer."""
        super().clear()
        self._owed.clear()
        self._wake()

    def answered(self, key: Any) -> None:
        self._owed.pop(key, None)
        if not self._owed:
            self._wake()

    def _wake(self) -> None:
        if self._settled is not None:
            self._settled.set()
            self._settled = None

    async def settle(self) -> None:
        """Return once every answer owed to a given-up request has come (or the session ended)."""
        while self._owed:
            if self._settled is None:
                self._settled = anyio.Event()
            await self._settled.wait()


def _make_cancel_safe(session: ClientSession) -> bool:
    """Give ``session`` a pending-request table that makes cancelling a request safe.

    mcp 1.x ends the whole session when a request is cancelled while its answer is being routed
    to it: the receive loop has taken the answer's stream from its table and, at the checkpoint
    inside ``send``, the cancelled waiter closes that stream; ``send`` then raises
    ``ClosedResourceError``, which the loop reads as "transport closed" and stops reading, and
    the transport's reader dies on ``BrokenResourceError``. With :class:`_CancelSafeTable` the
    loop delivers without a checkpoint and drops an answer nobody waits for, so a request can be
    cancelled like any other await. Per session (its private ``_response_streams``), probed:
    without it a cancelled request may end the session, and a warning says so once.
    """
    global _warned_no_seam
    table = getattr(session, "_response_streams", None)
    if isinstance(table, _CancelSafeTable):
        return True
    if not isinstance(table, dict):
        if not _warned_no_seam:
            _warned_no_seam = True
            logger.warning(
                "this mcp %s ClientSession has no _response_streams: cancelling a pending request may "
                "end the session (mcp 1.x closes an answer's stream under its receive loop)",
                sdk_info().mcp_version,
            )
        return False
    safe = _CancelSafeTable()
    for key, value in cast("dict[Any, Any]", table).items():
        safe[key] = value
    session._response_streams = safe  # pyright: ignore[reportPrivateUsage, reportAttributeAccessIssue]
    return True


async def _cancel_safe_request(session: ClientSession, send: Callable[[], Awaitable[_T]]) -> _T:
    """Run one request of ``session`` so that cancelling it (or its caller) cannot end the session.

    Once the session's table is cancel-safe (:func:`_make_cancel_safe`), a request is awaited
    directly: no task per request (one cost ~75 µs per call, ~5 % of a plain in-memory call).
    """
    _make_cancel_safe(session)
    return await send()


class _RawResult(types.Result):
    """Accepts any result object; the codecs do the reading."""

    model_config = ConfigDict(extra="allow")


def _raw(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(by_alias=True, mode="json", exclude_unset=True)


def _remote(error: McpError) -> RemoteError:
    data = error.error
    return RemoteError(data.code, data.message, data.data, timed_out=data.code == _REQUEST_TIMEOUT)


_KEPT_UNFOLLOWED = 64


def _task_id_of(params: object) -> object:
    return cast("dict[str, object]", params).get("taskId") if isinstance(params, dict) else None


class _SessionConfig(StatusListeners):
    """What :func:`session_kwargs` plants in the session: who follows which task.

    A status pushed right after ``tools/call`` answered can be read before its follower listens;
    the newest such status of the last few unfollowed tasks is kept and replayed on ``listen``
    (the reporter drops it if a fresher one came meanwhile).
    """

    def __init__(self) -> None:
        super().__init__()
        self._unfollowed: OrderedDict[str, object] = OrderedDict()

    def deliver(self, raw: object) -> None:
        task_id = _task_id_of(raw)
        if isinstance(task_id, str) and task_id not in self._by_task:
            self._unfollowed.pop(task_id, None)
            self._unfollowed[task_id] = raw
            while len(self._unfollowed) > _KEPT_UNFOLLOWED:
                self._unfollowed.popitem(last=False)
        super().deliver(raw)

    def listen(self, task_id: str, listener: StatusListener) -> Callable[[], None]:
        unlisten = super().listen(task_id, listener)
        kept = self._unfollowed.pop(task_id, None)
        if kept is not None:
            super().deliver(kept)
        return unlisten


class _RouteStatus:
    """``message_handler``: routes task status notifications, then defers to the caller's handler."""

    def __init__(self, config: _SessionConfig, chained: Any) -> None:
        self.config = config
        self.chained = chained

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ServerNotification) and isinstance(
            message.root, types.TaskStatusNotification
        ):
            self.config.deliver(message.root.params.model_dump(by_alias=True, mode="json"))
        if self.chained is not None:
            await self.chained(message)
        else:
            await anyio.lowlevel.checkpoint()


def session_kwargs(
    *,
    dialect: Dialect | None,
    extensions: Mapping[str, Mapping[str, Any]] | None,
    result_claims: Mapping[str, Sequence[Any]] | None,
    notification_bindings: Sequence[Any] | None,
    message_handler: Any,
    push: bool = True,
) -> dict[str, Any]:
    """``ClientSession`` keyword arguments on 1.x: a status-routing ``message_handler`` around yours.

    ``push`` changes nothing here: 2025-11-25 status notifications come without a listen stream.

    Only ``dialect="2025-11-25"`` (all 1.x speaks) and no 2.x-only argument reach here: the rest
    was refused by ``client.session_kwargs`` before.
    """
    del dialect, extensions, result_claims, notification_bindings
    return {"message_handler": _RouteStatus(_SessionConfig(), message_handler)}


def _config_of(session: ClientSession) -> _SessionConfig | None:
    handler: object = getattr(session, "_message_handler", None)
    return handler.config if isinstance(handler, _RouteStatus) else None


async def to_result(
    session: ClientSession, payload: Mapping[str, Any], *, tool: str | None
) -> types.CallToolResult:
    """A tool result JSON as the SDK's ``CallToolResult``, checked as ``ClientSession.call_tool`` checks one.

    The SDK's own check of a plain result (the tool's declared output schema, listed once and
    cached by the session; ``RuntimeError`` when the structured content does not conform) is the
    private ``ClientSession._validate_tool_result`` on 1.x, probed here: an SDK without it checks
    no result, its own ``call_tool``'s included. Skipped for an ``isError`` result, as the SDK
    skips it, and for ``tool=None``.
    """
    result = types.CallToolResult.model_validate(dict(payload))
    if tool is None or result.isError:
        return result
    validate: Callable[[str, types.CallToolResult], Awaitable[None]] | None = getattr(
        session, "_validate_tool_result", None
    )
    if validate is not None:
        await _cancel_safe_request(session, lambda: validate(tool, result))
    return result


class Wire2025:
    """2025-11-25 ``tasks/*`` through ``send_request`` with the 1.x request types."""

    def __init__(self, session: ClientSession, config: _SessionConfig | None) -> None:
        self._session = session
        self._config = config

    @property
    def dialect(self) -> Literal["2025-11-25"]:
        return DIALECT_2025_11_25

    async def _send(
        self, request: types.ClientRequestType, read_timeout: float | None = None
    ) -> dict[str, Any]:
        session = self._session
        timeout = timedelta(seconds=read_timeout) if read_timeout is not None else None
        try:
            return _raw(
                await _cancel_safe_request(
                    session,
                    lambda: session.send_request(
                        types.ClientRequest(request), _RawResult, request_read_timeout_seconds=timeout
                    ),
                )
            )
        except McpError as error:
            raise _remote(error) from None

    async def get(self, task_id: str, *, read_timeout: float | None = None) -> Task:
        raw = await self._send(
            types.GetTaskRequest(params=types.GetTaskRequestParams(taskId=task_id)), read_timeout
        )
        return codec_2025.decode_task(raw, where="tasks/get", code=INTERNAL_ERROR)

    async def result_payload(self, task_id: str) -> dict[str, Any]:
        raw = await self._send(
            types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(taskId=task_id))
        )
        return codec_2025.decode_task_payload(raw, task_id)

    async def cancel(self, task_id: str) -> Task | None:
        raw = await self._send(types.CancelTaskRequest(params=types.CancelTaskRequestParams(taskId=task_id)))
        return codec_2025.decode_task(raw, where="tasks/cancel", code=INTERNAL_ERROR)

    async def to_result(self, payload: Mapping[str, Any], *, tool: str | None) -> types.CallToolResult:
        return await to_result(self._session, payload, tool=tool)

    def listen(self, task_id: str, listener: StatusListener) -> Callable[[], None]:
        if self._config is None:
            return lambda: None
        return self._config.listen(task_id, listener)


class _Negotiated(NegotiatedConnection[ClientSession]):
    """What both connections of one session share, and the plain ``tools/call``."""

    def __init__(self, session: ClientSession, negotiated: Negotiated) -> None:
        super().__init__(session, negotiated, lambda: list_tools(session))

    async def settle(self) -> None:
        """Wait until every answer owed to a request this session gave up has come, so that a
        caller who closes the session next (a session per call) closes a quiet stream."""
        table = getattr(self._session, "_response_streams", None)
        if isinstance(table, _CancelSafeTable):
            await table.settle()

    async def _call_plainly(self, call: ToolCall) -> types.CallToolResult:
        """The base class's ``call_tool`` (which checks the output schema itself); a session
        subclass that overrides it is not re-entered."""
        session = self._session
        return await _cancel_safe_request(
            session,
            lambda: ClientSession.call_tool(
                session,
                call.name,
                call.arguments,
                read_timeout_seconds=_timeout(call),
                progress_callback=cast("ProgressFnT | None", call.progress),
                meta=dict(call.meta) if call.meta else None,
            ),
        )


def _timeout(call: ToolCall) -> timedelta | None:
    return timedelta(seconds=call.read_timeout) if call.read_timeout is not None else None


class Connection2025(_Negotiated):
    """A connection whose server offers 2025-11-25 tasks for ``tools/call``."""

    def __init__(self, session: ClientSession, negotiated: Negotiated) -> None:
        super().__init__(session, negotiated)
        self._wire = Wire2025(session, _config_of(session))

    def wire(self) -> Wire2025:
        return self._wire

    async def call(self, call: ToolCall) -> Task | types.CallToolResult:
        """``as_task``: ``tools/call`` with ``params.task``; else the SDK's own ``call_tool``."""
        check_sdk_options(call.sdk_options)  # 1.x's call_tool has none beyond meta
        if not call.as_task:
            return await self._call_plainly(call)
        session = self._session
        params = types.CallToolRequestParams(
            name=call.name,
            arguments=call.arguments,
            task=types.TaskMetadata(ttl=call.ttl_ms),
            _meta=types.RequestParams.Meta(**call.meta) if call.meta else None,
        )
        request = types.ClientRequest(types.CallToolRequest(params=params))
        timeout = _timeout(call)
        raw = _raw(
            await _cancel_safe_request(
                session,
                lambda: session.send_request(request, _RawResult, request_read_timeout_seconds=timeout),
            )
        )
        if "task" in raw:
            return codec_2025.decode_create_task_result(raw)
        # The server ran it as a plain call after all (e.g. it ignores params.task).
        return await to_result(session, raw, tool=call.name)


class PlainConnection(_Negotiated):
    """A connection whose server offers no tasks: every call is the SDK's own ``call_tool``."""

    def wire(self) -> NoReturn:
        raise RuntimeError(f"this connection runs no tasks ({self._negotiated.reason})")

    async def call(self, call: ToolCall) -> types.CallToolResult:
        check_sdk_options(call.sdk_options)
        return await self._call_plainly(call)


Connection = Connection2025 | PlainConnection
"""What :func:`connection` hands out: the 2025-11-25 connection, or the plain one."""


async def list_tools(session: ClientSession) -> list[dict[str, Any]]:
    """Every tool (all pages) as wire JSON."""

    async def page(cursor: str | None) -> dict[str, Any]:
        params = types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
        listing = await _cancel_safe_request(session, lambda: session.list_tools(params=params))
        return listing.model_dump(by_alias=True, mode="json", exclude_none=True)

    return await list_all_tools(page)


_INITIALIZE_ANSWER_ATTRIBUTE = "_mcp_tasks_compat_initialize_answer"
"""Where the library's own ``initialize`` keeps its answer on the session (mcp 1.x keeps neither
the protocol version nor ``serverInfo``)."""


def keep_initialize_answer(session: ClientSession, answer: types.InitializeResult) -> None:
    """Keep the answer to an ``initialize`` the library sent itself (the openers' handshake)."""
    with contextlib.suppress(AttributeError):
        setattr(session, _INITIALIZE_ANSWER_ATTRIBUTE, answer)


def initialize_answer(session: ClientSession) -> types.InitializeResult | None:
    """The answer :func:`keep_initialize_answer` kept, ``None`` for a session the caller initialized."""
    answer: object = getattr(session, _INITIALIZE_ANSWER_ATTRIBUTE, None)
    return answer if isinstance(answer, types.InitializeResult) else None


async def _negotiate(session: ClientSession) -> Negotiated:
    """``initialize`` where the caller has not, then the decision of :mod:`.._client.connections`.

    A session the library's opener initialized has its protocol version kept; one the caller
    initialized has none (1.x keeps no record of it).
    """
    version: str | None = None
    caps = session.get_server_capabilities()
    kept = initialize_answer(session)
    if kept is not None:
        version = str(kept.protocolVersion)
    if caps is None:
        result = await session.initialize()
        version, caps = str(result.protocolVersion), result.capabilities
    handshake = Handshake(
        version, modern=False, capabilities=caps.model_dump(by_alias=True, mode="json", exclude_none=True)
    )
    return await negotiate(handshake, lambda: list_tools(session))


_CONNECTIONS = ConnectionCache[ClientSession, Connection]()


async def connection(session: object, *, discover_timeout: float = 5.0) -> Connection:
    """The negotiated connection for ``session`` (``initialize`` on first use, then cached per session)."""
    del discover_timeout  # 1.x has no server/discover
    if not isinstance(session, ClientSession):
        raise TypeError(f"expected an mcp.client.session.ClientSession, got {type(session).__name__}")

    async def open_connection() -> Connection:
        negotiated = await _negotiate(session)
        if negotiated.dialect == DIALECT_2025_11_25:
            return Connection2025(session, negotiated)
        return PlainConnection(session, negotiated)

    return await _CONNECTIONS.get(session, open_connection)


def tasks_extension(*, dialect: Dialect | None, on_status: OnStatus | None = None) -> Any:
    """Never reached: ``TaskClientSession.extension`` refuses on mcp 1.x, which has no ``mcp.Client``."""
    del dialect, on_status
    raise NotImplementedError(
        "mcp 1.x has no mcp.Client; build the session as TaskClientSession(read, write)"
    )
