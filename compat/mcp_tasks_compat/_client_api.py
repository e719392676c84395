"""The client's public functions, written once; :mod:`mcp_tasks_compat.client` exports the 1.0 names.

The session forms kept here beside :class:`TaskClientSession` (``session_kwargs``, ``with_tasks``,
``TaskSessionWrapper``, ``tasks_extension``) are what the 1.0 form is built from; the public
module keeps them one minor as deprecated aliases. This module imports no ``mcp``.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Final, TextIO, cast

from ._adapters import get_adapter
from ._client import (
    CANCEL_GRACE_SECONDS,
    CallOptions,
    Mode,
    Negotiated,
    OnProgress,
    OnStatus,
    SessionCall,
    TaskRun,
    call_with_defaults,
    open_negotiated,
    positive_seconds,
    seconds,
    statuses_as_progress,
)
from ._client import MAX_INPUT_ROUNDS as MAX_INPUT_ROUNDS  # answered by client's deprecated alias
from ._client import call_tool as _call_tool
from ._client import resume as _resume
from ._client import start_tool as _start_tool
from ._client.auth import HttpCredentials
from ._client.journal import Endpoint, JournalStore, bound_session, record_for
from ._detect import refuse_unsupported, sdk_info
from .dialects import ALL_DIALECTS, DIALECT_2025_11_25, Dialect
from .errors import SessionOptionsError

DISCOVER_TIMEOUT_SECONDS = 5.0
"""How long :func:`negotiate` waits for ``server/discover`` before falling back to ``initialize``."""


def session_kwargs(
    *,
    dialect: Dialect | None = None,
    extensions: Mapping[str, Mapping[str, Any]] | None = None,
    result_claims: Mapping[str, Sequence[Any]] | None = None,
    notification_bindings: Sequence[Any] | None = None,
    message_handler: Any = None,
    push: bool = True,
) -> dict[str, Any]:
    """Keyword arguments for ``ClientSession(read, write, **session_kwargs())``.

    On mcp 2.x: the Tasks extension entry and its result claim on ``resultType: "task"`` (active
    on 2026-07-28 only), plus a binding for 2025-11-25 status notifications, composed with your
    own ``extensions``, ``result_claims`` and ``notification_bindings``. On mcp 1.x: a
    ``message_handler`` that hears task status notifications and then calls yours; building a
    1.x session without it still works (statuses are then polled).

    ``dialect`` keeps tasks to one dialect (default: whichever the connection negotiates). Pass
    ``message_handler`` here rather than to ``ClientSession`` directly. Anything the installed
    major cannot honour is refused here with :class:`~mcp_tasks_compat.errors.UnsupportedOptInError`
    (on mcp 1.x: ``extensions``, ``result_claims``, ``notification_bindings`` and
    ``dialect="2026-07-28"``, all listed at once).

    ``push`` (mcp 2.x, 2026-07-28): follow tasks through one ``subscriptions/listen`` stream per
    session and stop polling while it is healthy; ``False`` polls only. A server that does not
    push is polled as before.
    """
    asked: list[str] = []
    if dialect is not None:
        if dialect not in ALL_DIALECTS:
            raise ValueError(f"dialect must be one of {ALL_DIALECTS} or None, not {dialect!r}")
        asked.append(f"dialect={dialect!r}")
    for name, value in (
        ("extensions=", extensions),
        ("result_claims=", result_claims),
        ("notification_bindings=", notification_bindings),
    ):
        if value is not None:
            asked.append(name)
    refuse_unsupported(asked, side="client")
    return get_adapter().client.session_kwargs(
        dialect=dialect,
        extensions=extensions,
        result_claims=result_claims,
        notification_bindings=notification_bindings,
        message_handler=message_handler,
        push=push,
    )


def task_message_handler(chained: Any) -> Any:
    """The ``message_handler`` a ``TaskClientSession`` is built with, composed with ``chained``: it
    hands the server's pushed task statuses to whoever follows the task, then every message to
    ``chained``. For a framework that builds its own ``ClientSession`` from a handler it is given
    and takes no session class (fastmcp's ``Client``); statuses are polled without it."""
    return session_kwargs(message_handler=chained).get("message_handler", chained)


async def connection_of(session: Any, *, discover_timeout: float = DISCOVER_TIMEOUT_SECONDS) -> Any:
    """The library's negotiated connection on ``session`` (negotiated on first use, then cached)."""
    if isinstance(session, TaskSessionWrapper):
        session = session.wrapped_session
    return await get_adapter().client.connection(session, discover_timeout=discover_timeout)


async def negotiate(
    session: Any, *, discover_timeout: float | timedelta = DISCOVER_TIMEOUT_SECONDS
) -> Negotiated:
    """Open the connection and report what it offers; use it instead of ``session.initialize()``.

    mcp 2.x sends ``server/discover`` first and falls back to ``initialize`` when the server
    refuses it or does not answer within ``discover_timeout``; mcp 1.x sends ``initialize``. A
    session the caller already opened is not re-negotiated. The answer is cached per session;
    when tasks are inactive, ``Negotiated.reason`` says why (it is also logged at INFO).
    """
    timeout = seconds(discover_timeout)
    assert timeout is not None
    connection = await connection_of(session, discover_timeout=timeout)
    negotiated: Negotiated = connection.negotiated
    return negotiated


COMPOSED_SESSION_OPTIONS: Final = ("message_handler", "extensions", "result_claims", "notification_bindings")
"""The ``ClientSession`` keywords ``session_kwargs()`` composes with the caller's own (its parameters)."""


def _kind(value: object) -> object:
    """What identifies a session setting as the library's: its type, or its members' types and keys."""
    if isinstance(value, Mapping):
        return frozenset(cast("Mapping[object, object]", value))
    if isinstance(value, (list, tuple)):
        handlers: list[object] = [getattr(item, "handler", item) for item in cast("Sequence[object]", value)]
        return frozenset(type(handler) for handler in handlers)
    return type(value)


def _is_librarys(value: object, own: object) -> bool:
    """``value`` holds the library's own setting ``own`` (it was spread from ``session_kwargs()``)."""
    kind, own_kind = _kind(value), _kind(own)
    if isinstance(own_kind, frozenset) and isinstance(kind, frozenset):
        return own_kind <= kind
    return kind == own_kind


def merged_session_options(
    session_options: Mapping[str, Any] | None, *, dialect: Dialect | None, bare: bool = False
) -> dict[str, Any]:
    """The ``ClientSession`` keywords of a session the library opens: the caller's added to its own.

    The keywords ``session_kwargs()`` composes (:data:`COMPOSED_SESSION_OPTIONS`) are composed
    through it, every other one is added; options already built on ``session_kwargs()`` are taken
    as they are. Options that spread ``session_kwargs()`` but replace or drop part of it are refused
    with :class:`~mcp_tasks_compat.errors.SessionOptionsError` (the session would lose task
    support without a word). ``bare=True``: the caller's options only, without the library's task
    plumbing (the testing kit's plain sessions).
    """
    given = dict(session_options or {})
    if bare:
        return given
    own = session_kwargs(dialect=dialect)
    spread = sorted(key for key in own if key in given and _is_librarys(given[key], own[key]))
    if spread:
        lost = sorted(key for key in own if key not in spread)
        if lost:
            replaced = [key for key in lost if key in given]
            raise SessionOptionsError(
                f"the session options hold the library's own {spread} but "
                + (f"replaces its {replaced}" if replaced else f"leaves out its {lost}")
                + f": the session would lose task support without a word (installed: mcp "
                f"{sdk_info().mcp_version}, where the library sets {sorted(own)}). fix: give only "
                "your own options (they are added to the library's, and "
                f"{', '.join(COMPOSED_SESSION_OPTIONS)} are composed with its own); in the testing "
                "kit, bare=True for a session without the library's plumbing"
            )
        return given  # built on session_kwargs() already
    composed = {key: given.pop(key) for key in COMPOSED_SESSION_OPTIONS if key in given}
    return {**session_kwargs(dialect=dialect, **composed), **given}


CONNECT_TIMEOUT_SECONDS = 60.0
"""How long :func:`connect_http` and :func:`connect_stdio` wait for the session to open (the
handshake and :func:`negotiate`); generous, since a stdio server first imports its SDK."""


def connect_http(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    auth: Any = None,
    dialect: Dialect | None = None,
    client_session_kwargs: Mapping[str, Any] | None = None,
    connect_timeout: float | timedelta | None = CONNECT_TIMEOUT_SECONDS,
    journal: JournalStore | None = None,
) -> AbstractAsyncContextManager[Any]:
    """``async with connect_http(url) as session``: a negotiated ``ClientSession`` over streamable HTTP.

    When the server dies (or the network drops) under a call that follows a task, that call and
    then the block end with :class:`~mcp_tasks_compat.errors.ServerConnectionLostError` naming
    the task (resume it on a new session, or use :class:`ReconnectingClient`), where the SDK's own
    transport would cancel the block (a bare ``CancelledError``, then an exception group). A
    session that cannot be opened (nothing listens at ``url``, no answer within
    ``connect_timeout`` seconds) is :class:`~mcp_tasks_compat.errors.ServerUnreachableError`:
    nothing was sent.

    ``client_session_kwargs`` are ``ClientSession`` keywords added to the library's own (your
    callbacks; ``message_handler`` and the 2.x extension seams are composed with the library's, as
    :data:`~mcp_tasks_compat.client.TaskClientSession` composes them). ``dialect``
    keeps tasks to one dialect; on mcp 2.x ``"2025-11-25"`` opens the connection with
    ``initialize`` so that a server speaking both dialects runs that one.

    ``headers`` go with every HTTP request (``{"Authorization": f"Bearer {token}"}``); ``auth``
    is the installed SDK's ``httpx.Auth`` (mcp 1.x: an ``httpx.Auth``; mcp 2.x: an
    ``httpx2.Auth``), e.g. its ``OAuthClientProvider``. A server that refuses them (HTTP 401 or
    403), when the session opens or later, ends the block with
    :class:`~mcp_tasks_compat.errors.ServerAuthError`, whose message names the fix and never a
    credential.

    ``journal`` (a :class:`~mcp_tasks_compat.client.TaskJournal`) records its tasks (docs/client.md).
    """
    app = get_adapter().app
    endpoint = Endpoint.http(url) if journal is not None else Endpoint.http_or_none(url)
    credentials = HttpCredentials(headers=dict(headers or {}), auth=auth)
    transport = app.http_streams(url, headers=credentials.headers, auth=auth, on_response=credentials.hook)
    opening = _opened(transport, url, dialect, client_session_kwargs, connect_timeout, credentials)
    return bound_session(opening, endpoint, journal)


def connect_stdio(
    command: str,
    args: Sequence[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    errlog: TextIO | None = None,
    dialect: Dialect | None = None,
    client_session_kwargs: Mapping[str, Any] | None = None,
    connect_timeout: float | timedelta | None = CONNECT_TIMEOUT_SECONDS,
    journal: JournalStore | None = None,
) -> AbstractAsyncContextManager[Any]:
    """``async with connect_stdio(command, args) as session``: the same over stdio, to a server
    process this spawns (and ends with the block), with :func:`connect_http`'s errors.

    ``env`` is added to the SDK's minimal default environment; the server's stderr goes to
    ``errlog`` (default: this process's ``sys.stderr``). ``journal``: as :func:`connect_http`'s,
    bound to the command line and ``cwd`` (the current folder when ``None``).

    Example::

        async with connect_stdio("python", ["server.py"], env={"LOG_LEVEL": "debug"}) as session:
            result = await call_tool(session, "build", {"target": "all"}, on_status=print)
    """
    app = get_adapter().app
    transport = app.stdio_streams(
        command, list(args), errlog=sys.stderr if errlog is None else errlog, env=env, cwd=cwd
    )
    opening = _opened(
        transport, shlex.join([command, *args]), dialect, client_session_kwargs, connect_timeout
    )
    return bound_session(opening, Endpoint.stdio([command, *args], cwd), journal)


def connect_in_memory(
    server: Any,
    *,
    dialect: Dialect | None = None,
    client_session_kwargs: Mapping[str, Any] | None = None,
    connect_timeout: float | timedelta | None = CONNECT_TIMEOUT_SECONDS,
) -> AbstractAsyncContextManager[Any]:
    """``async with connect_in_memory(server) as session``: the same to a server in this process.

    ``server``: a :class:`~mcp_tasks_compat.server.TaskServer`; on mcp 1.x a ``FastMCP`` or a
    low-level ``Server``; on mcp 2.x an ``MCPServer`` or a low-level ``Server``; anything else is a
    ``TypeError`` saying so. The messages are real JSON-RPC over in-memory streams, as the SDK's own
    in-memory client sends them: for a server embedded in an application, and for tests.

    Example::

        app = TaskServer("builder")  # its tools registered with @app.tool(task="optional")
        async with connect_in_memory(app) as session:
            result = await call_tool(session, "build", {"target": "all"})
    """
    app = get_adapter().app
    transport = app.in_memory_streams(getattr(server, "sdk_server", server))
    name = f"{type(server).__name__} in memory"
    return _opened(transport, name, dialect, client_session_kwargs, connect_timeout)


def _opened(
    transport: AbstractAsyncContextManager[Any],
    server: str,
    dialect: Dialect | None,
    client_session_kwargs: Mapping[str, Any] | None,
    connect_timeout: float | timedelta | None,
    credentials: HttpCredentials | None = None,
) -> AbstractAsyncContextManager[Any]:
    kwargs = merged_session_options(client_session_kwargs, dialect=dialect)
    return open_negotiated(
        get_adapter().app,
        transport,
        server=server,
        session_kwargs=kwargs,
        negotiate=negotiate,
        dialect_2025=dialect == DIALECT_2025_11_25,
        connect_timeout=positive_seconds("connect_timeout", connect_timeout),
        credentials=credentials,
    )


async def call_tool(
    session: Any,
    name: str,
    arguments: dict[str, Any] | None = None,
    *,
    mode: Mode = "auto",
    on_status: OnStatus | None = None,
    timeout: float | timedelta | None = None,
    ttl: float | timedelta | None = None,
    meta: dict[str, Any] | None = None,
    cancel_grace: float | timedelta = CANCEL_GRACE_SECONDS,
    on_progress: OnProgress | None = None,
    read_timeout_seconds: float | timedelta | None = None,
    journal: JournalStore | None = None,
    **sdk_options: Any,
) -> Any:
    """Call a tool and return the installed SDK's ``CallToolResult``, running it as a task where offered.

    ``mode``: ``"auto"`` runs a task when the server offers one for this tool (2025-11-25: the
    tool's ``execution.taskSupport`` is optional or required; 2026-07-28: the server decides),
    else a plain call; ``"task"`` refuses before sending anything when the SDK, the connection or
    the server cannot run it as a task (on 2026-07-28 the server still decides: this library's
    server answers with a task, another may answer a quick tool plainly, which is returned as
    is); ``"plain"`` never asks for a task (a 2026-07-28 server may still answer with
    one, which is then followed like any other).

    ``on_status`` (sync or async) receives each distinct (status, statusMessage) as a
    :class:`~mcp_tasks_compat.core.Task`. ``timeout`` bounds the whole call: the task is
    cancelled and ``TaskTimeoutError`` raised. ``ttl`` asks a 2025-11-25 server to keep the task
    that long (default: an hour, or ``timeout`` plus a minute if longer; the Tasks extension
    leaves TTL to the server). Cancelling the caller sends a
    shielded ``tasks/cancel`` bounded by ``cancel_grace`` and re-raises.

    ``on_progress`` (sync or async) receives ``(progress, total, message)`` for each
    ``notifications/progress`` of a plain call: it sets the request's progress token, as the
    SDK's ``progress_callback`` does. A task's statuses (the server's ``report_status`` /
    ``report_progress``) go to ``on_status``, or without one to ``on_progress`` as ``(progress,
    total, message)`` (the tool's own numbers where the server is this library's), never repeated
    and never going back, also when a call starts plain and becomes a task. ``read_timeout_seconds``
    bounds each request's answer, as the SDK's own keyword does.

    A 2026-07-28 server that answers ``input_required`` (it asks first, multi-round trip) has its
    ``inputRequests`` answered by the session's own callbacks and the call sent again with the
    answers and its ``requestState``, up to :data:`MAX_INPUT_ROUNDS` rounds (then
    ``PeerProtocolError``); a request the session refuses raises ``TaskCancelledError``.

    A task that fails with a JSON-RPC error raises ``TaskFailedError``; one that is cancelled,
    ``TaskCancelledError``; an unknown or expired task, ``TaskNotFoundError`` /
    ``TaskExpiredError``. A tool that returned ``isError: true`` yields that result, as a plain
    call would.

    ``sdk_options`` are the installed SDK's own ``ClientSession.call_tool`` keywords (mcp 2.x:
    ``input_responses``, ``request_state``, ``allow_input_required``, ``allow_claimed``), honoured
    as that ``call_tool`` honours them, except that a task the call causes is always followed to
    its result: ``allow_input_required=True`` returns the server's ``InputRequiredResult``
    instead of answering it, ``input_responses`` / ``request_state`` continue such a call. A
    keyword the installed SDK does not have is a ``TypeError``, as it would be there.
    ``journal`` (a :class:`~mcp_tasks_compat.client.TaskJournal`; default: the session's) records
    the task before the call goes on, and its outcome once read (docs/client.md).
    """
    # No task at once (start_tool asks for one): the call follows the task to its result, so the
    # inline grace costs it nothing (a long tool ends when it ends) and answers a quick tool in one
    # request, where a task at once would cost a create, a listen stream and a read.
    options = CallOptions.of(
        timeout=timeout, ttl=ttl, cancel_grace=cancel_grace, read_timeout_seconds=read_timeout_seconds
    )
    return await call_tool_with(
        session, name, arguments, options, mode=mode, on_status=on_status, meta=meta, on_progress=on_progress,
        journal=journal, **sdk_options,
    )  # fmt: skip


async def call_tool_with(
    session: Any,
    name: str,
    arguments: dict[str, Any] | None,
    options: CallOptions,
    *,
    mode: Mode = "auto",
    on_status: OnStatus | None = None,
    meta: dict[str, Any] | None = None,
    on_progress: OnProgress | None = None,
    journal: JournalStore | None = None,
    **sdk_options: Any,
) -> Any:
    """:func:`call_tool` with its options normalised already: the one body of it and of a
    session's SDK-shaped ``call_tool`` (``TaskClientSession``, ``TaskSessionWrapper``)."""
    record = record_for(session, name, arguments, given=journal)
    connection = await connection_of(session)
    return await _call_tool(
        connection,
        name,
        arguments,
        options,
        mode=mode,
        on_status=on_status,
        meta=meta,
        on_progress=on_progress,
        sdk_options=sdk_options,
        journal=record,
    )


async def start_tool(
    session: Any,
    name: str,
    arguments: dict[str, Any] | None = None,
    *,
    on_status: OnStatus | None = None,
    ttl: float | timedelta | None = None,
    meta: dict[str, Any] | None = None,
    cancel_grace: float | timedelta = CANCEL_GRACE_SECONDS,
) -> TaskRun[Any]:
    """Start a tool as a task and return its :class:`TaskRun` without waiting for the result.

    Refused (before anything is sent) where ``call_tool(mode="task")`` would be. Use the handle as
    ``async with await start_tool(...) as run:`` to cancel the task if the block exits early. A
    session's journal records the task before this returns, and its outcome once read.
    """
    # A handle is wanted: even a quick tool is a task (the hint, where the connection sends it).
    options = CallOptions.of(ttl=ttl, cancel_grace=cancel_grace, at_once=True)
    record = record_for(session, name, arguments)
    connection = await connection_of(session)
    return await _start_tool(
        connection, name, arguments, options, on_status=on_status, meta=meta, journal=record
    )


async def resume(
    session: Any,
    task_id: str,
    *,
    on_status: OnStatus | None = None,
    cancel_grace: float | timedelta = CANCEL_GRACE_SECONDS,
) -> TaskRun[Any]:
    """Attach to a task created elsewhere (another session or process) by its id.

    Works on 2026-07-28, where task ids are handles. On 2025-11-25 it works where the server
    allows: servers built on mcp 1.27.2 or later, and this library's unless they set
    ``unauthenticated_2025_scope="task_id"``, keep an unauthenticated task to the creating
    session, and their refusal arrives as ``TaskNotFoundError`` saying so. A session's journal
    ends the task's entry (if any) once its outcome is read.
    """
    options = CallOptions.of(cancel_grace=cancel_grace)
    record = record_for(session, None, None, task_id=task_id)
    connection = await connection_of(session)
    return await _resume(connection, task_id, options, on_status=on_status, journal=record)


# --- reading a result the same way on both majors ------------------------------------------------


@dataclass(frozen=True)
class ResultView:
    """A tool's result as plain values, whichever major's ``CallToolResult`` it came from.

    ``is_error``: the tool reported an error (``isError``); ``text``: its text content blocks,
    joined by newlines; ``structured``: its ``structuredContent`` (``None`` without one);
    ``content``: every content block as wire JSON.

    Example::

        view = read_result(await call_tool(session, "build", {"target": "all"}))
        if view.is_error:
            raise RuntimeError(view.text)
        print(view.structured if view.structured is not None else view.text)
    """

    is_error: bool
    text: str
    structured: Any
    content: tuple[Mapping[str, Any], ...]


def read_result(result: Any) -> ResultView:
    """Read a ``tools/call`` result: the SDK's ``CallToolResult`` of either major, or its wire JSON.

    mcp 1.x spells the fields ``isError`` / ``structuredContent``, mcp 2.x ``is_error`` /
    ``structured_content``; this reads the wire form both share, so code written once works on both.
    """
    dump = getattr(result, "model_dump", None)
    wire: object = dump(by_alias=True, mode="json", exclude_none=True) if callable(dump) else result
    if not isinstance(wire, Mapping):
        raise TypeError(f"read_result() takes a CallToolResult or its wire JSON, not {type(result).__name__}")
    fields = cast("Mapping[str, Any]", wire)
    blocks: list[Mapping[str, Any]] = [
        cast("Mapping[str, Any]", block)
        for block in cast("Sequence[object]", fields.get("content") or ())
        if isinstance(block, Mapping)
    ]
    texts = [str(block["text"]) for block in blocks if block.get("type") == "text" and "text" in block]
    return ResultView(
        is_error=fields.get("isError") is True,
        text="\n".join(texts),
        structured=fields.get("structuredContent"),
        content=tuple(blocks),
    )


# --- for code that calls session.call_tool itself ------------------------------------------------


def tasks_extension(
    *,
    dialect: Dialect | None = None,
    on_status: OnStatus | None = None,
    on_progress: OnProgress | None = None,
) -> Any:
    """``TaskClientSession.extension()``: the Tasks extension for ``mcp.Client`` (mcp 2.x).

    ``mcp.Client(server, extensions=[TaskClientSession.extension()])``: ``mcp.Client`` builds its
    own ``ClientSession``, so this gives that session the same extension entry, result claim and
    status bindings a ``TaskClientSession`` has. Then ``client.call_tool(...)`` follows a task to
    its result (on the session's one ``subscriptions/listen`` stream where the server pushes, else
    by polling), and ``call_tool(client.session, ...)`` (``on_status``, ``mode``, ``timeout``...)
    works as on a ``TaskClientSession``. Refused on mcp 1.x, which has no ``mcp.Client``.

    ``on_status`` hears the statuses of every task ``client.call_tool`` follows; without it,
    ``on_progress`` hears them as ``(progress, total, message)``, as ``TaskClientSession``'s
    ``progress_callback`` does (``mcp.Client`` gives an extension no per-call callback).
    """
    if dialect is not None and dialect not in ALL_DIALECTS:
        raise ValueError(f"dialect must be one of {ALL_DIALECTS} or None, not {dialect!r}")
    refuse_unsupported(["TaskClientSession.extension()"], side="client")
    if on_progress is not None:
        on_status = statuses_as_progress(on_status, on_progress)
    return get_adapter().client.tasks_extension(dialect=dialect, on_status=on_status)


class TaskSessionWrapper:
    """A session you did not build, whose ``call_tool`` runs tasks; everything else is the session's.

    ``call_tool`` has the SDK's signature (``name, arguments, read_timeout_seconds,
    progress_callback, *, meta``) plus ``mode=``, ``on_status=``, ``timeout=`` and ``ttl=``; the
    wrapper's defaults for ``mode`` and ``on_status`` apply when a call names none.
    ``progress_callback`` hears a plain call's progress and, in a task without ``on_status``, its
    status messages; the SDK's own keywords (``allow_input_required``...) are honoured as
    :func:`call_tool` honours them. On mcp 2.x a
    session built without ``session_kwargs()`` (or ``tasks_extension()``) cannot receive a task
    answer, so ``mode="auto"`` then runs plain calls.
    """

    def __init__(self, session: Any, *, mode: Mode = "auto", on_status: OnStatus | None = None) -> None:
        self.wrapped_session = session
        self.task_mode: Mode = mode
        self.task_on_status = on_status

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wrapped_session, name)

    def __repr__(self) -> str:
        return f"<TaskSessionWrapper of {self.wrapped_session!r}>"

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        read_timeout_seconds: float | timedelta | None = None,
        progress_callback: OnProgress | None = None,
        *,
        meta: dict[str, Any] | None = None,
        mode: Mode | None = None,
        on_status: OnStatus | None = None,
        timeout: float | timedelta | None = None,
        ttl: float | timedelta | None = None,
        **sdk_options: Any,
    ) -> Any:
        call = SessionCall(
            name, arguments, read_timeout_seconds, progress_callback, meta, mode, on_status, timeout, ttl,
            sdk_options,
        )  # fmt: skip
        return await call_with_defaults(call_tool_with, self.wrapped_session, self, call)


def with_tasks(session: Any, *, mode: Mode = "auto", on_status: OnStatus | None = None) -> TaskSessionWrapper:
    """Wrap a ``ClientSession`` built elsewhere (a framework's) so its ``call_tool`` runs tasks."""
    if isinstance(session, TaskSessionWrapper):
        return session
    return TaskSessionWrapper(session, mode=mode, on_status=on_status)


def task_client_session() -> type[Any]:
    """``client.TaskClientSession``, made on first use (a subclass of the installed SDK's ClientSession)."""
    return get_adapter().client.task_session_class(call_tool_with, session_kwargs, tasks_extension)
