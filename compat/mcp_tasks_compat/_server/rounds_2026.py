"""Multi-round-trip input of a 2026-07-28 call (SEP-2322), on wire JSON, SDK-free.

A call that is not a task (a plain call, or one still inside its inline grace) cannot relay a
question through a task; it answers ``input_required`` instead, and the client calls again with
its answers. Two kinds of question end a call so:

* a ``before_task`` question of the tool body (:func:`~.tool_input.ask`): :class:`RoundTrips`
  keys it, writes the round and reads the answers back from the next call;
* the tool's *own* ``input_required`` result: answered as is while the call is undecided, or,
  once the call is a task, relayed through it and the tool run again with the answers, as the
  client would retry it (:func:`relay_rounds`).

The engine carries none of this: it knows only that an outcome was a round
(:class:`~.._engine.RoundTripAnswer`), answered before any task exists. The SDK's part is two
primitives the adapter passes to :func:`relay_rounds`: a result read as an ``input_required``
wire, and the answers set as the next round's params.
"""

from __future__ import annotations

import base64
import binascii
import contextvars
import json
from collections.abc import Awaitable, Callable, Generator, Mapping
from contextlib import contextmanager
from typing import Any, Final, TypeVar, cast

import anyio

from .._engine import (
    InputRelay,
    RoundTripAnswer,
    TaskRecord,
    Work,
    current_run,
    input_key_prefix,
    pending_call,
)

__all__ = [
    "InputRequiredWire",
    "RetryWith",
    "RoundTrips",
    "call_rounds",
    "plain_with_rounds",
    "relay_rounds",
    "rounds_of_call",
    "work_with_rounds",
]

R = TypeVar("R")

InputRequiredWire = Callable[[R], "Mapping[str, Any] | None"]
"""The SDK's primitive: a tool's result as an ``input_required`` wire (``inputRequests``,
``requestState``), or ``None`` for any other result."""

RetryWith = Callable[[Mapping[str, Any], "str | None"], None]
"""The SDK's primitive: ``retry_with(answers, request_state)`` makes the next round's params the
retry a client would send (the answers under the tool's keys, its ``requestState`` echoed)."""

_STATE_VERSION: Final = 1


