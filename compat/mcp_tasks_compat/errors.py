"""Every exception the library raises, each with a stable ``code`` and a docs anchor.

Errors say whose fault it was: :class:`UnsupportedSdkError` and :class:`UnsupportedOptInError`
are about the installation or the connection, :class:`TaskStateError` is a local programming
error, :class:`PeerProtocolError` blames the peer and carries the JSON-RPC code to answer with,
and the ``Task*Error`` family reports how a remote task ended. Import them from here or from the
package: ``from mcp_tasks_compat.errors import TaskFailedError`` (or ``from mcp_tasks_compat import
TaskFailedError``).

Four are not :class:`CompatError` subclasses, since they are signals between parts rather than failures
to report: a store tells the engine :class:`StoreConflict` and :class:`ActiveLimitReached` (a
store of your own raises them too), the testing kit raises :class:`SessionSetupError` for a
test's own setup, and the client's openers (the kit's too) :class:`SessionOptionsError` for session
options that would drop part of the library's own.

This module imports no ``mcp``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = [
    "ActiveLimitReached",
    "CompatError",
    "PeerProtocolError",
    "ServerAuthError",
    "ServerConnectionLostError",
    "ServerUnreachableError",
    "SessionOptionsError",
    "SessionSetupError",
    "StoreConflict",
    "TaskCancelledError",
    "TaskError",
    "TaskExpiredError",
    "TaskFailedError",
    "TaskNotFoundError",
    "TaskStateError",
    "TaskStoreError",
    "TaskTimeoutError",
    "UnsupportedOptIn",
    "UnsupportedOptInError",
    "UnsupportedSdkError",
]

DOCS_URL = "https://github.com/mcp-tasks-compat/mcp-tasks-compat/tree/main/docs/errors.md"
"""Where every error message points: docs/errors.md under pyproject's ``[project.urls] Documentation``
(tests/test_docs.py keeps the two the same)."""

# JSON-RPC codes used across the library (kept here so no module needs ``mcp`` for them).
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
HEADER_MISMATCH = -32020
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021


class CompatError(Exception):
    """Base class of every error raised by mcp-tasks-compat."""

    code: ClassVar[str] = "compat-error"

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(f"{message}\n  see {DOCS_URL}#{self.code}")


class UnsupportedSdkError(CompatError, ImportError):
    """The installed ``mcp`` cannot be used at all: missing, outside the range, or inconsistent.

    Raised on first use (never at import), e.g. by :func:`~mcp_tasks_compat.sdk_info`. Example::

        try:
            info = sdk_info()
        except UnsupportedSdkError as error:  # also an ImportError
            sys.exit(error.message)  # the installed version and the pip command that fixes it
    """

    code = "unsupported-sdk"


@dataclass(frozen=True)
class UnsupportedOptIn:
    """One refused opt-in: what was asked and what would support it.

    An :class:`UnsupportedOptInError` holds one per refusal in ``refused``. Example::

        except UnsupportedOptInError as error:
            for refused in error.refused:
                print(f"{refused.asked}: needs {refused.supported_by}; fix: {refused.fix}")
    """

    asked: str
    supported_by: str
    fix: str


class UnsupportedOptInError(CompatError, ValueError):
    """Opt-ins that the installed SDK or the negotiated connection cannot honour.

    Raised at construction, before anything reaches the wire, and lists every refused opt-in
    at once so one fix attempt is enough. ``refused`` holds them (:class:`UnsupportedOptIn`),
    ``installed`` the installed SDK. Example (on 2025-11-25, a tool whose ``taskSupport`` is
    ``forbidden``; 2026-07-28 servers decide per call)::

        try:
            run = await start_tool(session, "build", {"target": "all"})
        except UnsupportedOptInError as error:  # nothing was sent
            print(error.installed, [item.asked for item in error.refused])
            result = await call_tool(session, "build", {"target": "all"}, mode="plain")
    """

    code = "unsupported-opt-in"

    def __init__(self, refused: Sequence[UnsupportedOptIn], *, installed: str) -> None:
        self.refused = tuple(refused)
        self.installed = installed
        lines = [f"cannot honour {len(self.refused)} opt-in(s) with {installed}:"]
        for item in self.refused:
            lines.append(f"  - {item.asked}: needs {item.supported_by}; fix: {item.fix}")
        super().__init__("\n".join(lines))


class TaskStateError(CompatError, RuntimeError):
    """A local attempt at an illegal task transition (e.g. completing a cancelled task).

    ``jsonrpc_code`` is what a server answers when a request caused it (-32602 for cancelling a
    terminal task, as 2025-11-25 requires). A tool body meets it when it asks for input after its
    task ended (from a shielded cleanup after a cancel, say). Example::

        try:
            answer = await elicit("Keep the partial build?", schema)
        except TaskStateError as error:  # e.g. "task ... is cancelled; it cannot ask for input"
            logger.info(error.message)
    """

    code = "task-state"

    def __init__(self, message: str, *, jsonrpc_code: int = INVALID_PARAMS) -> None:
        self.jsonrpc_code = jsonrpc_code
        super().__init__(message)


class TaskStoreError(CompatError, RuntimeError):
    """The task store cannot be used: a file that is not ours, a newer schema, read-only, locked,
    full, or a store server that does not answer. The message names the store and the fix.

    Raised when the server opens its store, and at construction for a ``redis://`` URL without
    redis-py installed (a malformed URL is a ``ValueError``). Example::

        try:
            app = TaskServer("builder", store="redis://127.0.0.1:6379/0")
        except TaskStoreError as error:  # redis-py missing: the message names the pip extra
            sys.exit(error.message)
    """

    code = "task-store"


class PeerProtocolError(CompatError, ValueError):
    """The peer sent something undecodable or illegal; ``jsonrpc_code`` is the answer to give.

    A client meets it when a server breaks its dialect (``data``: the peer's error data, if
    any). Example::

        try:
            result = await call_tool(session, "build", {"target": "all"})
        except PeerProtocolError as error:  # what to report to the server's authors
            print(error.message, error.jsonrpc_code, error.data)
    """

    code = "peer-protocol"

    def __init__(self, message: str, *, jsonrpc_code: int = INVALID_PARAMS, data: Any = None) -> None:
        self.jsonrpc_code = jsonrpc_code
        self.data = data
        super().__init__(message)


class TaskError(CompatError):
    """Base of the errors that report how a remote task ended.

    ``task_id`` is the task's id (``None`` when no task had been created yet). Example::

        try:
            result = await run.result()
        except TaskError as error:  # failed, cancelled, not found, timed out, or the connection lost
            print(f"task {error.task_id} ended without a result ({error.code})")
    """

    code = "task-error"

    def __init__(self, message: str, *, task_id: str | None = None) -> None:
        self.task_id = task_id
        super().__init__(message)


class TaskFailedError(TaskError):
    """The task ended ``failed`` with a JSON-RPC error (``code``, ``message``, ``data``)."""

    code = "task-failed"

    def __init__(
        self, *, task_id: str | None, error_code: int, error_message: str, error_data: Any = None
    ) -> None:
        self.error_code = error_code
        self.error_message = error_message
        self.error_data = error_data
        super().__init__(f"task {task_id} failed: {error_message} (code {error_code})", task_id=task_id)


class TaskCancelledError(TaskError):
    """The task ended ``cancelled``."""

    code = "task-cancelled"


class TaskNotFoundError(TaskError, LookupError):
    """The server does not know the task id (unknown, expired, or scoped to another session)."""

    code = "task-not-found"


class TaskExpiredError(TaskNotFoundError):
    """The task outlived its TTL before a terminal status was seen."""

    code = "task-expired"


class TaskTimeoutError(TaskError, TimeoutError):
    """The caller's overall timeout passed before the task ended (the task was cancelled)."""

    code = "task-timeout"


