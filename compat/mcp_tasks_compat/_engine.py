"""The server-side task engine: store, lifecycle, background runs, waiting, TTL sweeping.

SDK-free (anyio only), so every server adapter (mcp 1.x; mcp 2.x in either dialect) runs tasks
the same way and none of them touches the 1.x SDK's task runtime and its crash paths:

* the work's outcome is applied through the lifecycle table, so a cancelled task stays cancelled
  whatever the work does afterwards (no exception escapes into the session);
* each run has its own cancel scope; ``tasks/cancel`` stops it;
* any number of waiters can wait for a task to end (one ``anyio.Event`` per change, never reused);
* TTL expiry is swept from a heap ordered by expiry time, never by scanning every task; a task
  that expires while still running is failed and kept for a grace period, not silently dropped;
* work can ask the client for input (:meth:`TaskEngine.request_input`): the task goes
  ``input_required`` with a key never used before in its life, waits for the answer (by
  ``tasks/update`` in 2026-07-28, by the adapter relaying it on a ``tasks/result`` stream in
  2025-11-25) and returns to ``working``; a cancelled or expired task releases its waiter;
* the task group a run lives in is chosen by the adapter (a session's for 2025-11-25 on 1.x, the
  server lifespan's for the Tasks extension).
"""

from __future__ import annotations

import contextvars
import heapq
import logging
import math
import secrets
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Protocol

import anyio
import anyio.abc
import anyio.lowlevel

from .core.lifecycle import TaskEvent, next_status
from .core.model import JsonRpcError, Task, TaskStatus
from .dialects import DIALECT_2025_11_25, Dialect
from .errors import INTERNAL_ERROR, INVALID_PARAMS, PeerProtocolError, TaskStateError

__all__ = [
    "DEFAULT_TTL_FLOOR_MS",
    "InMemoryTaskStore",
    "InputRefused",
    "PollPolicy",
    "TaskEngine",
    "TaskRecord",
    "TaskStore",
    "ToolCallFailure",
    "current_run",
    "input_key_prefix",
    "new_task_id",
]

logger = logging.getLogger("mcp_tasks_compat.engine")

DEFAULT_TTL_FLOOR_MS = 3_600_000
"""Real long runs need an hour; a client asking for less gets the floor."""

DELIVERY_BOUND_S = 5.0
"""Longest the status change of a relayed answer may take (its notification to a stuck peer)."""

EXPIRED_GRACE_MS = 60_000
"""How long a task that expired while running stays readable (as failed) before it is dropped."""


def new_task_id() -> str:
    """256 bits from ``secrets``: unguessable, never reused."""
    return secrets.token_urlsafe(32)


def _now() -> datetime:
    return datetime.now(timezone.utc)


class ToolCallFailure(Exception):
    """Raised by work to end its task ``failed`` with a specific JSON-RPC error."""

    def __init__(self, error: JsonRpcError) -> None:
        self.error = error
        super().__init__(error.message)


class InputRefused(Exception):
    """Raised by a relay's ``send`` when the client answered an input request with a JSON-RPC error."""

    def __init__(self, error: JsonRpcError) -> None:
        self.error = error
        super().__init__(error.message)


InputSender = Callable[[str, Mapping[str, Any]], Awaitable[Mapping[str, Any]]]
"""``send(key, request) -> answer``: one input request to the client and its result (wire JSON)."""


@dataclass(frozen=True)
class PollPolicy:
    """The adaptive ``pollInterval(Ms)`` hint: short while a task is young, longer later.

    hint = clamp(age * ratio, minimum_ms, maximum_ms).
    """

    minimum_ms: int = 100
    maximum_ms: int = 5_000
    ratio: float = 0.1

    def hint_ms(self, age_ms: float) -> int:
        return int(min(self.maximum_ms, max(self.minimum_ms, age_ms * self.ratio)))


@dataclass
class TaskRecord:
    """A task plus what only the server knows: owner, dialect, tool, run state, waiters."""

    task: Task
    dialect: Dialect
    owner: str | None
    tool_name: str
    expires_at: float = math.inf  # monotonic deadline; inf = unlimited
    scope: anyio.CancelScope | None = None
    changed: anyio.Event = field(default_factory=anyio.Event)
    listeners: list[Callable[[Task], Awaitable[None]]] = field(
        default_factory=lambda: list[Callable[[Task], Awaitable[None]]]()
    )
    last_notified: float = 0.0
    input_responses: dict[str, Mapping[str, Any]] = field(
        default_factory=lambda: dict[str, Mapping[str, Any]]()
    )
    """Answers to ``input_requests`` (by key) not yet picked up by the work that asked."""
    input_serial: int = 0
    """How many input requests this task has made: keys carry it, so none is ever reused."""
    input_claims: set[str] = field(default_factory=lambda: set[str]())
    """Keys an adapter is relaying to the client right now (2025-11-25), so no other relays them."""


