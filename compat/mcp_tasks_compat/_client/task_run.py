"""The handle on one remote task (:class:`TaskRun`): poll it, wait for it, cancel it.

``start_tool`` and ``resume`` (:mod:`.entry_points`) hand it out; waiting for the result follows
the task as a call does (:mod:`.following`), and ends it only when its own timeout passes.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from types import TracebackType
from typing import Generic, Literal

import anyio

from .._observe import traces
from ..core._model import Task
from ..dialects import Dialect
from ..errors import TaskError
from .call_options import seconds
from .following import Guard, Settle, end_early, follower_for
from .journal import CallRecord
from .lost import raising_lost_connection
from .outcomes import lookup_error
from .poller import Expiry, Reporter
from .protocols import CANCEL_GRACE_SECONDS, AnyTaskWire, OnStatus, RemoteError, ResultT

__all__ = ["TaskRun"]

logger = logging.getLogger("mcp_tasks_compat.client")


class TaskRun(Generic[ResultT]):
    """A handle on one remote task: poll it, wait for it, cancel it.

    ``async with`` cancels the task on exit unless it already ended. Cancelling a pending
    :meth:`result` does not cancel the remote task (the handle stays usable); leave the
    ``async with`` block or call :meth:`cancel` for that. ``task_id`` is ``None`` only when a
    2026-07-28 server chose to answer the call directly instead of creating a task (its result
    is then available at once). ``tool`` is the tool the task runs (its output schema checks the
    result), ``None`` for a resumed task.

    Example::

        async with await start_tool(session, "build", {"target": "all"}) as run:
            task = await run.status()  # a fresh tasks/get (None: the server answered directly)
            print(run.task_id, task.status.value if task else "answered")
            result = await run.result(timeout=600)  # or: await run.cancel()
    """

    def __init__(
        self,
        *,
        wire: AnyTaskWire[ResultT] | None,
        task: Task | None,
        tool: str | None = None,
        immediate: ResultT | None = None,
        dialect: Dialect,
        on_status: OnStatus | None = None,
        resumed: bool = False,
        cancel_grace: float = CANCEL_GRACE_SECONDS,
        settle: Settle | None = None,
        span: traces.CallSpan | traces.NoSpan = traces.NO_SPAN,
        journal: CallRecord | None = None,
    ) -> None:
        self._journal = journal  # told the outcome once it is read
        self._span = span  # start_tool's, ended with the task's outcome as this handle learns it
        self._wire = wire
        self._settle = settle
        self._first = task
        self._tool = tool
        self._immediate = immediate
        self._dialect: Dialect = dialect
        self._reporter = Reporter(on_status)
        self._resumed = resumed
        self._grace = cancel_grace
        self._expiry = Expiry(task, resumed=resumed) if task is not None else None
        self._lock: anyio.Lock | None = None  # made by the first result(): most handles never wait
        self._outcome: tuple[Literal["ok"], ResultT] | tuple[Literal["error"], BaseException] | None = None
        if immediate is not None:
            self._outcome = ("ok", immediate)

    def __repr__(self) -> str:
        last = self.last_status
        state = last.status.value if last is not None else ("answered directly" if self._immediate else "?")
        return f"<TaskRun {self.task_id} dialect={self.dialect} status={state}>"

    @property
    def dialect(self) -> Dialect:
        """The task dialect of the connection the task runs on (``"2025-11-25"`` or ``"2026-07-28"``)."""
        return self._dialect

    @property
    def task_id(self) -> str | None:
        return self._first.task_id if self._first is not None else None

    @property
    def last_status(self) -> Task | None:
        """The newest state observed so far, without a round trip."""
        return self._reporter.last or self._first

    @property
    def done(self) -> bool:
        """Whether the task is known to have ended (or there never was one)."""
        last = self.last_status
        return self._outcome is not None or last is None or last.is_terminal

    async def status(self) -> Task | None:
        """A fresh ``tasks/get`` (also reported to ``on_status``); ``None`` when there is no task."""
        if self._wire is None or self._first is None:
            return None
        try:
            with raising_lost_connection(task_id=self._first.task_id, dialect=self._wire.dialect):
                task = await self._wire.get(self._first.task_id)
        except RemoteError as error:
            raise lookup_error(
                error, self._first.task_id, self._wire.dialect, method="tasks/get", resumed=self._resumed
            ) from None
        await self._reporter.report(task)
        return task

    # The timeout also cancels the remote task, which a caller-side fail_after cannot do.
    async def result(self, *, timeout: float | timedelta | None = None) -> ResultT:  # noqa: ASYNC109
        """Wait for the task's result; raises the ``Task*Error`` that says how it ended otherwise.

        ``timeout`` bounds this wait; when it passes, the task is cancelled and
        :class:`~mcp_tasks_compat.errors.TaskTimeoutError` raised.
        """
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            if self._outcome is None:
                assert self._wire is not None
                assert self._first is not None
                assert self._expiry is not None
                wire, first = self._wire, self._first
                guard = Guard(
                    timeout=seconds(timeout),
                    grace=self._grace,
                    what=f"task {first.task_id}",
                    settle=self._settle,
                )
                guard.attach(wire, first.task_id, self._reporter)
                start = self._reporter.last or first
                follower = follower_for(
                    wire, start, self._reporter, self._expiry, resumed=self._resumed, tool=self._tool
                )
                try:
                    with self._span.current():
                        value = await guard.run(follower.run, end_on_abort=False)
                except TaskError as error:
                    self._outcome = ("error", error)
                    self._span.close(error)
                    if self._journal is not None:
                        await self._journal.ended(error)
                    raise
                self._outcome = ("ok", value)
                self._span.close()
                if self._journal is not None:
                    await self._journal.ended(None)
            if self._outcome[0] == "error":
                raise self._outcome[1]
            return self._outcome[1]

    async def cancel(self, *, wait: float = 5.0) -> Task | None:
        """Send ``tasks/cancel`` and report the state it leads to.

        Cancellation is cooperative (2026-07-28 servers only acknowledge it), so this follows the
        task up to ``wait`` seconds more in the shared poll loop (:meth:`.poller.Poller.watch`: the
        hint, the age floor, pushed states) and returns the newest state seen.
        """
        if self._wire is None or self._first is None:
            return None
        wire, task_id = self._wire, self._first.task_id
        last = self.last_status
        if last is not None and last.is_terminal:
            return last
        try:
            with self._span.current():
                answered = await wire.cancel(task_id)
        except RemoteError as error:
            logger.debug("tasks/cancel for %s answered %s; reading the state instead", task_id, error)
            answered = None
        if answered is not None:
            await self._reporter.report(answered)
        current = self.last_status or self._first
        if not current.is_terminal:
            current = await self._watch(wire, current, wait)
        if current.is_terminal:
            self._span.close()
        return current

    async def _watch(self, wire: AnyTaskWire[ResultT], latest: Task, wait: float) -> Task:
        """``latest`` followed to its end for at most ``wait`` seconds, in the follower's poll loop."""
        assert self._expiry is not None
        poller = follower_for(
            wire, latest, self._reporter, self._expiry, resumed=self._resumed, tool=self._tool
        )
        with raising_lost_connection(task_id=latest.task_id, dialect=wire.dialect):
            return await poller.watch(wait)

    async def __aenter__(self) -> TaskRun[ResultT]:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._wire is None or self._first is None or self.done:
            return
        await end_early(self._wire, self._first.task_id, self._settle, grace=self._grace)
