"""Follow a task across lost connections: the library opens the sessions, so a dead server ends a
session, not the caller, and the task is resumed on a new one.

Each session is opened (by the caller's ``open_session``, e.g. ``client.connect_http``) and
closed inside :meth:`ReconnectingClient._in_session`, which sees the transport's failure as an
exception, recognises it (:class:`ServerConnectionLostError`, or
:func:`._client.lost.connection_lost` for an opener of the caller's that gives the SDK's raw
errors), waits (bounded, doubling, jittered) and opens the next session, where the same task is
resumed by id. A session that could not be opened sent nothing, so it is tried again even before
any task exists (a server not up yet).
"""

from __future__ import annotations

import inspect
import logging
import math
import random
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, replace
from typing import Any, Final

import anyio

from ._client.call_options import CallOptions
from ._client.entry_points import call_tool, resume, start_tool
from ._client.journal import record_for
from ._client.lost import connection_lost, leaves
from ._client.protocols import OnStatus
from ._client_api import connection_of
from .errors import ServerConnectionLostError, ServerUnreachableError, TaskTimeoutError, UnsupportedOptInError

__all__ = ["OpenSession", "Reconnect", "ReconnectingClient"]

logger = logging.getLogger("mcp_tasks_compat.client")

OpenSession = Callable[[], AbstractAsyncContextManager[Any]]
"""Opens a new, negotiated client session (e.g. the transport, ``ClientSession`` and ``negotiate``)."""

FIRST_DELAY_S: Final = 0.5
MAX_DELAY_S: Final = 8.0


@dataclass(frozen=True)
class Reconnect:
    """One reconnection about to happen, for a status line: which task, which try, after what.

    ``task_id`` is ``None`` while no session could be opened yet (nothing was sent).

    Example::

        def on_reconnect(reconnect: Reconnect) -> None:  # before each new session
            print(reconnect.describe())  # "connection lost (...); reconnecting in 0.4 s (attempt 1/5) ..."

        client = ReconnectingClient(lambda: connect_http(url), on_reconnect=on_reconnect)
    """

    task_id: str | None
    dialect: str | None
    attempt: int
    attempts: int
    delay_s: float
    cause: BaseException

    def describe(self) -> str:
        cause = type(self.cause).__name__
        retry = f"in {self.delay_s:.1f} s (attempt {self.attempt}/{self.attempts})"
        if self.task_id is None:
            return f"server not reachable ({cause}); trying again {retry}, nothing sent yet"
        return f"connection lost ({cause}); reconnecting {retry} to follow task {self.task_id}"


OnReconnect = Callable[[Reconnect], Awaitable[None] | None]


class _Lost(Exception):
    """A session ended by its connection; ``unreachable`` when it never opened (nothing was sent)."""

    def __init__(self, cause: BaseException, unreachable: ServerUnreachableError | None = None) -> None:
        self.cause = cause
        self.unreachable = unreachable
        super().__init__(str(cause))


@dataclass
class _Followed:
    task_id: str | None = None
    dialect: str | None = None


