"""Following a task to its end: the follower of the wire's dialect, under a guard.

:func:`follower_for` picks the follower once, from the wire's dialect (the followers never ask
which dialect they are on); :class:`Guard` runs it under the overall timeout and sends a
best-effort ``tasks/cancel`` for a task left unfinished when the call ends early.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from ..core._model import Task
from ..dialects import DIALECT_2026_07_28
from ..errors import TaskError, TaskTimeoutError
from .follow_2025 import Follower2025
from .follow_2026 import Follower2026
from .lost import lost_connection_error
from .poller import Expiry, Poller, Reporter, best_effort_cancel
from .protocols import AnyTaskWire, ResultT, TaskWire

__all__ = ["Guard", "Settle", "end_early", "follower_for"]


def follower_for(
    wire: AnyTaskWire[ResultT],
    task: Task,
    reporter: Reporter,
    expiry: Expiry,
    *,
    resumed: bool,
    tool: str | None,
) -> Poller[Any, ResultT]:
    """The one place a dialect picks its follower: the wire's dialect names the wire's interface."""
    if wire.dialect == DIALECT_2026_07_28:
        return Follower2026(wire, task, reporter, expiry, resumed=resumed, tool=tool)
    return Follower2025(wire, task, reporter, expiry, resumed=resumed, tool=tool)


Settle = Callable[[], Awaitable[None]]
"""A connection's :meth:`~.protocols.ClientConnection.settle`: wait until no answer is owed."""


class Guard:
    """Runs an operation under the overall timeout; ends an unfinished task when the call ends early.

    Caller cancellation (anyio or asyncio), the timeout, and any unexpected error all send a
    shielded ``tasks/cancel`` for a task that is known and not yet terminal, then wait for the
    answers the session still owes to requests the call gave up (``settle``), all within
    ``grace``: a caller that closes its session next (a session per call) then closes it on a
    quiet stream, and sees its own ``CancelledError``.
    """

    def __init__(
        self,
        *,
        timeout: float | None,
        grace: float,
        what: str,
        dialect: str | None = None,
        settle: Settle | None = None,
    ) -> None:
        self.timeout = timeout
        self.grace = grace
        self.what = what
        self.dialect = dialect
        self.settle = settle
        self.wire: TaskWire[Any] | None = None
        self.task_id: str | None = None
        self.reporter: Reporter | None = None

    def attach(self, wire: TaskWire[Any], task_id: str, reporter: Reporter) -> None:
        self.wire, self.task_id, self.reporter = wire, task_id, reporter

    def _unfinished(self) -> bool:
        if self.wire is None or self.task_id is None:
            return False
        last = self.reporter.last if self.reporter is not None else None
        return last is None or not last.is_terminal

    async def _end_task(self) -> None:
        await end_early(
            self.wire if self._unfinished() else None, self.task_id, self.settle, grace=self.grace
        )

    async def run(self, operation: Callable[[], Awaitable[ResultT]], *, end_on_abort: bool = True) -> ResultT:
        """Run ``operation``; with ``end_on_abort=False`` only the timeout (not cancelling) ends the task."""
        scope: anyio.CancelScope | None = None
        try:
            if self.timeout is None:  # no deadline: no scope to enter on every call
                return await operation()
            with anyio.CancelScope(deadline=anyio.current_time() + self.timeout) as scope:
                return await operation()
        except TaskError:
            raise  # the task ended (or is gone): nothing left to cancel
        except BaseException as error:
            dialect = self.wire.dialect if self.wire is not None else self.dialect
            lost = lost_connection_error(error, task_id=self.task_id, dialect=dialect)
            if lost is not None:  # the server is out of reach: no cancel can be sent either
                raise lost from error
            if end_on_abort:
                await self._end_task()
            raise
        # Only our own deadline gets here (the scope swallowed its cancellation).
        assert scope is not None
        assert scope.cancelled_caught
        await self._end_task()
        if self.task_id is None:
            raise TaskTimeoutError(
                f"{self.what} did not finish within {self.timeout} s (no task had been created yet)",
                task_id=None,
            )
        raise TaskTimeoutError(
            f"{self.what} did not finish within {self.timeout} s; task {self.task_id} was asked to cancel",
            task_id=self.task_id,
        )


async def end_early(
    wire: TaskWire[Any] | None, task_id: str | None, settle: Settle | None, *, grace: float
) -> None:
    """A call that ends before its task: ``tasks/cancel`` (with a ``wire``), then the owed answers
    awaited; shielded, within ``grace`` in all, never raising."""
    with anyio.CancelScope(shield=True), anyio.move_on_after(grace):
        if wire is not None and task_id is not None:
            await best_effort_cancel(wire, task_id, grace=grace)
        if settle is not None:
            await settle()