class TaskStore(Protocol):
    """Where task records live. The in-memory default is enough for one process.

    A durable store keeps the same contract: ``get`` returns ``None`` for unknown ids, and
    ``pop_expired`` returns records whose deadline passed, without scanning the live ones.
    """

    async def add(self, record: TaskRecord) -> None: ...

    async def get(self, task_id: str) -> TaskRecord | None: ...

    async def remove(self, task_id: str) -> None: ...

    async def reschedule(self, record: TaskRecord) -> None: ...

    async def pop_expired(self, now: float) -> list[TaskRecord]: ...

    async def owned_by(self, owner: str | None) -> list[TaskRecord]: ...


class InMemoryTaskStore:
    """Dict + expiry heap. Rescheduling pushes a new heap entry; stale entries are skipped."""

    def __init__(self) -> None:
        self._records: dict[str, TaskRecord] = {}
        self._heap: list[tuple[float, str]] = []

    def __len__(self) -> int:
        return len(self._records)

    async def add(self, record: TaskRecord) -> None:
        self._records[record.task.task_id] = record
        if record.expires_at != math.inf:
            heapq.heappush(self._heap, (record.expires_at, record.task.task_id))

    async def get(self, task_id: str) -> TaskRecord | None:
        return self._records.get(task_id)

    async def remove(self, task_id: str) -> None:
        self._records.pop(task_id, None)

    async def reschedule(self, record: TaskRecord) -> None:
        if record.expires_at != math.inf:
            heapq.heappush(self._heap, (record.expires_at, record.task.task_id))

    async def pop_expired(self, now: float) -> list[TaskRecord]:
        due: list[TaskRecord] = []
        seen: set[str] = set()
        while self._heap and self._heap[0][0] <= now:
            deadline, task_id = heapq.heappop(self._heap)
            record = self._records.get(task_id)
            # Skip stale entries, and duplicates: a reschedule to an equal deadline (a coarse
            # clock) must not hand out one record twice, or a task would expire twice at once.
            if record is not None and record.expires_at == deadline and task_id not in seen:
                seen.add(task_id)
                due.append(record)
        return due

    async def owned_by(self, owner: str | None) -> list[TaskRecord]:
        return [r for r in self._records.values() if r.owner == owner]


_current: contextvars.ContextVar[tuple[TaskEngine, TaskRecord] | None] = contextvars.ContextVar(
    "mcp_tasks_compat_current_run", default=None
)


def current_run() -> tuple[TaskEngine, TaskRecord] | None:
    """The engine and record of the task whose work is running in this context, if any."""
    return _current.get()


_KEY_PREFIXES: Mapping[str, str] = {
    "elicitation/create": "elicit",
    "sampling/createMessage": "sample",
    "roots/list": "roots",
}


def input_key_prefix(method: str) -> str:
    """The readable part of an input request key (``elicit-3``): what kind of input it asks for."""
    return _KEY_PREFIXES.get(method, "input")