class ServerConnectionLostError(TaskError, ConnectionError):
    """The connection to the server was lost while a task was started or followed.

    ``task_id`` is the task being followed (``None`` when the server had not acknowledged one yet,
    so whether it exists is unknown), ``dialect`` the task dialect, ``cause`` what the transport
    raised. The task itself may well go on: resume it on a new session
    (``client.resume(session, task_id)``), or let :class:`mcp_tasks_compat.client.ReconnectingClient`
    do it.
    """

    code = "server-connection-lost"

    def __init__(
        self, *, task_id: str | None, dialect: str | None, cause: BaseException, during: str | None = None
    ) -> None:
        self.dialect = dialect
        self.cause = cause
        detail = cause.message if isinstance(cause, CompatError) else str(cause)
        reason = f"{type(cause).__name__}: {detail}".strip().rstrip(":")
        if during is not None:  # raised where no task is known (a transport's own context manager)
            what = during
        elif task_id is None:
            what = "before the server acknowledged a task (whether one was created is unknown)"
        else:
            what = f"while following task {task_id} (dialect {dialect}); resume it on a new session"
        super().__init__(f"the connection to the server was lost {what} ({reason})", task_id=task_id)


class ServerUnreachableError(CompatError, ConnectionError):
    """A session could not be opened: nothing listens, the server command exits at once, or the
    handshake got no answer in time. None of the caller's requests was sent, so trying again is safe.

    ``server`` is the URL or command line, ``cause`` what the transport raised (a ``TimeoutError``
    when the handshake went unanswered). Not a :class:`TaskError`: no task can exist. Example::

        try:
            async with connect_http("http://127.0.0.1:8000/mcp") as session:
                result = await call_tool(session, "build", {"target": "all"})
        except ServerUnreachableError as error:  # nothing was sent: safe to try again
            print(f"{error.server} is not up: {error.cause!r}")
    """

    code = "server-unreachable"

    def __init__(self, *, server: str, cause: BaseException, detail: str = "") -> None:
        self.server = server
        self.cause = cause
        reason = f"{type(cause).__name__}: {cause}".strip().rstrip(":")
        super().__init__(
            f"could not open a session to {server} ({reason}); none of your requests was sent, "
            f"so it is safe to try again{detail}"
        )


