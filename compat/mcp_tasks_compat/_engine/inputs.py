"""Input from the client on behalf of a task's work: the relay between the work and the client.

Work asks with :meth:`InputRelay.request`: the task goes ``input_required`` with the request
under a key never used before in its life, waits for the answer and returns to ``working``
(the lifecycle's ``NEED_INPUT`` / ``INPUT_RECEIVED``). Answers come by ``tasks/update`` in
2026-07-28 (:meth:`InputRelay.submit_responses`) or from an adapter relaying the request on a
``tasks/result`` stream in 2025-11-25 (:meth:`InputRelay.relay_until_terminal`). A cancelled or
expired task releases its waiter.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from types import MappingProxyType
from typing import Any

import anyio
import anyio.lowlevel

from ..core._lifecycle import TaskEvent, next_status
from ..core._model import JsonRpcError, Task, TaskStatus
from ..errors import TaskStateError
from .reader import TaskReader
from .records import TaskRecord
from .stores import TaskState
from .writer import TaskWriter

__all__ = ["DELIVERY_BOUND_S", "InputRefused", "InputRelay", "InputSender", "input_key_prefix"]

DELIVERY_BOUND_S = 5.0
"""Longest the status change of a relayed answer may take (its notification to a stuck peer)."""

_KEY_PREFIXES: Mapping[str, str] = {
    "elicitation/create": "elicit",
    "sampling/createMessage": "sample",
    "roots/list": "roots",
}


class InputRefused(Exception):
    """Raised by a relay's ``send`` when the client answered an input request with a JSON-RPC error."""

    def __init__(self, error: JsonRpcError) -> None:
        self.error = error
        super().__init__(error.message)


InputSender = Callable[[str, Mapping[str, Any]], Awaitable[Mapping[str, Any]]]
"""``send(key, request) -> answer``: one input request to the client and its result (wire JSON)."""


def input_key_prefix(method: str) -> str:
    """The readable part of an input request key (``elicit-3``): what kind of input it asks for."""
    return _KEY_PREFIXES.get(method, "input")