class ReconnectingClient:
    """Calls tools as tasks on sessions it opens itself, resuming a task when its connection is lost.

    ``attempts`` new sessions are tried per call (after ``first_delay_s``, doubling up to
    ``max_delay_s``, each jittered); ``on_reconnect`` hears each one (default: a log line). Past
    them, :class:`~mcp_tasks_compat.errors.ServerConnectionLostError` names the task. A call lost
    before the server acknowledged a task is never sent again (it may have started): that error
    says so. A session that could not be opened sent nothing, so the first one is retried too
    (past the attempts: :class:`~mcp_tasks_compat.errors.ServerUnreachableError`). 2026-07-28
    tasks resume on any session (any replica sharing the store); 2025-11-25 ones where the
    server's owner rule lets a new session read them (authenticated, or a server with
    ``unauthenticated_2025_scope="task_id"``), else ``TaskNotFoundError``.
    """

    def __init__(
        self,
        open_session: OpenSession,
        *,
        attempts: int = 5,
        first_delay_s: float = FIRST_DELAY_S,
        max_delay_s: float = MAX_DELAY_S,
        on_reconnect: OnReconnect | None = None,
    ) -> None:
        if attempts < 0 or first_delay_s < 0 or max_delay_s < first_delay_s:
            raise ValueError("attempts >= 0 and 0 <= first_delay_s <= max_delay_s")
        self._open_session = open_session
        self.attempts = attempts
        self.first_delay_s = first_delay_s
        self.max_delay_s = max_delay_s
        self._on_reconnect = on_reconnect

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        on_status: OnStatus | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - it also cancels the remote task
    ) -> Any:
        """The tool's ``CallToolResult``, as a task where the server offers one (else a plain call).

        The call's options are ``client.call_tool``'s (a TTL of an hour, or ``timeout`` plus a
        minute if longer; ``timeout`` positive), and it asks for the task at once, as
        ``client.start_tool`` does: the task's id is what a new session resumes.
        """
        options = CallOptions.of(timeout=timeout, at_once=True)
        followed = _Followed()

        async def first(session: Any) -> Any:
            connection = await connection_of(session)
            journal = record_for(session, name, arguments)  # the session's journal, if it has one
            try:
                run = await start_tool(
                    connection, name, arguments, options, on_status=on_status, meta=None, journal=journal
                )
            except UnsupportedOptInError:  # the server offers no task for this tool: a plain call
                return await call_tool(
                    connection, name, arguments, options, mode="plain", on_status=None, meta=None
                )
            followed.task_id, followed.dialect = run.task_id, run.dialect
            return await run.result(timeout=options.timeout_s)

        return await self._follow(first, followed, on_status, options)

    async def result(
        self,
        task_id: str,
        *,
        on_status: OnStatus | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - it also cancels the remote task
    ) -> Any:
        """Follow an existing task (started earlier, or by someone else) to its result."""
        options = CallOptions.of(timeout=timeout)
        followed = _Followed(task_id=task_id)

        async def first(session: Any) -> Any:
            return await self._resumed(session, followed, on_status, options)

        return await self._follow(first, followed, on_status, options)

    async def _resumed(
        self, session: Any, followed: _Followed, on_status: OnStatus | None, options: CallOptions
    ) -> Any:
        """The followed task resumed on ``session``, to its result within ``options.timeout_s``."""
        assert followed.task_id is not None
        connection = await connection_of(session)
        journal = record_for(session, None, None, task_id=followed.task_id)
        run = await resume(connection, followed.task_id, options, on_status=on_status, journal=journal)
        followed.dialect = run.dialect
        return await run.result(timeout=options.timeout_s)

    async def _follow(
        self,
        first: Callable[[Any], Awaitable[Any]],
        followed: _Followed,
        on_status: OnStatus | None,
        options: CallOptions,
    ) -> Any:
        """``first`` on a new session, then the followed task resumed on new ones while connections
        are lost, within ``options.timeout_s`` overall."""
        timeout = options.timeout_s
        deadline = math.inf if timeout is None else anyio.current_time() + timeout
        step = first
        attempt = 0
        while True:
            try:
                return await self._in_session(step)
            except _Lost as lost:
                # Nothing was sent yet (no session opened before any task): the first step again.
                unsent = lost.unreachable if followed.task_id is None else None
                if attempt >= self.attempts or (followed.task_id is None and unsent is None):
                    if unsent is not None:
                        raise unsent from unsent.__cause__
                    raise ServerConnectionLostError(
                        task_id=followed.task_id, dialect=followed.dialect, cause=lost.cause
                    ) from lost.cause
                attempt += 1
                delay = min(self.max_delay_s, self.first_delay_s * 2 ** (attempt - 1)) * random.uniform(
                    0.5, 1.0
                )
                if anyio.current_time() + delay > deadline:
                    raise _out_of_time(followed.task_id, timeout) from lost.cause
                await self._tell(
                    Reconnect(followed.task_id, followed.dialect, attempt, self.attempts, delay, lost.cause)
                )
                await anyio.sleep(delay)  # a back-off before the next session, not a synchronisation
                if unsent is not None:
                    continue
                left = None if timeout is None else max(0.0, deadline - anyio.current_time())
                remaining = replace(options, timeout_s=left)

                async def again(session: Any, remaining: CallOptions = remaining) -> Any:
                    return await self._resumed(session, followed, on_status, remaining)

                step = again

    async def _in_session(self, step: Callable[[Any], Awaitable[Any]]) -> Any:
        """``step`` on a new session; a lost connection (however the transport says it) is :class:`_Lost`,
        and so is a session that could not be opened for want of a connection (nothing was sent).
        Any other failure to open one (a usage error) is raised as it is: trying again cannot help."""
        opened = False
        try:
            async with self._open_session() as session:
                opened = True
                return await step(session)
        except ServerUnreachableError as error:
            raise _Lost(error.cause, error) from None
        except ServerConnectionLostError as error:
            raise _Lost(error.cause) from None
        except Exception as error:
            cause = connection_lost(error)
            if cause is not None and not opened:  # an opener of the caller's, raising the SDK's errors
                unreachable = ServerUnreachableError(server="open_session's server", cause=cause)
                unreachable.__cause__ = error
                raise _Lost(cause, unreachable) from None
            if cause is not None:
                raise _Lost(cause) from None
            inner = leaves(error)
            if len(inner) == 1 and inner[0] is not error and isinstance(inner[0], Exception):
                raise inner[0] from None  # the one real error, out of the transport's task groups
            raise

    async def _tell(self, event: Reconnect) -> None:
        if self._on_reconnect is None:
            logger.warning("mcp-tasks-compat: %s", event.describe())
            return
        answer = self._on_reconnect(event)
        if inspect.isawaitable(answer):
            await answer


def _out_of_time(task_id: str | None, timeout: float | None) -> TaskTimeoutError:
    """The overall timeout passed between sessions (``task_id`` ``None``: none could be opened yet)."""
    if task_id is None:
        return TaskTimeoutError(
            f"the call did not finish within {timeout} s (no session could be opened in time; nothing "
            "was sent)",
            task_id=None,
        )
    return TaskTimeoutError(
        f"task {task_id} did not finish within {timeout} s (its connection was lost and the time ran "
        "out before a new one)",
        task_id=task_id,
    )