class TaskEngine:
    """Creates, runs, reads, cancels and expires tasks for one server."""

    def __init__(
        self,
        *,
        store: TaskStore | None = None,
        ttl_floor_ms: int = DEFAULT_TTL_FLOOR_MS,
        default_ttl_ms: int | None = None,
        poll_policy: PollPolicy | None = None,
        status_interval_s: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if ttl_floor_ms < 0:
            raise ValueError("ttl_floor_ms must be >= 0")
        self.store: TaskStore = store if store is not None else InMemoryTaskStore()
        self.ttl_floor_ms = ttl_floor_ms
        self.default_ttl_ms = default_ttl_ms if default_ttl_ms is not None else ttl_floor_ms
        self.poll_policy = poll_policy or PollPolicy()
        self.status_interval_s = status_interval_s
        self._clock = clock
        self._sweeper_wakeup = anyio.Event()

    # --- creation and running -------------------------------------------------------------------

    def effective_ttl(self, requested_ms: int | None, *, requested: bool) -> int | None:
        """The TTL a task gets: the request's (floored), or the default; ``None`` stays unlimited."""
        if not requested:
            return self.default_ttl_ms
        if requested_ms is None:
            return None
        return max(requested_ms, self.ttl_floor_ms)

    async def create(
        self,
        *,
        dialect: Dialect,
        owner: str | None,
        tool_name: str,
        ttl_ms: int | None,
        status_message: str | None = None,
    ) -> TaskRecord:
        """Create a ``working`` task, readable before this returns."""
        now = _now()
        task = Task(
            task_id=new_task_id(),
            status=TaskStatus.WORKING,
            created_at=now,
            last_updated_at=now,
            ttl_ms=ttl_ms,
            poll_interval_ms=self.poll_policy.minimum_ms,
            status_message=status_message,
        )
        expires = math.inf if ttl_ms is None else self._clock() + ttl_ms / 1000
        record = TaskRecord(task=task, dialect=dialect, owner=owner, tool_name=tool_name, expires_at=expires)
        await self.store.add(record)
        self._sweeper_wakeup.set()
        return record

    def start(
        self,
        record: TaskRecord,
        work: Callable[[], Awaitable[Mapping[str, Any]]],
        task_group: anyio.abc.TaskGroup,
    ) -> None:
        """Run ``work`` in ``task_group``; its outcome ends the task (unless already terminal)."""
        record.scope = anyio.CancelScope()
        task_group.start_soon(self._run, record, work, name=f"mcp-task {record.task.task_id[:8]}")

    async def _run(self, record: TaskRecord, work: Callable[[], Awaitable[Mapping[str, Any]]]) -> None:
        assert record.scope is not None
        token = _current.set((self, record))
        try:
            with record.scope:
                try:
                    result = await work()
                except ToolCallFailure as failure:
                    await self._finish(record, TaskEvent.FAIL, error=failure.error)
                    return
                except anyio.get_cancelled_exc_class():
                    raise
                except Exception as exc:  # any failure ends the task, never the session
                    logger.debug("task %s work raised", record.task.task_id, exc_info=True)
                    error = JsonRpcError(INTERNAL_ERROR, str(exc) or type(exc).__name__)
                    await self._finish(record, TaskEvent.FAIL, error=error)
                    return
                failed = record.dialect == DIALECT_2025_11_25 and result.get("isError") is True
                await self._finish(record, TaskEvent.FAIL if failed else TaskEvent.COMPLETE, result=result)
        finally:
            if not record.task.is_terminal:
                # Stopped from outside (the session or the server shutting down: the cancellation
                # comes from an enclosing scope, not from ``record.scope``), not by tasks/cancel.
                # The task must still end rather than stay "working" for its pollers.
                with anyio.CancelScope(shield=True):
                    await self._finish(record, TaskEvent.CANCEL, message="the server stopped this task")
            _current.reset(token)

    async def _finish(
        self,
        record: TaskRecord,
        event: TaskEvent,
        *,
        result: Mapping[str, Any] | None = None,
        error: JsonRpcError | None = None,
        message: str | None = None,
        stop_work: bool = False,
    ) -> None:
        """Apply a terminal event; a task that is already terminal keeps its status (sticky).

        ``stop_work`` cancels the run's scope once the status is set and before anyone hears of
        it, so work waiting on the task (for input, say) is cancelled rather than woken to find
        its task ended.
        """
        if record.task.is_terminal:
            return
        status = next_status(record.task.status, event)
        changes: dict[str, Any] = {"status": status, "input_requests": {}}
        if result is not None:
            changes["result"] = dict(result)
        if error is not None:
            changes["error"] = error
            changes["status_message"] = message or error.message
        elif message is not None:
            changes["status_message"] = message
        await self._update(record, changes, force_notify=True, stop=record.scope if stop_work else None)

    async def _update(
        self,
        record: TaskRecord,
        changes: dict[str, Any],
        *,
        force_notify: bool,
        stop: anyio.CancelScope | None = None,
    ) -> None:
        now = _now()
        age_ms = (now - record.task.created_at) / timedelta(milliseconds=1)
        changes.setdefault("poll_interval_ms", self.poll_policy.hint_ms(age_ms))
        record.task = record.task.evolve(last_updated_at=now, **changes)
        if stop is not None:
            stop.cancel()
        if record.task.is_terminal and record.task.ttl_ms is not None:
            # Retention restarts at the terminal transition, so a result is never lost to a run
            # that used up most of its TTL.
            record.expires_at = self._clock() + record.task.ttl_ms / 1000
            await self.store.reschedule(record)
        event, record.changed = record.changed, anyio.Event()
        event.set()
        mono = self._clock()
        if force_notify or mono - record.last_notified >= self.status_interval_s:
            record.last_notified = mono
            snapshot = record.task
            for listener in list(record.listeners):
                try:
                    await listener(snapshot)
                except Exception:  # a dead peer must not break the task
                    logger.debug("task %s status listener failed", snapshot.task_id, exc_info=True)

    # --- reading, status, cancelling ------------------------------------------------------------

    async def lookup(self, task_id: str, owner: str | None) -> TaskRecord:
        """The record, or ``PeerProtocolError`` -32602 (unknown, expired, or another principal's)."""
        record = await self.store.get(task_id)
        if record is None or (record.owner is not None and record.owner != owner):
            raise PeerProtocolError(f"Task not found: {task_id}", jsonrpc_code=INVALID_PARAMS)
        return record

    async def get(self, task_id: str, owner: str | None) -> Task:
        return (await self.lookup(task_id, owner)).task

    async def set_status_message(self, task_id: str, message: str) -> None:
        """Record a progress message (listeners hear it at most every ``status_interval_s``)."""
        record = await self.store.get(task_id)
        if record is None or record.task.is_terminal:
            return
        await self._update(record, {"status_message": message}, force_notify=False)

    async def cancel(
        self, task_id: str, owner: str | None, *, strict: bool, reason: str = "cancelled by the client"
    ) -> Task:
        """Cancel: the status becomes ``cancelled`` before this returns, then the work is stopped.

        ``strict`` (2025-11-25) raises -32602 for a terminal task; otherwise (2026-07-28) a
        terminal task is left alone and the call is an acknowledgement. ``reason`` becomes the
        status message (an adapter ending a session says so).
        """
        record = await self.lookup(task_id, owner)
        if record.task.is_terminal:
            if strict:
                try:
                    next_status(record.task.status, TaskEvent.CANCEL)
                except TaskStateError as exc:
                    raise PeerProtocolError(exc.message, jsonrpc_code=exc.jsonrpc_code) from None
            return record.task
        await self._finish(record, TaskEvent.CANCEL, message=reason, stop_work=True)
        return record.task

    async def request_input(self, record: TaskRecord, request: Mapping[str, Any]) -> dict[str, Any]:
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
        method = str(request.get("method", ""))
        record.input_serial += 1
        key = f"{input_key_prefix(method)}-{record.input_serial}"
        outstanding = {**record.task.input_requests, key: dict(request)}
        status = next_status(record.task.status, TaskEvent.NEED_INPUT)
        await self._update(record, {"status": status, "input_requests": outstanding}, force_notify=True)
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
            return dict(record.input_responses.pop(key))
        finally:
            record.input_claims.discard(key)
            if not answered and key in record.task.input_requests and not record.task.is_terminal:
                with anyio.CancelScope(shield=True):
                    await self._settle_input(record, withdrawn=[key])

    async def _settle_input(self, record: TaskRecord, *, withdrawn: list[str]) -> None:
        """Drop answered or withdrawn keys; back to ``working`` once nothing is outstanding."""
        remaining = {k: v for k, v in record.task.input_requests.items() if k not in withdrawn}
        changes: dict[str, Any] = {"input_requests": remaining}
        if not remaining and record.task.status is TaskStatus.INPUT_REQUIRED:
            changes["status"] = next_status(record.task.status, TaskEvent.INPUT_RECEIVED)
        await self._update(record, changes, force_notify=True)

    async def submit_input_responses(
        self, task_id: str, owner: str | None, responses: Mapping[str, Mapping[str, Any]]
    ) -> list[str]:
        """Deliver answers to input requests (``tasks/update``); returns the keys taken.

        Only keys the task currently has outstanding are taken (the first answer wins); anything
        else is ignored, as SEP-2663 asks. A partial answer keeps the task ``input_required``
        with the rest; once nothing is outstanding it is ``working`` again before this returns,
        so a ``tasks/get`` right after the acknowledgement never shows an answered request.
        Unknown ids raise -32602.
        """
        record = await self.lookup(task_id, owner)
        return await self.deliver_input(record, responses)

    async def deliver_input(
        self, record: TaskRecord, responses: Mapping[str, Mapping[str, Any]]
    ) -> list[str]:
        """:meth:`submit_input_responses` for a record the caller already holds."""
        if record.task.is_terminal:
            return []
        outstanding = record.task.input_requests
        taken = [key for key in responses if key in outstanding and key not in record.input_responses]
        for key in taken:
            record.input_responses[key] = dict(responses[key])
        if taken:
            await self._settle_input(record, withdrawn=taken)
        return taken

    def claim_input_requests(self, record: TaskRecord) -> list[tuple[str, Mapping[str, Any]]]:
        """Outstanding requests no one is relaying yet, now claimed by the caller (2025-11-25).

        The caller sends each to the client and answers it with :meth:`deliver_input`; if it
        cannot (its stream closed), it calls :meth:`release_input_claim` so another relay can.
        """
        claimed = [
            (key, request)
            for key, request in record.task.input_requests.items()
            if key not in record.input_claims and key not in record.input_responses
        ]
        record.input_claims.update(key for key, _request in claimed)
        return claimed

    def release_input_claim(self, record: TaskRecord, key: str) -> None:
        """Give a claimed request back (its relay failed); waiters on the record look again."""
        if key in record.input_claims:
            record.input_claims.discard(key)
            event, record.changed = record.changed, anyio.Event()
            event.set()

    async def relay_input_until_terminal(self, record: TaskRecord, send: InputSender) -> Task:
        """2025-11-25 ``tasks/result``: relay the task's input requests on this stream until it ends.

        Each outstanding request no other stream is relaying is sent with ``send`` (which adds the
        related-task ``_meta`` and waits for the client's answer); the answer goes to the waiting
        work. A client that answers with an error cannot give the input: the task is cancelled,
        saying why, as a 2026-07-28 client cancels a task whose input it cannot give. A relay that
        fails otherwise (the stream closed) gives its request back for the next ``tasks/result``.
        Any number of streams may relay one task; each request goes to one of them.
        """

        async def relay(key: str, request: Mapping[str, Any]) -> None:
            try:
                answer = await send(key, request)
            except InputRefused as refused:
                error = refused.error
                method = request.get("method", "input")
                reason = f"the client could not answer {method}: {error.message} (code {error.code})"
                await self._finish(record, TaskEvent.CANCEL, message=reason, stop_work=True)
                return
            except BaseException:
                self.release_input_claim(record, key)
                raise
            # Shielded: the answer is in; the status change it makes (and its notification) must
            # not be lost when the task ends right after and the remaining relays are stopped.
            with anyio.CancelScope(shield=True), anyio.move_on_after(DELIVERY_BOUND_S):
                if not await self.deliver_input(record, {key: answer}):
                    self.release_input_claim(record, key)

        async with anyio.create_task_group() as relays:
            while not record.task.is_terminal:
                for key, request in self.claim_input_requests(record):
                    relays.start_soon(relay, key, request, name=f"mcp-task input {key}")
                await record.changed.wait()
            relays.cancel_scope.cancel()  # answers still owed to an ended task are no longer wanted
        return record.task

    async def wait_terminal(self, task_id: str, owner: str | None) -> Task:
        """Wait until the task is terminal (any number of concurrent waiters)."""
        record = await self.lookup(task_id, owner)
        while not record.task.is_terminal:
            await record.changed.wait()
        return record.task

    async def wait_change(self, record: TaskRecord) -> None:
        await record.changed.wait()

    async def owned_by(self, owner: str | None) -> list[Task]:
        return [r.task for r in await self.store.owned_by(owner)]

    # --- expiry ---------------------------------------------------------------------------------

    async def sweep(self) -> int:
        """Expire what is due: running tasks fail (kept for a grace period), ended ones go."""
        removed = 0
        for record in await self.store.pop_expired(self._clock()):
            if record.task.is_terminal:
                await self.store.remove(record.task.task_id)
                removed += 1
                continue
            ttl = record.task.ttl_ms
            error = JsonRpcError(INTERNAL_ERROR, f"Task exceeded its TTL of {ttl} ms and was stopped")
            await self._finish(record, TaskEvent.FAIL, error=error, stop_work=True)
            record.expires_at = self._clock() + min(ttl or EXPIRED_GRACE_MS, EXPIRED_GRACE_MS) / 1000
            await self.store.reschedule(record)
        return removed

    async def run_sweeper(self, *, max_sleep_s: float = 1.0) -> None:
        """Sweep forever; wakes at most every ``max_sleep_s`` and whenever a task is created."""
        while True:
            await self.sweep()
            self._sweeper_wakeup = anyio.Event()
            with anyio.move_on_after(max_sleep_s):
                await self._sweeper_wakeup.wait()

    @asynccontextmanager
    async def running(self) -> AsyncGenerator[anyio.abc.TaskGroup, None]:
        """A task group for runs plus the sweeper; leaving it cancels every run still going."""
        async with anyio.create_task_group() as group:
            group.start_soon(self.run_sweeper, name="mcp-tasks sweeper")
            try:
                yield group
            finally:
                group.cancel_scope.cancel()


async def report_status(message: str) -> bool:
    """Set the running task's status message; ``False`` (and nothing happens) outside a task."""
    run = current_run()
    if run is None:
        return False
    engine, record = run
    await engine.set_status_message(record.task.task_id, message)
    return True