class InputRelay:
    """Outstanding input requests per task, their answers, and who is relaying them (one per engine)."""

    def __init__(self, reader: TaskReader, writer: TaskWriter) -> None:
        self._reader = reader
        self._writer = writer

    async def request(self, record: TaskRecord, request: Mapping[str, Any]) -> dict[str, Any]:
        """Ask the client for input on behalf of the task's work and wait for the answer.

        ``request`` is the wire request (``{"method": ..., "params": ...}``). The task goes
        ``input_required`` with the request under a new key (unique over the task's life) next to
        any still outstanding, and returns to ``working`` once nothing is outstanding. Returns the
        answer (the result object, e.g. an ``ElicitResult`` as wire JSON). A task that ends while
        waiting (cancelled, expired) releases the waiter: its run's cancel scope is cancelled, and
        a waiter outside that scope gets :class:`TaskStateError`. A waiter cancelled by its own
        work (a timeout around the call) withdraws its request.
        """
        if record.task.is_terminal:
            raise TaskStateError(
                f"task {record.task.task_id} is {record.task.status.value}; it cannot ask for input"
            )
        record = self._reader.watch(record)
        prefix = input_key_prefix(str(request.get("method", "")))

        keys: list[str] = []  # the key of the state actually saved (a conflict recomputes it)

        def ask(state: TaskState) -> TaskState | None:
            if state.is_terminal:
                return None
            serial = state.input_serial + 1
            keys[:] = [f"{prefix}-{serial}"]
            outstanding = {**state.task.input_requests, keys[0]: dict(request)}
            status = next_status(state.task.status, TaskEvent.NEED_INPUT)
            task = state.task.evolve(status=status, input_requests=outstanding)
            return state.evolve(task=task, input_serial=serial)

        try:
            if not await self._writer.mutate(record, ask, force_notify=True, fence=record.run_claim):
                raise TaskStateError(
                    f"task {record.task.task_id} is {record.task.status.value}; it cannot ask for input"
                )
            return await self._await_answer(record, keys[0])
        finally:
            self._reader.unwatch(record)

    async def _await_answer(self, record: TaskRecord, key: str) -> dict[str, Any]:
        """Wait for the answer to ``key`` (given here or on another replica) and take it."""
        answered = False
        try:
            while key not in record.input_responses:
                if record.task.is_terminal:
                    if record.scope is not None and record.scope.cancel_called:
                        await anyio.lowlevel.checkpoint()  # the run is being stopped: end here
                    raise TaskStateError(
                        f"task {record.task.task_id} ended ({record.task.status.value}) while waiting "
                        f"for input {key!r}"
                    )
                await record.changed.wait()
            answered = True
            answer = dict(record.input_responses[key])

            def taken(state: TaskState) -> TaskState | None:
                rest = {k: v for k, v in state.input_responses.items() if k != key}
                return state.evolve(input_responses=MappingProxyType(rest))

            with anyio.CancelScope(shield=True):
                fence = record.run_claim
                await self._writer.mutate(record, taken, force_notify=False, announce=False, fence=fence)
            return answer
        finally:
            record.input_claims.discard(key)
            if not answered and key in record.task.input_requests and not record.task.is_terminal:
                with anyio.CancelScope(shield=True):
                    await self._settle(record, withdrawn=[key])

    async def _settle(self, record: TaskRecord, *, withdrawn: list[str]) -> None:
        """Drop withdrawn keys; back to ``working`` once nothing is outstanding."""

        def withdraw(state: TaskState) -> TaskState | None:
            if state.is_terminal:
                return None
            return state.evolve(task=_without(state.task, withdrawn))

        await self._writer.mutate(record, withdraw, force_notify=True, fence=record.run_claim)

    async def submit_responses(
        self, task_id: str, owner: str | None, responses: Mapping[str, Mapping[str, Any]]
    ) -> list[str]:
        """Deliver answers to input requests (``tasks/update``); returns the keys taken.

        Only keys the task currently has outstanding are taken (the first answer wins); anything
        else is ignored, as SEP-2663 asks. A partial answer keeps the task ``input_required``
        with the rest; once nothing is outstanding it is ``working`` again before this returns,
        so a ``tasks/get`` right after the acknowledgement never shows an answered request.
        Unknown ids raise -32602. The work may run on another replica: the saved answer reaches it
        through the store's notifier.
        """
        record = await self._reader.lookup(task_id, owner)
        return await self.deliver(record, responses)

    async def deliver(self, record: TaskRecord, responses: Mapping[str, Mapping[str, Any]]) -> list[str]:
        """:meth:`submit_responses` for a record the caller already holds."""
        taken: list[str] = []

        def answer(state: TaskState) -> TaskState | None:
            if state.is_terminal:
                return None
            outstanding = state.task.input_requests
            taken[:] = [k for k in responses if k in outstanding and k not in state.input_responses]
            if not taken:
                return None
            given = {**state.input_responses, **{k: dict(responses[k]) for k in taken}}
            return state.evolve(task=_without(state.task, taken), input_responses=MappingProxyType(given))

        if not await self._writer.mutate(record, answer, force_notify=True):
            return []
        return list(taken)

    def claim(self, record: TaskRecord) -> list[tuple[str, Mapping[str, Any]]]:
        """Outstanding requests no one is relaying yet, now claimed by the caller (2025-11-25).

        The caller sends each to the client and answers it with :meth:`deliver`; if it cannot
        (its stream closed), it calls :meth:`release_claim` so another relay can.
        """
        claimed = [
            (key, request)
            for key, request in record.task.input_requests.items()
            if key not in record.input_claims and key not in record.input_responses
        ]
        record.input_claims.update(key for key, _request in claimed)
        return claimed

    def release_claim(self, record: TaskRecord, key: str) -> None:
        """Give a claimed request back (its relay failed); waiters on the record look again."""
        if key in record.input_claims:
            record.input_claims.discard(key)
            record.wake_waiters()

    async def relay_until_terminal(self, record: TaskRecord, send: InputSender) -> Task:
        """2025-11-25 ``tasks/result``: relay the task's input requests on this stream until it ends.

        Each outstanding request no other stream is relaying is sent with ``send`` (which adds the
        related-task ``_meta`` and waits for the client's answer); the answer goes to the waiting
        work. Any number of streams may relay one task; each request goes to one of them.
        """
        record = await self._reader.watch_current(record)
        try:
            async with anyio.create_task_group() as relays:
                while not record.task.is_terminal:
                    for key, request in self.claim(record):
                        relays.start_soon(
                            self._relay_one, record, send, key, request, name=f"mcp-task input {key}"
                        )
                    await record.changed.wait()
                relays.cancel_scope.cancel()  # answers still owed to an ended task are no longer wanted
            return record.task
        finally:
            self._reader.unwatch(record)

    async def _relay_one(
        self, record: TaskRecord, send: InputSender, key: str, request: Mapping[str, Any]
    ) -> None:
        """Send one claimed request and deliver its answer.

        A client that answers with an error cannot give the input: the task is cancelled, saying
        why, as a 2026-07-28 client cancels a task whose input it cannot give. A relay that fails
        otherwise (the stream closed) gives its request back for the next ``tasks/result``.
        """
        try:
            answer = await send(key, request)
        except InputRefused as refused:
            error = refused.error
            method = request.get("method", "input")
            reason = f"the client could not answer {method}: {error.message} (code {error.code})"
            await self._writer.finish(record, TaskEvent.CANCEL, message=reason, stop_work=True)
            return
        except BaseException:
            self.release_claim(record, key)
            raise
        # Shielded: the answer is in; the status change it makes (and its notification) must not
        # be lost when the task ends right after and the remaining relays are stopped.
        with anyio.CancelScope(shield=True), anyio.move_on_after(DELIVERY_BOUND_S):
            if not await self.deliver(record, {key: answer}):
                self.release_claim(record, key)


def _without(task: Task, keys: list[str]) -> Task:
    """``task`` with the input requests ``keys`` answered or withdrawn; ``working`` again once
    nothing is outstanding."""
    remaining = {k: v for k, v in task.input_requests.items() if k not in keys}
    if not remaining and task.status is TaskStatus.INPUT_REQUIRED:
        return task.evolve(
            input_requests=remaining, status=next_status(task.status, TaskEvent.INPUT_RECEIVED)
        )
    return task.evolve(input_requests=remaining)
