"""Following a 2026-07-28 task: ``tasks/get`` carries the result or the error inline.

The poll loop answers the task's ``inputRequests`` as they appear (:mod:`.inputs`); a request
the session cannot answer ends the task rather than leave it waiting for its TTL.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NoReturn

import anyio

from ..core._model import Task, TaskStatus
from ..errors import INTERNAL_ERROR, PeerProtocolError
from .inputs import InputAnswers
from .outcomes import cancelled_error, failed_error
from .poller import Poller, best_effort_cancel
from .protocols import CANCEL_GRACE_SECONDS, RemoteError, ResultT, TaskWire2026

__all__ = ["Follower2026"]


class Follower2026(Poller[TaskWire2026[ResultT], ResultT]):
    """Drives one 2026-07-28 task to a terminal status, answering its input requests on the way."""

    inputs: InputAnswers | None = None

    def _subscribe(self) -> Callable[[], None]:
        push = self.wire.push  # notifications/tasks come only on a listen stream
        return push.follow(self.task_id, self._pushed, self._wake) if push is not None else _nothing

    def _covered(self) -> bool:
        push = self.wire.push
        return push is not None and push.covers(self.task_id)

    def _push_expected(self) -> bool:
        push = self.wire.push
        return push is not None and push.pushes(self.task_id)

    def _observed(self, task: Task) -> None:
        if self.inputs is not None:
            self.inputs.observe(task)

    def _settled_by_push(self, task: Task) -> bool:
        # A pushed notifications/tasks is the full DetailedTask: its result or error is inline.
        return task.status is not TaskStatus.COMPLETED or task.result is not None

    async def _follow(self) -> ResultT:
        inputs = self.inputs = InputAnswers(self.wire, self.task_id, self.stop_polling)
        task = await self._poll_answering(inputs)
        if inputs.refused is not None or inputs.failure is not None:
            await self._end_for_input(inputs)
        assert task is not None  # only an input refusal or failure stops the poll loop early
        await self.reporter.flush()
        return await self._outcome(task)

    async def _poll_answering(self, inputs: InputAnswers) -> Task | None:
        """Poll to a terminal status while the task's input requests are answered next to the loop."""
        task: Task | None = self.first
        polling_error: Exception | None = None
        async with anyio.create_task_group() as answers:
            inputs.group = answers
            try:
                inputs.observe(self.latest)  # a pushed state may have overtaken the first answer
                if self.first.status is TaskStatus.COMPLETED and self.first.result is None:
                    # A born-terminal creation answer carries no payload; read it once.
                    task = await self.get()
                    if task is None or not task.is_terminal:
                        task = await self.poll_until_terminal()
                elif not self.first.is_terminal:
                    task = await self.poll_until_terminal()
            except Exception as error:  # raised below, as itself rather than in an exception group
                polling_error = error
            answers.cancel_scope.cancel()  # answers still under way are not wanted by an ended task
        inputs.group = None
        if polling_error is not None:
            raise polling_error
        return task

    async def _end_for_input(self, inputs: InputAnswers) -> NoReturn:
        """The task cannot go on without the input: end it, then say why (always raises)."""
        refusal = inputs.refusal_error()
        await best_effort_cancel(self.wire, self.task_id, grace=CANCEL_GRACE_SECONDS)
        with anyio.move_on_after(CANCEL_GRACE_SECONDS):
            await self.get()
        await self.reporter.flush()
        if refusal is not None:
            raise refusal
        failure = inputs.failure
        assert failure is not None
        if isinstance(failure, RemoteError):
            raise PeerProtocolError(
                f"tasks/update for task {self.task_id} failed: {failure.message} "
                f"(code {failure.code}); the task was cancelled",
                jsonrpc_code=failure.code,
                data=failure.data,
            ) from None
        raise failure

    async def _outcome(self, task: Task) -> ResultT:
        if task.status is TaskStatus.COMPLETED:
            if task.result is None:
                raise PeerProtocolError(
                    f"tasks/get for task {task.task_id} said completed but carried no result",
                    jsonrpc_code=INTERNAL_ERROR,
                )
            return await self.wire.to_result(task.result, tool=self.tool)
        if task.status is TaskStatus.FAILED:
            raise failed_error(task)
        raise cancelled_error(task)


def _nothing() -> None:
    """The undo of a subscription that was never made (no push link: polled only)."""