class RoundTrips:
    """The answers a multi-round-trip call has gathered so far, and the next question.

    A tool asks with ``elicit(..., before_task=True)`` (and the like): each such question gets a
    key from the order it is asked in (``elicit-1``, ``elicit-2``), so asking again in the next
    round (the tool runs again from its start) finds the answer. Answers of earlier rounds ride in
    ``requestState`` (JSON, base64url): the client only echoes it, and what it could change there
    are its own answers. ``MCPServer`` seals ``requestState`` at the wire boundary anyway. A
    ``requestState`` of another shape is the tool's own (the SDK's multi-round-trip flow) and
    carries no answers here.
    """

    def __init__(
        self,
        responses: Mapping[str, Any] | None,
        state: str | None,
        *,
        error: Callable[[Mapping[str, Any]], Exception] = RoundTripAnswer,
    ) -> None:
        answers = _decode_state(state) if state is not None else {}
        answers.update(dict(responses or {}))
        self._answers: dict[str, Any] = answers
        self._asked = 0
        self._error = error
        self.question: dict[str, Any] | None = None
        """The round this run asked (set even if the tool swallowed the exception)."""

    def ask(self, method: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        """The client's answer to this question if it gave one; else ends the round.

        Ending the round raises ``error(result)`` (an exception the SDK's tool layer lets through:
        the adapter passes its own) and remembers the round in :attr:`question`.
        """
        self._asked += 1
        key = f"{input_key_prefix(method)}-{self._asked}"
        answer = self._answers.get(key)
        if isinstance(answer, Mapping):
            return dict(answer)  # pyright: ignore[reportUnknownArgumentType]
        request: dict[str, Any] = {"method": method}
        if params:
            request["params"] = dict(params)
        self.question = {
            "resultType": "input_required",
            "inputRequests": {key: request},
            "requestState": _encode_state(self._answers),
        }
        raise self._error(self.question)


def _encode_state(answers: Mapping[str, Any]) -> str:
    raw = json.dumps({"v": _STATE_VERSION, "answers": dict(answers)}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode()


def _decode_state(state: str) -> dict[str, Any]:
    """The answers carried by a ``requestState`` this server wrote; none for any other (the tool's
    own multi-round-trip state, which it reads itself, passes through untouched)."""
    try:
        decoded: Any = json.loads(base64.urlsafe_b64decode(state.encode()))
    except (binascii.Error, ValueError, UnicodeError):
        return {}
    if (
        not isinstance(decoded, dict)
        or decoded.get("v") != _STATE_VERSION  # pyright: ignore[reportUnknownMemberType]
        or not isinstance(decoded.get("answers"), dict)  # pyright: ignore[reportUnknownMemberType]
    ):
        return {}
    return dict(decoded["answers"])  # pyright: ignore[reportUnknownArgumentType]


# --- the rounds of the call running here -----------------------------------------------------------

_rounds: contextvars.ContextVar[RoundTrips | None] = contextvars.ContextVar(
    "mcp_tasks_compat_call_rounds", default=None
)


@contextmanager
def rounds_of_call(rounds: RoundTrips) -> Generator[RoundTrips]:
    """Inside this, ``before_task`` questions of the call running here are ``rounds``' rounds."""
    token = _rounds.set(rounds)
    try:
        yield rounds
    finally:
        _rounds.reset(token)


def call_rounds() -> RoundTrips | None:
    """The rounds of the 2026-07-28 call running in this context (its plain call, or its run), if any."""
    return _rounds.get()


def work_with_rounds(work: Work, rounds: RoundTrips) -> Work:
    """``work`` run with ``rounds`` as its call's (the run of a call started undecided)."""

    async def run() -> Mapping[str, Any]:
        with rounds_of_call(rounds):
            return await work()

    return run


async def plain_with_rounds(plain: Callable[[], Awaitable[R]], rounds: RoundTrips) -> R | dict[str, Any]:
    """A plain 2026-07-28 call: a ``before_task`` question is answered as a round, no task needed."""
    with rounds_of_call(rounds):
        try:
            result = await plain()
        except Exception:
            if rounds.question is not None:
                return rounds.question
            raise
        return rounds.question if rounds.question is not None else result


# --- a round the tool answers itself -----------------------------------------------------------------


async def relay_rounds(
    next_round: Callable[[], Awaitable[R]],
    *,
    input_required: InputRequiredWire[R],
    retry_with: RetryWith,
) -> R:
    """The rest of the SDK's chain (``next_round``), with the tool's multi-round-trip input handled.

    While the call is undecided, an ``input_required`` round (the tool's own, or a ``before_task``
    question) is the call's plain answer: :class:`~.._engine.RoundTripAnswer` carries it out of
    the work. Once the call is a task, the tool's ``inputRequests`` are relayed as the task's
    (status ``input_required``, answered by ``tasks/update``, or on ``tasks/result`` in
    2025-11-25) and the tool runs again with the answers and its ``requestState``
    (``retry_with``), as the client would retry it.
    """
    rounds = call_rounds()
    while True:
        try:
            result = await next_round()
        except Exception:
            if rounds is not None and rounds.question is not None:
                raise RoundTripAnswer(rounds.question) from None
            raise
        if rounds is not None and rounds.question is not None:  # the tool swallowed the exception
            raise RoundTripAnswer(rounds.question)
        wire = input_required(result)
        if wire is None:
            return result
        call = pending_call()
        if call is not None and call.is_open:
            raise RoundTripAnswer(wire)
        if call is not None:
            await call.task()
        run = current_run()
        if run is None:
            return result
        engine, record = run
        requests = cast("Mapping[str, Mapping[str, Any]]", wire.get("inputRequests") or {})
        answers = await _relayed(engine.inputs, record, requests)
        retry_with(answers, cast("str | None", wire.get("requestState")))


async def _relayed(
    inputs: InputRelay, record: TaskRecord, requests: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """Every request relayed through the task at once; the answers under the tool's own keys."""
    answers: dict[str, Any] = {}

    async def relay(key: str, request: Mapping[str, Any]) -> None:
        answers[key] = await inputs.request(record, request)

    async with anyio.create_task_group() as group:
        for key, request in requests.items():
            group.start_soon(relay, key, request)
    return answers
