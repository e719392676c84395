"""``client.TaskJournal``: the tasks a client made, kept on disk, found again after it restarts.

The store and the per-call records are :mod:`._client.journal`'s (SDK-free, below the public
API); this module adds what needs the public client: following an entry on a session
(:meth:`TaskJournal.follow`) and following every pending one on fresh sessions to their endpoints
(:meth:`TaskJournal.resume`). This module imports no ``mcp``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import timedelta
from typing import Any

import anyio

from ._client.call_options import CallOptions, seconds
from ._client.entry_points import resume as _resume
from ._client.journal import CallRecord, Endpoint, JournalEntry, JournalStore, endpoint_of
from ._client.protocols import OnStatus
from ._client_api import connect_http, connect_stdio, connection_of
from .core._model import format_timestamp
from .errors import CompatError, TaskExpiredError, TaskNotFoundError, TaskStateError

__all__ = ["OpenEndpoint", "TaskJournal"]

OpenEndpoint = Callable[[JournalEntry], AbstractAsyncContextManager[Any]]
"""``connect(entry)``: a negotiated session to ``entry.endpoint`` in ``entry.dialect`` (``async with``),
for :meth:`TaskJournal.resume`."""


def _expired_error(entry: JournalEntry, unknown: TaskNotFoundError) -> TaskExpiredError:
    expires = entry.expires_at()
    assert expires is not None
    return TaskExpiredError(
        f"task {entry.task_id} ({entry.tool or 'a resumed task'} at {entry.endpoint.describe()}) expired: "
        f"its TTL of {(entry.ttl_ms or 0) / 1000:g} s ran out at {format_timestamp(expires)} (counted from "
        f"when the server acknowledged it, {format_timestamp(entry.acknowledged_at)}), and the server "
        f"no longer knows it ({unknown.message}); its outcome is lost. The journal entry is ended",
        task_id=entry.task_id,
    )


class _EntryRecord(CallRecord):
    """The record of a journal entry followed again: a task the server no longer knows, past the
    TTL it was given, ends the entry as ``task-expired``."""

    def __init__(self, store: JournalStore, entry: JournalEntry) -> None:
        super().__init__(store, entry.endpoint, entry.tool, None)
        self._task_id = entry.task_id
        self._entry = entry

    async def ended(self, error: BaseException | None) -> None:
        unknown = isinstance(error, TaskNotFoundError) and not isinstance(error, TaskExpiredError)
        if unknown and self._entry.expired():
            assert isinstance(error, TaskNotFoundError)
            error = _expired_error(self._entry, error)
        await super().ended(error)


class TaskJournal(JournalStore):
    """The tasks this client made, kept in a SQLite file until their outcomes are read.

    ``TaskJournal("sqlite:///agent-tasks.db")`` (or a plain path) opens the file, creating it.
    Given to a session (``connect_http(url, journal=...)``, ``connect_stdio(..., journal=...)``,
    ``TaskClientSession(read, write, journal=..., endpoint=url)``) or to one call
    (``call_tool(..., journal=...)``), it records each task the moment the server acknowledges it
    (the endpoint, dialect, task id, tool, a hash of the arguments, when, the TTL), on disk before
    the call goes on, and ends the entry when the call reads its outcome (a result, or a
    ``Task*Error`` saying how it ended). A call that stops otherwise (the process died, the
    connection was lost, the caller cancelled) leaves it pending: after a restart,
    :meth:`pending` lists them and :meth:`resume` follows each to its end. Several sessions and
    processes may share one file.

    Example::

        journal = TaskJournal("sqlite:///agent-tasks.db")
        for entry, outcome in await journal.resume():  # what a previous run left unread
            print(entry.task_id, entry.tool, outcome)
        async with connect_http(url, journal=journal) as session:
            result = await call_tool(session, "build", {"target": "all"})
    """

    Entry = JournalEntry
    """The type of an entry (:meth:`pending`): ``endpoint``, ``task_id``, ``dialect``, ``tool``..."""

    def __init__(self, location: str | os.PathLike[str]) -> None:
        super().__init__(location)

    def __repr__(self) -> str:
        return f"<TaskJournal {str(self.path)!r}>"

    def pending(self) -> list[JournalEntry]:
        """The entries whose outcome was not read yet, oldest first."""
        return self.entries(pending_only=True)

    async def follow(
        self,
        entry: JournalEntry,
        session: Any,
        *,
        on_status: OnStatus | None = None,
        timeout: float | timedelta | None = None,  # noqa: ASYNC109 - it also cancels the remote task
    ) -> Any:
        """Follow ``entry``'s task to its end on ``session`` and return its ``CallToolResult``.

        ``session`` must be to the entry's own endpoint (opened with :func:`connect_http` /
        :func:`connect_stdio` to it, or a ``TaskClientSession(..., endpoint=...)`` naming it):
        any other, or one whose server the library does not know, is refused with
        :class:`~mcp_tasks_compat.errors.TaskStateError` before anything is sent (the entry stays
        pending). The entry ends with the outcome: the result, or the ``Task*Error`` raised here;
        a task the server no longer knows whose TTL ran out meanwhile is
        :class:`~mcp_tasks_compat.errors.TaskExpiredError`. ``timeout`` bounds the wait (the task
        is then cancelled: ``TaskTimeoutError``).
        """
        self._check_endpoint(entry, session)
        connection = await connection_of(session)
        _check_dialect(entry, connection.negotiated.dialect)
        record = _EntryRecord(self, entry)
        options = CallOptions.of(timeout=timeout)
        try:
            run = await _resume(connection, entry.task_id, options, on_status=on_status, journal=record)
            return await run.result(timeout=seconds(timeout))
        except TaskNotFoundError as error:
            if isinstance(error, TaskExpiredError) or not entry.expired():
                raise
            raise _expired_error(entry, error) from error

    def _check_endpoint(self, entry: JournalEntry, session: Any) -> None:
        at = endpoint_of(session)
        if at == entry.endpoint:
            return
        where = f"to {at.describe()}" if at is not None else "to a server the library does not know"
        raise TaskStateError(
            f"journal entry {entry.task_id} ({entry.tool}) belongs to {entry.endpoint.describe()}, "
            f"and this session is {where}: a task is followed only at the endpoint that made it, so "
            "nothing was sent and the entry stays pending. fix: open the session to the entry's "
            "endpoint (connect_http(entry.endpoint.url) or connect_stdio(*entry.endpoint.command, "
            "cwd=entry.endpoint.cwd)), or let journal.resume() open it"
        )

    async def resume(
        self,
        *,
        headers: Mapping[str, str] | None = None,
        auth: Any = None,
        env: Mapping[str, str] | None = None,
        connect: OpenEndpoint | None = None,
        on_status: OnStatus | None = None,
        timeout: float | timedelta | None = None,  # noqa: ASYNC109 - per task, and it cancels it
    ) -> list[tuple[JournalEntry, Any]]:
        """Follow every pending entry to its end, each on a fresh session to its own endpoint.

        Returns ``(entry, outcome)`` per entry, oldest first: the ``CallToolResult``, or the
        library error that ended it (a ``Task*Error``; ``ServerUnreachableError`` /
        ``ServerAuthError`` / ``ServerConnectionLostError`` leave the entry pending, to try
        again). One session is opened per endpoint and dialect (``connect_http(url, headers=,
        auth=, dialect=)``, or ``connect_stdio(command, args, cwd=, env=, dialect=)``, in the
        dialect the task was made in), and its entries are followed at once; ``connect(entry)``
        opens them your way instead (it must open a session to ``entry.endpoint``: another is
        refused per entry with ``TaskStateError``). Headers, auth and the environment are never
        stored in the journal, so they are given here again.
        """
        entries = self.pending()
        opener = connect or _default_opener(headers, auth, env)
        outcomes: dict[tuple[str, str], Any] = {}
        by_endpoint: dict[tuple[Endpoint, str], list[JournalEntry]] = {}
        for entry in entries:
            by_endpoint.setdefault((entry.endpoint, entry.dialect), []).append(entry)
        async with anyio.create_task_group() as group:
            for at in by_endpoint.values():
                group.start_soon(self._resume_at, at, opener, outcomes, on_status, timeout)
        return [(entry, outcomes[_key(entry)]) for entry in entries]

    async def _resume_at(
        self,
        entries: Sequence[JournalEntry],
        opener: OpenEndpoint,
        outcomes: dict[tuple[str, str], Any],
        on_status: OnStatus | None,
        timeout: float | timedelta | None,  # noqa: ASYNC109 - passed on to follow()
    ) -> None:
        async def one(entry: JournalEntry, session: Any) -> None:
            try:
                outcomes[_key(entry)] = await self.follow(
                    entry, session, on_status=on_status, timeout=timeout
                )
            except CompatError as error:
                outcomes[_key(entry)] = error

        try:
            async with opener(entries[0]) as session, anyio.create_task_group() as group:
                for entry in entries:
                    group.start_soon(one, entry, session)
        except CompatError as error:  # the session did not open, or was lost
            for entry in entries:
                outcomes.setdefault(_key(entry), error)


def _check_dialect(entry: JournalEntry, dialect: str | None) -> None:
    """A task is read in the dialect it was made in: another is refused, nothing sent."""
    if dialect != entry.dialect:
        raise TaskStateError(
            f"journal entry {entry.task_id} ({entry.tool}) was made in dialect {entry.dialect}, and this "
            f"session to {entry.endpoint.describe()} speaks {dialect or 'no task dialect'}: nothing was "
            "sent and the entry stays pending. fix: open the session with dialect=entry.dialect "
            "(connect_http(..., dialect=...)), or let journal.resume() open it"
        )


def _key(entry: JournalEntry) -> tuple[str, str]:
    return entry.endpoint.key(), entry.task_id


def _default_opener(
    headers: Mapping[str, str] | None, auth: Any, env: Mapping[str, str] | None
) -> OpenEndpoint:
    def opener(entry: JournalEntry) -> AbstractAsyncContextManager[Any]:
        endpoint, dialect = entry.endpoint, entry.dialect
        if endpoint.url is not None:
            return connect_http(endpoint.url, headers=headers, auth=auth, dialect=dialect)
        command, *args = endpoint.command
        return connect_stdio(command, args, cwd=endpoint.cwd, env=env, dialect=dialect)

    return opener
