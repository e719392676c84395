"""2026-07-28 input requests: the ``inputRequests`` a ``tasks/get`` answer carries, answered once each.

Each request goes through the session's own callbacks (elicitation, sampling, roots) and its
answer back with ``tasks/update``; a request the session cannot answer ends the task with an
error that says why. (2025-11-25 input requests arrive as ordinary server-to-client requests on
the open ``tasks/result``, and the SDK session answers them itself.)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

import anyio.abc

from ..core._model import Task, TaskStatus
from ..errors import TaskCancelledError
from .protocols import RemoteError, TaskWire2026

__all__ = ["InputAnswers", "describe_request", "refused_by"]


def describe_request(key: str, request: Mapping[str, Any]) -> str:
    """``elicitation/create 'What is your name?' (key elicit-1)``: what was asked, for error messages."""
    method = str(request.get("method", "?"))
    params = request.get("params")
    message = params.get("message") if isinstance(params, Mapping) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    asked = f" {message!r}" if isinstance(message, str) else ""
    return f"{method}{asked} (key {key!r})"


_CALLBACK_FOR: Final[Mapping[str, str]] = {
    "elicitation/create": "elicitation_callback",
    "sampling/createMessage": "sampling_callback",
    "roots/list": "list_roots_callback",
}


def refused_by(key: str, request: Mapping[str, Any], error: RemoteError) -> str:
    """Which callback refused which request, and why a session without it always does."""
    callback = _CALLBACK_FOR.get(str(request.get("method")), "callback")
    return (
        f"{describe_request(key, request)} was refused by the session's {callback} "
        f"({error.message}, code {error.code}); a ClientSession built without {callback}= "
        "refuses every such request"
    )


class InputAnswers:
    """Answers a 2026-07-28 task's ``inputRequests``, each key once across polls.

    Keys are unique over a task's life, so a key seen again (the server's snapshot of what is
    outstanding may lag an update) is never answered twice. Each answer is sent by itself as soon
    as it is ready, so a slow answer (a person typing) does not hold back the others.
    """

    def __init__(self, wire: TaskWire2026[Any], task_id: str, stop: Callable[[], None]) -> None:
        self.wire = wire
        self.task_id = task_id
        self.stop = stop
        self.group: anyio.abc.TaskGroup | None = None
        self.seen: set[str] = set()
        self.refused: tuple[str, Mapping[str, Any], RemoteError] | None = None
        self.failure: BaseException | None = None

    def observe(self, task: Task) -> None:
        """Start answering each request of ``task`` not seen before (while this follower answers)."""
        group = self.group
        if group is None or task.status is not TaskStatus.INPUT_REQUIRED:
            return
        if self.refused is not None or self.failure is not None:
            return
        for key, request in task.input_requests.items():
            if key not in self.seen:
                self.seen.add(key)
                group.start_soon(self._answer, key, request, name=f"mcp-task input {key}")

    async def _answer(self, key: str, request: Mapping[str, Any]) -> None:
        try:
            try:
                answer = await self.wire.answer_input(key, request)
            except RemoteError as error:
                if self.refused is None:
                    self.refused = (key, request, error)
                self.stop()
                return
            await self.wire.update(self.task_id, {key: answer})
        except Exception as error:  # a callback that raised, a tasks/update the server refused
            if self.failure is None:
                self.failure = error
            self.stop()

    def refusal_error(self) -> TaskCancelledError | None:
        if self.refused is None:
            return None
        key, request, error = self.refused
        return TaskCancelledError(
            f"task {self.task_id} asked for input this session cannot give, so it was cancelled: "
            f"{refused_by(key, request, error)}",
            task_id=self.task_id,
        )
