"""2026-07-28 multi-round-trip input (SEP-2322): a ``tools/call`` answered ``input_required``.

A server may answer a call with ``resultType: "input_required"``: ``inputRequests`` to answer and,
optionally, a ``requestState`` to echo. The client answers each request through the session's own
callbacks (the same answering a task's ``inputRequests`` get, :mod:`.inputs`), then sends the same
``tools/call`` again with ``inputResponses`` and the ``requestState`` unchanged, until the answer
is a result or a task. The SDK's ``ClientSession`` does not loop by itself (its ``mcp.Client``
does); the adapters hand each round to :func:`answer_rounds`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeVar

import anyio
import anyio.abc

from ..errors import PeerProtocolError, TaskCancelledError
from .inputs import refused_by
from .protocols import RemoteError

__all__ = ["MAX_INPUT_ROUNDS", "InputReply", "InputRound", "answer_rounds"]

MAX_INPUT_ROUNDS: Final = 10
"""How many ``input_required`` answers one call may get in a row before the client gives up."""

_STATE_ONLY_PAUSES: Final = (0.05, 0.1, 0.2)
"""Pauses before re-sending a round that carried only ``requestState`` (the server asks to retry
later); the last one repeats. A round with questions is answered at once."""

AnswerT = TypeVar("AnswerT")


@dataclass(frozen=True)
class InputRound:
    """One ``input_required`` answer: the requests (wire JSON, by key) and the state to echo."""

    input_requests: Mapping[str, Mapping[str, Any]]
    request_state: str | None


@dataclass(frozen=True)
class InputReply:
    """What the next ``tools/call`` carries: ``inputResponses`` (by key) and the echoed ``requestState``."""

    input_responses: Mapping[str, Mapping[str, Any]] | None
    request_state: str | None


Answer = Callable[[str, Mapping[str, Any]], Awaitable[dict[str, Any]]]
"""One request through the session's callback (see ``TaskWire2026.answer_input``)."""


async def answer_rounds(
    first: InputRound,
    *,
    answer: Answer,
    retry: Callable[[InputReply], Awaitable[AnswerT | InputRound]],
    what: str,
    max_rounds: int = MAX_INPUT_ROUNDS,
) -> AnswerT:
    """Answer ``first`` and every round after it; the call's final answer (a result or a task).

    ``what`` names the call in errors (``tools/call 'greet'``). A request the session refuses
    raises :class:`TaskCancelledError` (``task_id=None``: no task was made) with the same words a
    task's refused request gets; a callback that raises propagates as itself.
    """
    current: AnswerT | InputRound = first
    rounds = 0
    state_only = 0
    while isinstance(current, InputRound):
        rounds += 1
        if rounds > max_rounds:
            raise PeerProtocolError(
                f"{what}: the server answered input_required {max_rounds} times in a row and asked again; "
                f"this client answers at most MAX_INPUT_ROUNDS = {max_rounds} rounds per call "
                "(a server that keeps asking never lets the call finish)"
            )
        responses: dict[str, dict[str, Any]] | None = None
        if current.input_requests:
            state_only = 0
            responses = await _answer_all(current.input_requests, answer, what)
        else:
            await anyio.sleep(_STATE_ONLY_PAUSES[min(state_only, len(_STATE_ONLY_PAUSES) - 1)])
            state_only += 1
        current = await retry(InputReply(responses, current.request_state))
    return current


async def _answer_all(
    requests: Mapping[str, Mapping[str, Any]], answer: Answer, what: str
) -> dict[str, dict[str, Any]]:
    """Every request of one round at once; the first refusal stops the others and is raised."""
    responses: dict[str, dict[str, Any]] = {}
    refused: list[tuple[str, Mapping[str, Any], RemoteError]] = []
    failed: list[Exception] = []

    async def one(group: anyio.abc.TaskGroup, key: str, request: Mapping[str, Any]) -> None:
        try:
            responses[key] = await answer(key, request)
        except RemoteError as error:
            refused.append((key, request, error))
            group.cancel_scope.cancel()
        except Exception as error:  # a callback that raised: raised below as itself
            failed.append(error)
            group.cancel_scope.cancel()

    async with anyio.create_task_group() as group:
        for key, request in requests.items():
            group.start_soon(one, group, key, request, name=f"mcp-round input {key}")
    if failed:
        raise failed[0]
    if refused:
        key, request, error = refused[0]
        raise TaskCancelledError(
            f"{what} asked for input this session cannot give, so the call was abandoned "
            f"(no task had been created): {refused_by(key, request, error)}",
            task_id=None,
        )
    return responses