class ServerAuthError(CompatError):
    """The server refused the credentials: HTTP 401 (none, or not valid) or 403 (not allowed).

    ``server`` is the URL, ``status`` the HTTP status. Raised by ``client.connect_http`` (and the
    command line) when the session cannot be opened or when a request in it is refused.
    :class:`~mcp_tasks_compat.client.ReconnectingClient` does not retry it: the same credentials
    would be refused again. The message never holds a credential. Example::

        try:
            async with connect_http(url, headers={"Authorization": f"Bearer {token}"}) as session:
                result = await call_tool(session, "build", {"target": "all"})
        except ServerAuthError as error:  # a missing, expired or wrong token: not worth retrying
            print(f"{error.server} answered HTTP {error.status}: check the token")
    """

    code = "server-auth"

    def __init__(self, *, server: str, status: int) -> None:
        self.server = server
        self.status = status
        what = (
            "refused the credentials (HTTP 403 Forbidden: the token is valid but not allowed here)"
            if status == 403
            else f"refused the credentials (HTTP {status} Unauthorized: none were sent, or not valid ones)"
        )
        super().__init__(
            f"{server} {what}; fix: check the token or the headers sent (connect_http(headers=..., "
            "auth=...); on the command line -H/--header and --bearer-env); trying again with the same "
            "credentials will not help"
        )


class StoreConflict(Exception):
    """A store's compare-and-set lost: ``current`` is the task's state there now (``None``: gone).

    Raised by a :class:`~mcp_tasks_compat.server.TaskStore` to the engine, which re-reads and
    decides again; a store of your own raises it the same way. Example::

        if stored.version != expected_version:
            raise StoreConflict(task_id, stored)
    """

    def __init__(self, task_id: str, current: Any) -> None:
        self.task_id = task_id
        self.current: Any = current
        super().__init__(f"task {task_id} changed in the store meanwhile")


class ActiveLimitReached(Exception):
    """A create with ``active_limit`` refused: the owner already has ``active`` unfinished tasks.

    Raised by a store to the engine, which answers the ``tools/call`` with a JSON-RPC error; a
    store of your own raises it from ``create``, in the same atomic step as the insert. Example::

        async def create(self, state, *, active_limit=None):
            active = self._unfinished.get(state.owner, 0)
            if active_limit is not None and active >= active_limit:
                raise ActiveLimitReached(active)
    """

    def __init__(self, active: int) -> None:
        self.active = active
        super().__init__(f"the owner already has {active} active tasks")


class SessionSetupError(RuntimeError):
    """A testing-kit session could not be opened as asked (e.g. the pinned dialect was not negotiated).

    Example: ``connect`` fixtures pinned to ``"2026-07-28"`` against a server that offers only
    2025-11-25 raise it, naming what was negotiated and why.
    """


class SessionOptionsError(ValueError):
    """Session options would silently replace part of the library's own session settings (e.g. a
    ``message_handler`` spread over the library's); the message names the fix.

    Raised by the client's openers for ``client_session_kwargs=``, before anything is opened.
    Example::

        try:
            async with connect_http(url, client_session_kwargs=options) as session: ...
        except SessionOptionsError as error:  # options holding part of the library's own settings
            print(error)  # the setting it would lose, and the fix: pass only your own options
    """
