"""Following a 2025-11-25 task: wait on ``tasks/result``, poll ``tasks/get`` next to it.

The result arrives about one round trip after completion through the ``tasks/result``
long-poll, while the poll loop beside it reports statuses and watches the TTL (once a second
only, when nobody listens or ``notifications/tasks/status`` already bring the statuses). A
server whose ``tasks/result`` refuses a working task falls back to plain polling.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Generic

import anyio

from ..core._model import Task, TaskStatus, utc_now
from ..dialects import DIALECT_2025_11_25
from ..errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    CompatError,
    PeerProtocolError,
    TaskNotFoundError,
)
from .outcomes import (
    cancelled_error,
    error_from_remote,
    expired_error,
    failed_error,
    is_tool_result,
    lookup_error,
)
from .poller import MATURE_POLL_FLOOR_SECONDS, Poller
from .protocols import RESULT_GRACE_SECONDS, RemoteError, ResultT, TaskWire2025

__all__ = ["Follower2025"]

logger = logging.getLogger("mcp_tasks_compat.client")

WATCH_POLL_SECONDS = 1.0
"""The least interval of the ``tasks/get`` poll beside a pending ``tasks/result`` when no
``on_status`` listens or the server pushes the statuses (the result arrives through
``tasks/result`` anyway); :meth:`Follower2025.pace` decides."""
STATUS_POLL_SECONDS = MATURE_POLL_FLOOR_SECONDS
"""The least interval of that poll while it is what brings ``on_status`` its statuses (someone
listens, no push heard yet): a young task's quicker floor serves a result only polling brings."""


class _ResultRace(Generic[ResultT]):
    """A ``tasks/result`` wait raced against the poll loop, and what the two learn between them.

    mcp 1.x sessions die when a request is cancelled just as its answer arrives (the answer's
    stream is closed under the receive loop); the 1.x adapter never cancels a request (it
    abandons it instead), and here neither side cancels the other's wait in the normal course
    either: a finished wait stops the poll loop after its current request, and only a pending
    ``tasks/result`` is ever given up.
    """

    def __init__(self, follower: Follower2025[ResultT]) -> None:
        self.follower = follower
        self.payload: dict[str, Any] | None = None
        """The tool result JSON, once ``tasks/result`` answered it."""
        self.terminal: Task | None = None
        """The terminal status the poll loop saw (``None`` when the wait finished first)."""
        self.failure: BaseException | None = None
        """The first error either side ran into; it ends the race."""
        self.result_refused = False
        """``tasks/result`` refused to wait on a working task: the poll loop alone finishes."""
        self.asked_again = False
        """``tasks/result`` was re-asked once after the task ended meanwhile (never twice)."""
        self.payload_ready = anyio.Event()
        self.waiter = anyio.CancelScope()
        """Around the ``tasks/result`` wait; cancelled only while its request is still pending."""

    async def run(self) -> None:
        self.follower.result_pending = True
        self.follower.pace()
        async with anyio.create_task_group() as group:
            group.start_soon(self._guarded_wait)
            group.start_soon(self._poll)

    def _fail(self, error: BaseException) -> None:
        if self.failure is None:
            self.failure = error
        self.follower.stop_polling()

    async def _guarded_wait(self) -> None:
        with self.waiter:
            await self._wait_for_result()

    async def _wait_for_result(self) -> None:
        follower = self.follower
        try:
            while True:
                try:
                    self.payload = await follower.wire.result_payload(follower.task_id)
                except RemoteError as error:
                    if error.timed_out:
                        continue  # the session's read timeout is shorter than the task: ask again
                    if await self._ask_again_after(error):
                        continue
                    return
                self.payload_ready.set()
                follower.stop_polling()
                return
        except Exception as error:
            self._fail(error)

    async def _ask_again_after(self, error: RemoteError) -> bool:
        """What a ``tasks/result`` error answer means; ``True`` to ask for the payload once more."""
        if error.code == INVALID_PARAMS:
            return await self._ask_again_after_unknown(error)
        # Either the task's own JSON-RPC error (it failed) or, from a deviating server, a refusal
        # to wait on a working task: one tasks/get tells which.
        follower = self.follower
        now = await follower.get()
        if now is not None and now.status is TaskStatus.FAILED:
            self._fail(error_from_remote(follower.task_id, error))
            return False
        if now is not None and now.is_terminal and not self.asked_again:
            self.asked_again = True
            return True  # it ended meanwhile: ask for the payload once more
        logger.debug("tasks/result for %s answered %s; polling instead", follower.task_id, error)
        self._poll_alone()
        return False

    async def _ask_again_after_unknown(self, error: RemoteError) -> bool:
        """``tasks/result`` answered -32602: an expired or unknown task, or a refusal to wait."""
        follower = self.follower
        if follower.expiry.passed():
            self._fail(expired_error(follower.task_id, follower.latest.ttl_ms))
            return False
        # Some servers (FastMCP 3) answer -32602 "not completed yet" instead of waiting on a
        # working task: only a tasks/get that fails as well means the task is really unknown.
        known = await follower.get()  # raises TaskNotFoundError when it is
        if known is not None and known.is_terminal and not self.asked_again:
            self.asked_again = True
            return True
        if known is None or not known.is_terminal:
            logger.debug("tasks/result for %s refused a working task; polling", follower.task_id)
            self._poll_alone()
            return False
        self._fail(
            lookup_error(
                error, follower.task_id, DIALECT_2025_11_25, method="tasks/result", resumed=follower.resumed
            )
        )
        return False

    def _poll_alone(self) -> None:
        """No tasks/result wait after all: the poll loop alone finishes, at the hint's pace again."""
        self.result_refused = True
        self.follower.result_pending = False
        self.follower.pace()
        self.follower.reporter.wake()  # cut short a watch-pace sleep already begun

    async def _poll(self) -> None:
        try:
            task = await self.follower.poll_until_terminal()
        except Exception as error:
            self._fail(error)
            self.waiter.cancel()  # its tasks/result is still pending: nothing is being answered
            return
        if task is None:
            return  # the wait finished (or failed) first
        self.terminal = task
        if not self.result_refused:
            # A terminal task's tasks/result answers about one round trip after tasks/get.
            with anyio.move_on_after(RESULT_GRACE_SECONDS):
                await self.payload_ready.wait()
        self.waiter.cancel()


