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
from dataclasses import dataclass
from typing import Any, Final

import anyio

from ._adapters import get_adapter
from ._client.entry_points import call_tool, resume, start_tool
from ._client.lost import connection_lost, leaves
from ._client.protocols import CANCEL_GRACE_SECONDS, OnStatus
from .errors import ServerConnectionLostError, ServerUnreachableError, TaskTimeoutError, UnsupportedOptInError

__all__ = ["OpenSession", "Reconnect", "ReconnectingClient"]

logger = logging.getLogger("mcp_tasks_compat.client")

OpenSession = Callable[[], AbstractAsyncContextManager[Any]]
"""Opens a new, negotiated client session (e.g. the transport, ``ClientSession`` and ``negotiate``)."""

GRACE_S: Final = CANCEL_GRACE_SECONDS
FIRST_DELAY_S: Final = 0.5
MAX_DELAY_S: Final = 8.0
DISCOVER_TIMEOUT_S: Final = 5.0
"""As :func:`mcp_tasks_compat.client.negotiate` waits for ``server/discover`` by default."""


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
        """The tool's ``CallToolResult``, as a task where the server offers one (else a plain call)."""
        followed = _Followed()

        async def first(session: Any) -> Any:
            connection = await _connection(session)
            try:
                run = await start_tool(
                    connection,
                    name,
                    arguments,
                    on_status=on_status,
                    ttl_ms=None,
                    meta=None,
                    cancel_grace=GRACE_S,
                )
            except UnsupportedOptInError:  # the server offers no task for this tool: a plain call
                return await call_tool(
                    connection,
                    name,
                    arguments,
                    mode="plain",
                    on_status=None,
                    overall_timeout=timeout,
                    ttl_ms=None,
                    meta=None,
                    cancel_grace=GRACE_S,
                )
            followed.task_id, followed.dialect = run.task_id, run.dialect
            return await run.result(timeout=timeout)

        return await self._follow(first, followed, on_status, timeout)

    async def result(
        self,
        task_id: str,
        *,
        on_status: OnStatus | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - it also cancels the remote task
    ) -> Any:
        """Follow an existing task (started earlier, or by someone else) to its result."""
        followed = _Followed(task_id=task_id)

        async def first(session: Any) -> Any:
            return await self._resumed(session, followed, on_status, timeout)

        return await self._follow(first, followed, on_status, timeout)

    async def _resumed(
        self,
        session: Any,
        followed: _Followed,
        on_status: OnStatus | None,
        timeout: float | None,  # noqa: ASYNC109 - passed on to TaskRun.result, which cancels the task
    ) -> Any:
        assert followed.task_id is not None
        connection = await _connection(session)
        run = await resume(connection, followed.task_id, on_status=on_status, cancel_grace=GRACE_S)
        followed.dialect = run.dialect
        return await run.result(timeout=timeout)

    async def _follow(
        self,
        first: Callable[[Any], Awaitable[Any]],
        followed: _Followed,
        on_status: OnStatus | None,
        timeout: float | None,  # noqa: ASYNC109 - the overall bound, across reconnections
    ) -> Any:
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

                async def again(session: Any, left: float | None = left) -> Any:
                    return await self._resumed(session, followed, on_status, left)

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


async def _connection(session: Any) -> Any:
    """The library's connection on a session ``open_session`` gave (negotiated on first use)."""
    return await get_adapter().client.connection(session, discover_timeout=DISCOVER_TIMEOUT_S)
