"""Run a long MCP tool call as a task, the same way on mcp 1.x and 2.x, against either dialect.

Open a session and call::

    from mcp_tasks_compat.client import call_tool, connect_http, read_result

    async with connect_http("http://127.0.0.1:8000/mcp") as session:
        result = await call_tool(session, "build", {"target": "all"}, on_status=print)
        print(read_result(result).text)

``result`` is the installed SDK's own ``CallToolResult``; :func:`read_result` reads it the same
way on both majors. :func:`connect_http`, :func:`connect_stdio` and :func:`connect_in_memory` open
a negotiated session (the SDK's ``ClientSession`` with the library's settings: use it with
:func:`call_tool`). On a transport of your own, or for a framework
that builds its sessions and calls ``session.call_tool(...)`` itself, the session is a
:data:`TaskClientSession` (``TaskClientSession(read, write)``, then :func:`negotiate`; or hand a
framework the class), whose ``call_tool`` runs tasks. ``mcp.Client`` on mcp 2.x builds its own
session: give it ``extensions=[TaskClientSession.extension()]``.

The dialect is chosen per connection from what was negotiated: the Tasks extension (2026-07-28)
where ``server/discover`` declares it, 2025-11-25 experimental tasks on a handshake-era
connection that offers them, and a plain call otherwise (``mode="auto"``). :func:`start_tool` and
:func:`resume` give a :class:`TaskRun` handle instead of waiting; :class:`ReconnectingClient`
follows a task across lost connections; a :class:`TaskJournal` keeps the tasks a client made on
disk, so that it finds them again after it restarts.

This module imports no ``mcp``: the adapter for the installed major is imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from . import _client_api
from ._client import Mode, Negotiated, OnProgress, OnStatus, TaskRun
from ._client_api import (
    ResultView,
    call_tool,
    connect_http,
    connect_in_memory,
    connect_stdio,
    negotiate,
    read_result,
    resume,
    start_tool,
)
from ._deprecated import Alias, answer
from ._journal import TaskJournal
from ._reconnect import Reconnect, ReconnectingClient

__all__ = [
    "Mode",
    "Negotiated",
    "OnProgress",
    "OnStatus",
    "Reconnect",
    "ReconnectingClient",
    "ResultView",
    "TaskClientSession",
    "TaskJournal",
    "TaskRun",
    "call_tool",
    "connect_http",
    "connect_in_memory",
    "connect_stdio",
    "negotiate",
    "read_result",
    "resume",
    "start_tool",
]

_ALIASES: Final = {
    "session_kwargs": Alias(
        "TaskClientSession(read, write) in place of ClientSession(read, write, **session_kwargs())",
        lambda: _client_api.session_kwargs,
    ),
    "with_tasks": Alias(
        "TaskClientSession as the session class (a framework's too: docs/integrations.md)",
        lambda: _client_api.with_tasks,
    ),
    "TaskSessionWrapper": Alias("TaskClientSession", lambda: _client_api.TaskSessionWrapper),
    "tasks_extension": Alias("TaskClientSession.extension()", lambda: _client_api.tasks_extension),
    "CONNECT_TIMEOUT_SECONDS": Alias(
        "the connect_timeout= default of connect_http() (60 s)", lambda: _client_api.CONNECT_TIMEOUT_SECONDS
    ),
    "MAX_INPUT_ROUNDS": Alias(
        "the documented bound (docs/client.md, 10 rounds)", lambda: _client_api.MAX_INPUT_ROUNDS
    ),
}


def __getattr__(name: str) -> Any:
    """``TaskClientSession`` is made on first use (it subclasses the installed SDK's
    ``ClientSession``); the pre-1.0 names answer with a ``DeprecationWarning``."""
    if name == "TaskClientSession":
        return _client_api.task_client_session()
    return answer(__name__, name, _ALIASES)


if TYPE_CHECKING:

    class TaskClientSession(Any):  # the installed SDK's ClientSession: type checkers take it as one
        """The one task-capable client session: a ``ClientSession`` subclass of the installed SDK's.

        ``TaskClientSession(read, write, *, dialect=None, mode="auto", on_status=None, push=True,
        **client_session_kwargs)``: every ``ClientSession`` argument is accepted (``extensions``,
        ``result_claims``, ``notification_bindings`` and ``message_handler`` are composed with the
        library's own). Its ``call_tool`` keeps the SDK's signature (so a framework that calls
        ``session.call_tool(...)`` gets tasks) and adds ``mode=``, ``on_status=``, ``timeout=`` and
        ``ttl=``; it returns the SDK's ``CallToolResult``. A ``progress_callback`` hears a task's
        statuses as ``(progress, total, message)`` when no ``on_status`` is given.

        Example::

            async with TaskClientSession(read, write) as session:
                await negotiate(session)
                result = await session.call_tool("build", {"target": "all"})
        """

        def __init__(self, read_stream: Any, write_stream: Any, *args: Any, **kwargs: Any) -> None: ...

        async def call_tool(
            self, name: str, arguments: dict[str, Any] | None = None, *args: Any, **kwargs: Any
        ) -> Any:
            """The SDK's ``call_tool``, following a task to its result; see :func:`call_tool`."""

        @staticmethod
        def extension(*, dialect: Any = None, on_status: Any = None, on_progress: Any = None) -> Any:
            """The same tasks for ``mcp.Client`` (mcp 2.x), which builds its own session.

            ``mcp.Client(server, extensions=[TaskClientSession.extension()])``: ``client.call_tool``
            then follows a task to its result. ``on_status`` hears every task's statuses, or
            ``on_progress`` as ``(progress, total, message)``. Refused on mcp 1.x (no ``mcp.Client``).
            """