class Follower2025(Poller[TaskWire2025[ResultT], ResultT]):
    """Drives one 2025-11-25 task to a terminal status and turns it into a result or an error."""

    result_pending = False
    """A ``tasks/result`` wait is out (and has not refused): it brings a completed task's result."""
    heard_push = False
    """A ``notifications/tasks/status`` for this task arrived: the server pushes its statuses."""

    def pace(self) -> None:
        """Set the poll's pace: the one rule for how often ``tasks/get`` goes out beside ``tasks/result``.

        While ``tasks/result`` waits, the poll only watches (a server that forgets the wait, a
        task that ends unseen) unless it is what brings ``on_status`` its statuses: so once a
        second when nobody listens, or once the server has shown it pushes them; otherwise the
        hint's pace, but no faster than :data:`STATUS_POLL_SECONDS` (a young task's quicker floor
        is for a result that only polling brings, and costs dozens of requests before the first
        pushed status). Without a ``tasks/result`` wait, the hint's pace.
        """
        if not self.result_pending:
            self.min_interval_s = 0.0
        elif not self.reporter.has_listener or self.heard_push:
            self.min_interval_s = WATCH_POLL_SECONDS
        else:
            self.min_interval_s = STATUS_POLL_SECONDS

    def _subscribe(self) -> Callable[[], None]:
        return self.wire.listen(self.task_id, self._pushed)  # notifications/tasks/status come unasked

    def _pushed(self, task: Task) -> None:
        super()._pushed(task)
        if not self.heard_push:
            self.heard_push = True
            self.pace()  # from the next poll on: a sleep already begun keeps its (short) end

    def _settled_by_push(self, task: Task) -> bool:
        # A pushed "completed" needs no tasks/get to confirm it while tasks/result is waiting:
        # that answer is the result itself (and asked again if it does not come).
        return self.result_pending and task.status is TaskStatus.COMPLETED

    async def _follow(self) -> ResultT:
        race = _ResultRace(self)
        if self.first.is_terminal:
            race.terminal = self.first
        else:
            await race.run()
        if race.failure is not None:
            raise race.failure
        terminal = race.terminal
        if terminal is None:
            terminal = await self._terminal_after_result(race.payload)
        await self.reporter.flush()
        if terminal.status is TaskStatus.CANCELLED:
            raise cancelled_error(terminal)
        payload = race.payload
        if payload is None:
            payload = await self._payload_after_terminal(terminal)
        if is_tool_result(payload):
            # completed, or failed because the tool returned isError: the tool's own result.
            return await self.wire.to_result(payload, tool=self.tool)
        if terminal.status is TaskStatus.FAILED:
            raise failed_error(terminal)
        raise PeerProtocolError(
            f"tasks/result for completed task {self.task_id} carried no tool result",
            jsonrpc_code=INTERNAL_ERROR,
        )

    async def _terminal_after_result(self, payload: dict[str, Any] | None) -> Task:
        """The result arrived first: learn the terminal status it ended with.

        A status notification may already have said it. Otherwise a tool result means the task
        ended ``failed`` (``isError``) or ``completed``, and nobody listening, that is all:
        no ``tasks/get``, which would cost the caller one more round trip after its result had
        arrived. Where ``on_status`` listens it costs that round trip: the status the task ended
        with carries the tool's last message, which a tool sends just before it returns, so
        polling alone (no push heard) rarely sees it before the result. Any other answer (a
        cancelled task's, a deviating server's) is settled by one ``tasks/get`` too.
        """
        if self.latest.is_terminal:
            return self.latest
        terminal: Task | None = None
        if payload is None or not is_tool_result(payload):
            try:
                terminal = await self.get()
            except TaskNotFoundError:
                terminal = None
        elif self.reporter.has_listener:
            try:
                terminal = await self.get()
            except CompatError as error:  # the result is here: the status is only for the listener
                logger.debug("tasks/get for %s after its result failed: %r", self.task_id, error)
        if terminal is None or not terminal.is_terminal:
            assert payload is not None
            status = TaskStatus.FAILED if payload.get("isError") is True else TaskStatus.COMPLETED
            terminal = self.latest.evolve(status=status, last_updated_at=utc_now())
            await self.reporter.report(terminal)
        return terminal

    async def _payload_after_terminal(self, terminal: Task) -> dict[str, Any]:
        try:
            return await self.wire.result_payload(self.task_id)
        except RemoteError as error:
            if terminal.status is TaskStatus.FAILED and error.code not in (INVALID_PARAMS, METHOD_NOT_FOUND):
                raise error_from_remote(self.task_id, error) from None
            if terminal.status is TaskStatus.FAILED:
                raise failed_error(terminal) from None
            raise lookup_error(
                error, self.task_id, DIALECT_2025_11_25, method="tasks/result", resumed=self.resumed
            ) from None
