"""The client's task logic, written once for both SDK majors and both dialects.

Imports no ``mcp``. An adapter (``_adapters/v1_client.py``, ``_adapters/v2_client.py``) wraps
one ``ClientSession`` as a :class:`ClientConnection` and each dialect's ``tasks/*`` requests as a
:class:`TaskWire`; everything that decides *what* to send and *what it means* lives here:

* the mode plan (``auto`` / ``task`` / ``plain``) and its refusals, made before anything is sent;
* the poll loop: ``pollInterval`` / ``pollIntervalMs`` re-read on every answer and clamped to
  [100 ms, 30 s]; on 2025-11-25 a ``tasks/result`` long-poll runs next to it so the result
  arrives about one round trip after completion, and a server whose ``tasks/result`` refuses a
  working task falls back to plain polling;
* the TTL backstop (a task past ``createdAt + ttl`` is reported expired, never polled forever),
  the overall timeout, and the shielded, time-bounded, best-effort ``tasks/cancel`` sent when
  the caller is cancelled or anything else ends the call early;
* the outcome mapping to the ``Task*Error`` family and the ``on_status`` de-duplication;
* 2026-07-28 input requests (``inputRequests`` on ``tasks/get``): each key answered once, through
  the session's own callbacks, and sent back with ``tasks/update``; a request the session cannot
  answer cancels the task with an error that says why. (2025-11-25 input requests arrive as
  ordinary server-to-client requests on the open ``tasks/result``, and the SDK session answers
  them itself.)
"""

from __future__ import annotations

import inspect
import logging
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from types import TracebackType
from typing import Any, Final, Generic, Literal, Protocol, TypeVar

import anyio
import anyio.abc

from .core import codec_2025
from .core.model import Task, TaskStatus, utc_now
from .dialects import DIALECT_2025_11_25, DIALECT_2026_07_28, Dialect, TaskSupport
from .errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    CompatError,
    PeerProtocolError,
    TaskCancelledError,
    TaskError,
    TaskExpiredError,
    TaskFailedError,
    TaskNotFoundError,
    TaskTimeoutError,
    UnsupportedOptIn,
    UnsupportedOptInError,
)

__all__ = [
    "CANCEL_GRACE_SECONDS",
    "DEFAULT_POLL_SECONDS",
    "MAX_POLL_SECONDS",
    "MIN_POLL_SECONDS",
    "ClientConnection",
    "Mode",
    "Negotiated",
    "OnStatus",
    "RemoteError",
    "StatusListener",
    "TaskRun",
    "TaskWire",
    "call_tool",
    "clamp_poll_seconds",
    "follow",
    "resume",
    "seconds",
    "start_tool",
]

logger = logging.getLogger("mcp_tasks_compat.client")

MIN_POLL_SECONDS: Final = 0.1
MAX_POLL_SECONDS: Final = 30.0
DEFAULT_POLL_SECONDS: Final = 1.0
"""Used when the server gives no poll hint at all."""
CANCEL_GRACE_SECONDS: Final = 2.0
"""How long a best-effort ``tasks/cancel`` may take when the call ends early."""
RESULT_GRACE_SECONDS: Final = 1.0
"""How long the 2025-11-25 ``tasks/result`` wait may trail a terminal ``tasks/get`` before it is re-asked."""

Mode = Literal["auto", "task", "plain"]
OnStatus = Callable[[Task], "Awaitable[None] | None"]
StatusListener = Callable[[Task], None]

ResultT = TypeVar("ResultT")


class StatusListeners:
    """Who follows which task on one session, fed by pushed 2025-11-25 status notifications."""

    def __init__(self) -> None:
        self._by_task: dict[str, list[StatusListener]] = {}

    def listen(self, task_id: str, listener: StatusListener) -> Callable[[], None]:
        """Follow ``task_id``; the returned function stops following."""
        self._by_task.setdefault(task_id, []).append(listener)

        def unlisten() -> None:
            entries = self._by_task.get(task_id, [])
            if listener in entries:
                entries.remove(listener)
            if not entries:
                self._by_task.pop(task_id, None)

        return unlisten

    def deliver(self, raw: object) -> None:
        """Decode one ``notifications/tasks/status`` params object and pass it on (malformed: ignored)."""
        try:
            task = codec_2025.decode_task(raw, where="notifications/tasks/status")
        except PeerProtocolError as error:
            logger.debug("ignored a malformed notifications/tasks/status: %s", error)
            return
        for listener in list(self._by_task.get(task.task_id, ())):
            listener(task)


ResultT_co = TypeVar("ResultT_co", covariant=True)

_TASKY: Final[frozenset[TaskSupport]] = frozenset({"optional", "required"})


# --- what the adapters provide ---------------------------------------------------------------


class RemoteError(Exception):
    """A JSON-RPC error answer to a ``tasks/*`` request, as an adapter reports it.

    ``timed_out`` marks the SDK's own read timeout (the request may simply be retried).
    """

    def __init__(self, code: int, message: str, data: Any = None, *, timed_out: bool = False) -> None:
        super().__init__(f"{message} (code {code})")
        self.code = code
        self.message = message
        self.data = data
        self.timed_out = timed_out


@dataclass(frozen=True)
class Negotiated:
    """What one connection offers: the protocol version and the task dialect in use on it.

    ``dialect`` is ``"2026-07-28"`` when ``server/discover`` declared the Tasks extension,
    ``"2025-11-25"`` when ``initialize`` declared ``capabilities.tasks.requests.tools.call``, and
    ``None`` when this connection cannot run tasks (``reason`` says why).
    ``tool_task_support`` maps tool names to their 2025-11-25 ``execution.taskSupport``; it is
    ``None`` where the dialect does not declare it (2026-07-28: the server decides per call).
    ``protocol_version`` is ``None`` only on mcp 1.x when the session was initialized by the
    caller before :func:`~mcp_tasks_compat.client.negotiate` (1.x does not keep it).
    """

    protocol_version: str | None
    dialect: Dialect | None
    tool_task_support: dict[str, TaskSupport] | None = None
    server_offers_tasks: bool = False
    reason: str | None = None


class TaskWire(Protocol[ResultT_co]):
    """One dialect's ``tasks/*`` requests on one session, as plain task models."""

    @property
    def dialect(self) -> Dialect: ...

    async def get(self, task_id: str) -> Task:
        """``tasks/get``; raises :class:`RemoteError` on a JSON-RPC error."""
        ...

    async def result_payload(self, task_id: str) -> dict[str, Any]:
        """2025-11-25 ``tasks/result`` (waits until terminal): the tool result JSON, minus related-task."""
        ...

    async def cancel(self, task_id: str) -> Task | None:
        """``tasks/cancel``: the task after cancel (2025-11-25), or ``None`` for the 2026-07-28 ack."""
        ...

    def to_result(self, payload: Mapping[str, Any]) -> ResultT_co:
        """The installed SDK's ``CallToolResult`` for a tool result JSON."""
        ...

    def listen(self, task_id: str, listener: StatusListener) -> Callable[[], None]:
        """Register ``listener`` for pushed status notifications; returns the unregister call."""
        ...

    async def answer_input(self, key: str, request: Mapping[str, Any]) -> dict[str, Any]:
        """2026-07-28: one input request through the session's own callback; the answer as wire JSON.

        Raises :class:`RemoteError` when the callback refuses (an ``ErrorData``; a session without
        the callback refuses every request of that kind) or the request cannot be read.
        """
        ...

    async def update(self, task_id: str, responses: Mapping[str, Mapping[str, Any]]) -> None:
        """2026-07-28 ``tasks/update`` with ``inputResponses``; raises :class:`RemoteError`."""
        ...


class ClientConnection(Protocol[ResultT_co]):
    """One negotiated ``ClientSession`` as the core sees it."""

    @property
    def negotiated(self) -> Negotiated: ...

    @property
    def installed(self) -> str:
        """``"mcp <version>"``, for refusal messages."""
        ...

    def wire(self) -> TaskWire[ResultT_co]:
        """The wire for ``negotiated.dialect`` (only called when it is not ``None``)."""
        ...

    def task_readiness(self) -> UnsupportedOptIn | None:
        """Why this session cannot run tasks at all (e.g. built without ``session_kwargs()``)."""
        ...

    async def tool_support(self, name: str) -> TaskSupport:
        """2025-11-25 ``execution.taskSupport`` of ``name`` (tools listed once and cached)."""
        ...

    async def call(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        *,
        as_task: bool,
        ttl_ms: int | None,
        meta: dict[str, Any] | None,
    ) -> Task | ResultT_co:
        """Send ``tools/call``: a :class:`Task` when the server created one, else its ``CallToolResult``.

        ``as_task`` adds the 2025-11-25 ``params.task``; on 2026-07-28 the request is the same
        either way and the server decides.
        """
        ...


# --- small pieces ------------------------------------------------------------------------------


def clamp_poll_seconds(poll_interval_ms: int | None, *, fallback: float = DEFAULT_POLL_SECONDS) -> float:
    """The server's poll hint in seconds, clamped to [100 ms, 30 s] (no hint: ``fallback``)."""
    seconds = fallback if poll_interval_ms is None else poll_interval_ms / 1000
    if not math.isfinite(seconds):
        seconds = MAX_POLL_SECONDS
    return min(MAX_POLL_SECONDS, max(MIN_POLL_SECONDS, seconds))


class _Reporter:
    """Feeds ``on_status`` each distinct (status, statusMessage), in the order observed.

    Stale answers (an older ``lastUpdatedAt`` than the newest seen) and anything after a
    terminal status are dropped, so a push that overtook a poll never reports backwards.
    """

    def __init__(self, on_status: OnStatus | None) -> None:
        self._on_status = on_status
        self.last: Task | None = None
        self._reported: tuple[TaskStatus, str | None] | None = None
        self._pending: list[Task] = []
        self.wakeup = anyio.Event()

    def observe(self, task: Task) -> None:
        """Record ``task`` (synchronous, so safe in a notification handler); :meth:`flush` delivers it."""
        last = self.last
        if last is not None:
            if last.is_terminal:
                return
            if task.last_updated_at < last.last_updated_at and not task.is_terminal:
                return
        self.last = task
        key = (task.status, task.status_message)
        if key != self._reported:
            self._reported = key
            self._pending.append(task)
            self.wakeup.set()

    async def flush(self) -> None:
        if self.wakeup.is_set():
            self.wakeup = anyio.Event()
        while self._pending:
            task = self._pending.pop(0)
            if self._on_status is None:
                continue
            outcome = self._on_status(task)
            if inspect.isawaitable(outcome):
                await outcome

    async def report(self, task: Task) -> None:
        self.observe(task)
        await self.flush()


class _Expiry:
    """The TTL backstop: ``createdAt + ttl`` on the local monotonic clock.

    A task this client created is anchored at the moment its creation answer arrived; a resumed
    task by the age its own timestamps show (``lastUpdatedAt - createdAt``, both on the server's
    clock, so clock skew can only make the backstop later, never early). ``ttl`` is re-read from
    every answer because servers may change it.
    """

    def __init__(self, task: Task, *, resumed: bool) -> None:
        age = max(0.0, (task.last_updated_at - task.created_at).total_seconds()) if resumed else 0.0
        self._anchor = time.monotonic() - age
        self._ttl_ms = task.ttl_ms

    def update(self, task: Task) -> None:
        self._ttl_ms = task.ttl_ms

    def remaining(self) -> float | None:
        if self._ttl_ms is None:
            return None
        return self._anchor + self._ttl_ms / 1000 - time.monotonic()

    def passed(self) -> bool:
        remaining = self.remaining()
        return remaining is not None and remaining <= 0


def _expired_error(task_id: str, ttl_ms: int | None) -> TaskExpiredError:
    return TaskExpiredError(
        f"task {task_id} outlived its TTL ({ttl_ms} ms from creation) before a terminal status was seen; "
        "the server may already have discarded it",
        task_id=task_id,
    )


def _lookup_error(
    error: RemoteError, task_id: str, dialect: Dialect, *, method: str, resumed: bool
) -> CompatError:
    """Map a ``tasks/*`` error answer to the library's errors."""
    if error.code == INVALID_PARAMS:
        message = f"task {task_id} is unknown to the server ({method}: {error.message})"
        if dialect == DIALECT_2025_11_25:
            message += (
                "; 2025-11-25 servers built on mcp 1.27.2 or later scope tasks to the session that "
                "created them, so a task can only be read from that session, not from another session "
                "or after reconnecting"
                if resumed
                else "; it may have expired or the server may have restarted"
            )
        return TaskNotFoundError(message, task_id=task_id)
    return PeerProtocolError(
        f"{method} for task {task_id} failed: {error.message} (code {error.code})",
        jsonrpc_code=error.code,
        data=error.data,
    )


def _failed_error(task: Task) -> TaskFailedError:
    if task.error is not None:
        return TaskFailedError(
            task_id=task.task_id,
            error_code=task.error.code,
            error_message=task.error.message,
            error_data=task.error.data,
        )
    return TaskFailedError(
        task_id=task.task_id,
        error_code=INTERNAL_ERROR,
        error_message=task.status_message or "the task failed",
    )


def _error_from_remote(task_id: str, error: RemoteError) -> TaskFailedError:
    """2025-11-25: ``tasks/result`` of a task that failed answers the task's own JSON-RPC error."""
    return TaskFailedError(
        task_id=task_id, error_code=error.code, error_message=error.message, error_data=error.data
    )


def _cancelled_error(task: Task) -> TaskCancelledError:
    detail = f": {task.status_message}" if task.status_message else ""
    return TaskCancelledError(f"task {task.task_id} was cancelled{detail}", task_id=task.task_id)


def _is_tool_result(payload: Mapping[str, Any]) -> bool:
    return isinstance(payload.get("content"), list)


# --- input requests (2026-07-28) ----------------------------------------------------------------


def _describe_request(key: str, request: Mapping[str, Any]) -> str:
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


class _InputAnswers:
    """Answers a 2026-07-28 task's ``inputRequests``, each key once across polls.

    Keys are unique over a task's life, so a key seen again (the server's snapshot of what is
    outstanding may lag an update) is never answered twice. Each answer is sent by itself as soon
    as it is ready, so a slow answer (a person typing) does not hold back the others.
    """

    def __init__(self, wire: TaskWire[Any], task_id: str, stop: Callable[[], None]) -> None:
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
        callback = _CALLBACK_FOR.get(str(request.get("method")), "callback")
        return TaskCancelledError(
            f"task {self.task_id} asked for input this session cannot give, so it was cancelled: "
            f"{_describe_request(key, request)} was refused by the session's {callback} "
            f"({error.message}, code {error.code}); a ClientSession built without {callback}= "
            "refuses every such request",
            task_id=self.task_id,
        )


# --- following a task to its end ---------------------------------------------------------------


class _Follower(Generic[ResultT]):
    """Drives one task to a terminal status and turns it into a result or an error."""

    def __init__(
        self, wire: TaskWire[ResultT], task: Task, reporter: _Reporter, expiry: _Expiry, *, resumed: bool
    ) -> None:
        self.wire = wire
        self.task_id = task.task_id
        self.reporter = reporter
        self.expiry = expiry
        self.resumed = resumed
        self.first = task
        self.stopped = False
        self.inputs: _InputAnswers | None = None

    @property
    def latest(self) -> Task:
        return self.reporter.last or self.first

    def _interval(self) -> float:
        return clamp_poll_seconds(self.latest.poll_interval_ms)

    async def _get(self) -> Task | None:
        """One ``tasks/get`` (reported); ``None`` when the SDK's read timeout fired (retry)."""
        try:
            task = await self.wire.get(self.task_id)
        except RemoteError as error:
            if error.timed_out:
                return None
            if error.code == INVALID_PARAMS and self.expiry.passed():
                raise _expired_error(self.task_id, self.latest.ttl_ms) from None
            raise _lookup_error(
                error, self.task_id, self.wire.dialect, method="tasks/get", resumed=self.resumed
            ) from None
        self.expiry.update(task)
        await self.reporter.report(task)
        if self.inputs is not None:
            self.inputs.observe(task)
        return task

    async def _sleep_or_expire(self) -> bool:
        """Sleep one poll interval (passing on pushed statuses); ``True`` when the TTL ran out instead."""
        delay = self._interval()
        remaining = self.expiry.remaining()
        expires = remaining is not None and remaining <= delay
        end = anyio.current_time() + (max(0.0, remaining) if expires and remaining is not None else delay)
        while not self.stopped:
            left = end - anyio.current_time()
            if left <= 0:
                break
            with anyio.move_on_after(left):
                await self.reporter.wakeup.wait()
            await self.reporter.flush()
            if self.latest.is_terminal:
                break  # a pushed terminal status: confirm it now rather than after the interval
        return expires

    def _stop_polling(self) -> None:
        """Let the poll loop end after its current request (it is never cancelled mid-request)."""
        self.stopped = True
        self.reporter.wakeup.set()

    async def _poll_until_terminal(self) -> Task | None:
        """``tasks/get`` until terminal (``None`` once stopped); at the TTL one last look, then expired."""
        while True:
            expired = await self._sleep_or_expire()
            if self.stopped:
                return None
            task = await self._get()
            if task is not None and task.is_terminal:
                return task
            if expired and self.expiry.passed():
                raise _expired_error(self.task_id, self.latest.ttl_ms)

    async def run(self) -> ResultT:
        unlisten = self.wire.listen(self.task_id, self.reporter.observe)
        try:
            await self.reporter.report(self.first)
            if self.wire.dialect == DIALECT_2026_07_28:
                return await self._run_2026()
            return await self._run_2025()
        finally:
            unlisten()

    # 2026-07-28: tasks/get carries the result or the error inline.

    async def _run_2026(self) -> ResultT:
        task: Task | None = self.first
        inputs = self.inputs = _InputAnswers(self.wire, self.task_id, self._stop_polling)
        polling_error: Exception | None = None
        async with anyio.create_task_group() as answers:
            inputs.group = answers
            try:
                inputs.observe(self.first)
                if self.first.status is TaskStatus.COMPLETED and self.first.result is None:
                    # A born-terminal creation answer carries no payload; read it once.
                    task = await self._get()
                    if task is None or not task.is_terminal:
                        task = await self._poll_until_terminal()
                elif not self.first.is_terminal:
                    task = await self._poll_until_terminal()
            except Exception as error:  # raised below, as itself rather than in an exception group
                polling_error = error
            answers.cancel_scope.cancel()  # answers still under way are not wanted by an ended task
        inputs.group = None
        if polling_error is not None:
            raise polling_error
        refusal = inputs.refusal_error()
        if refusal is not None or inputs.failure is not None:
            # The task cannot go on without the input: end it rather than leave it waiting for
            # its TTL, then say why.
            await _best_effort_cancel(self.wire, self.task_id, grace=CANCEL_GRACE_SECONDS)
            with anyio.move_on_after(CANCEL_GRACE_SECONDS):
                await self._get()
            await self.reporter.flush()
            if refusal is not None:
                raise refusal
            assert inputs.failure is not None
            if isinstance(inputs.failure, RemoteError):
                raise PeerProtocolError(
                    f"tasks/update for task {self.task_id} failed: {inputs.failure.message} "
                    f"(code {inputs.failure.code}); the task was cancelled",
                    jsonrpc_code=inputs.failure.code,
                    data=inputs.failure.data,
                ) from None
            raise inputs.failure
        assert task is not None  # only an input refusal or the 2025-11-25 race stops the poll loop early
        await self.reporter.flush()
        if task.status is TaskStatus.COMPLETED:
            if task.result is None:
                raise PeerProtocolError(
                    f"tasks/get for task {task.task_id} said completed but carried no result",
                    jsonrpc_code=INTERNAL_ERROR,
                )
            return self.wire.to_result(task.result)
        if task.status is TaskStatus.FAILED:
            raise _failed_error(task)
        raise _cancelled_error(task)

    # 2025-11-25: wait on tasks/result, poll tasks/get next to it for statuses and the TTL.

    async def _run_2025(self) -> ResultT:
        """Race a ``tasks/result`` wait against the poll loop.

        mcp 1.x sessions die when a request is cancelled just as its answer arrives (the answer's
        stream is closed under the receive loop), so neither side cancels the other's request
        in the normal course: a finished wait stops the poll loop after its current request, and
        only a ``tasks/result`` that is still pending (no answer under way) is ever cancelled.
        """
        payload: dict[str, Any] | None = None
        terminal: Task | None = self.first if self.first.is_terminal else None
        failure: BaseException | None = None
        result_refused = False
        payload_ready = anyio.Event()

        def fail(error: BaseException) -> None:
            nonlocal failure
            if failure is None:
                failure = error
            self._stop_polling()

        async def wait_for_result() -> None:
            nonlocal payload, result_refused
            asked_again = False
            try:
                while True:
                    try:
                        payload = await self.wire.result_payload(self.task_id)
                    except RemoteError as error:
                        if error.timed_out:
                            continue  # the session's read timeout is shorter than the task: ask again
                        if error.code == INVALID_PARAMS:
                            if self.expiry.passed():
                                fail(_expired_error(self.task_id, self.latest.ttl_ms))
                                return
                            # Some servers (FastMCP 3) answer -32602 "not completed yet" instead
                            # of waiting on a working task: only a tasks/get that fails as well
                            # means the task is really unknown.
                            known = await self._get()  # raises TaskNotFoundError when it is
                            if known is not None and known.is_terminal and not asked_again:
                                asked_again = True
                                continue
                            if known is None or not known.is_terminal:
                                logger.debug(
                                    "tasks/result for %s refused a working task; polling", self.task_id
                                )
                                result_refused = True
                                return
                            fail(
                                _lookup_error(
                                    error,
                                    self.task_id,
                                    DIALECT_2025_11_25,
                                    method="tasks/result",
                                    resumed=self.resumed,
                                )
                            )
                            return
                        # Either the task's own JSON-RPC error (it failed) or, from a deviating
                        # server, a refusal to wait on a working task: one tasks/get tells which.
                        now = await self._get()
                        if now is not None and now.status is TaskStatus.FAILED:
                            fail(_error_from_remote(self.task_id, error))
                            return
                        if now is not None and now.is_terminal and not asked_again:
                            asked_again = True
                            continue  # it ended meanwhile: ask for the payload once more
                        logger.debug("tasks/result for %s answered %s; polling instead", self.task_id, error)
                        result_refused = True
                        return
                    payload_ready.set()
                    self._stop_polling()
                    return
            except Exception as error:
                fail(error)

        async def poll(waiter: anyio.CancelScope) -> None:
            nonlocal terminal
            try:
                task = await self._poll_until_terminal()
            except Exception as error:
                fail(error)
                waiter.cancel()  # its tasks/result is still pending: nothing is being answered
                return
            if task is None:
                return  # the wait finished (or failed) first
            terminal = task
            if not result_refused:
                # A terminal task's tasks/result answers about one round trip after tasks/get.
                with anyio.move_on_after(RESULT_GRACE_SECONDS):
                    await payload_ready.wait()
            waiter.cancel()

        if terminal is None:
            async with anyio.create_task_group() as group:
                waiter = anyio.CancelScope()

                async def guarded_wait() -> None:
                    with waiter:
                        await wait_for_result()

                group.start_soon(guarded_wait)
                group.start_soon(poll, waiter)
        if failure is not None:
            raise failure
        if terminal is None:
            # The result arrived first: learn the terminal status it ended with.
            try:
                terminal = await self._get()
            except TaskNotFoundError:
                terminal = None
            if terminal is None or not terminal.is_terminal:
                assert payload is not None
                status = TaskStatus.FAILED if payload.get("isError") is True else TaskStatus.COMPLETED
                terminal = self.latest.evolve(status=status, last_updated_at=utc_now())
                await self.reporter.report(terminal)
        await self.reporter.flush()
        if terminal.status is TaskStatus.CANCELLED:
            raise _cancelled_error(terminal)
        if payload is None:
            payload = await self._payload_after_terminal(terminal)
        if _is_tool_result(payload):
            # completed, or failed because the tool returned isError: the tool's own result.
            return self.wire.to_result(payload)
        if terminal.status is TaskStatus.FAILED:
            raise _failed_error(terminal)
        raise PeerProtocolError(
            f"tasks/result for completed task {self.task_id} carried no tool result",
            jsonrpc_code=INTERNAL_ERROR,
        )

    async def _payload_after_terminal(self, terminal: Task) -> dict[str, Any]:
        try:
            return await self.wire.result_payload(self.task_id)
        except RemoteError as error:
            if terminal.status is TaskStatus.FAILED and error.code not in (INVALID_PARAMS, METHOD_NOT_FOUND):
                raise _error_from_remote(self.task_id, error) from None
            if terminal.status is TaskStatus.FAILED:
                raise _failed_error(terminal) from None
            raise _lookup_error(
                error, self.task_id, DIALECT_2025_11_25, method="tasks/result", resumed=self.resumed
            ) from None


# --- cancelling --------------------------------------------------------------------------------


async def _best_effort_cancel(wire: TaskWire[Any], task_id: str, *, grace: float) -> Task | None:
    """Shielded, time-bounded ``tasks/cancel`` that never raises (the call is already ending)."""
    with anyio.CancelScope(shield=True), anyio.move_on_after(grace):
        try:
            return await wire.cancel(task_id)
        except Exception as error:
            logger.debug("best-effort tasks/cancel for %s failed: %r", task_id, error)
    return None


class _Guard:
    """Runs an operation under the overall timeout; ends an unfinished task when the call ends early.

    Caller cancellation (anyio or asyncio), the timeout, and any unexpected error all send a
    shielded, time-bounded ``tasks/cancel`` for a task that is known and not yet terminal.
    """

    def __init__(self, *, timeout: float | None, grace: float, what: str) -> None:
        self.timeout = timeout
        self.grace = grace
        self.what = what
        self.wire: TaskWire[Any] | None = None
        self.task_id: str | None = None
        self.reporter: _Reporter | None = None

    def attach(self, wire: TaskWire[Any], task_id: str, reporter: _Reporter) -> None:
        self.wire, self.task_id, self.reporter = wire, task_id, reporter

    def _unfinished(self) -> bool:
        if self.wire is None or self.task_id is None:
            return False
        last = self.reporter.last if self.reporter is not None else None
        return last is None or not last.is_terminal

    async def _end_task(self) -> None:
        if self._unfinished():
            assert self.wire is not None
            assert self.task_id is not None
            await _best_effort_cancel(self.wire, self.task_id, grace=self.grace)

    async def run(self, operation: Callable[[], Awaitable[ResultT]], *, end_on_abort: bool = True) -> ResultT:
        """Run ``operation``; with ``end_on_abort=False`` only the timeout (not cancelling) ends the task."""
        deadline = math.inf if self.timeout is None else anyio.current_time() + self.timeout
        try:
            with anyio.CancelScope(deadline=deadline) as scope:
                return await operation()
        except TaskError:
            raise  # the task ended (or is gone): nothing left to cancel
        except BaseException:
            if end_on_abort:
                await self._end_task()
            raise
        # Only our own deadline gets here (the scope swallowed its cancellation).
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


# --- planning a call ---------------------------------------------------------------------------


def _refuse(
    connection: ClientConnection[Any], asked: str, supported_by: str, fix: str
) -> UnsupportedOptInError:
    return UnsupportedOptInError(
        [UnsupportedOptIn(asked=asked, supported_by=supported_by, fix=fix)], installed=connection.installed
    )


def _check_ready(connection: ClientConnection[Any]) -> None:
    problem = connection.task_readiness()
    if problem is not None:
        raise UnsupportedOptInError([problem], installed=connection.installed)


async def _plan(connection: ClientConnection[Any], name: str, mode: str) -> bool:
    """Whether this call goes out as a task; refusals are raised here, before anything is sent."""
    if mode not in ("auto", "task", "plain"):
        raise ValueError(f"mode must be 'auto', 'task' or 'plain', not {mode!r}")
    negotiated = connection.negotiated
    if mode == "plain":
        return False
    if negotiated.dialect is None:
        if mode == "task":
            raise _refuse(
                connection,
                f"mode='task' for tool {name!r}",
                f"a connection whose server offers tasks ({negotiated.reason or 'this one does not'})",
                "use mode='auto' (runs it as a plain call here) or connect to a task-capable server",
            )
        return False
    _check_ready(connection)
    if negotiated.dialect == DIALECT_2026_07_28:
        return True
    support = await connection.tool_support(name)
    if support in _TASKY:
        return True
    if mode == "task":
        raise _refuse(
            connection,
            f"mode='task' for tool {name!r}",
            "a tool whose tools/list entry declares execution.taskSupport 'optional' or 'required' "
            f"(the server declares {support!r})",
            "use mode='auto' or mode='plain' for this tool",
        )
    return False


# --- the three entry points --------------------------------------------------------------------


async def call_tool(
    connection: ClientConnection[ResultT],
    name: str,
    arguments: dict[str, Any] | None,
    *,
    mode: str,
    on_status: OnStatus | None,
    overall_timeout: float | None,
    ttl_ms: int | None,
    meta: dict[str, Any] | None,
    cancel_grace: float,
) -> ResultT:
    as_task = await _plan(connection, name, mode)
    guard = _Guard(timeout=overall_timeout, grace=cancel_grace, what=f"tools/call {name!r}")
    reporter = _Reporter(on_status)

    async def operation() -> ResultT:
        started = await connection.call(name, arguments, as_task=as_task, ttl_ms=ttl_ms, meta=meta)
        if not isinstance(started, Task):
            return started
        # A server may hand back a task even on a "plain" call (2026-07-28: the server decides);
        # it is resolved here rather than dropped.
        wire = connection.wire()
        guard.attach(wire, started.task_id, reporter)
        expiry = _Expiry(started, resumed=False)
        return await _Follower(wire, started, reporter, expiry, resumed=False).run()

    return await guard.run(operation)


async def follow(
    wire: TaskWire[ResultT],
    task: Task,
    *,
    on_status: OnStatus | None,
    overall_timeout: float | None,
    cancel_grace: float,
) -> ResultT:
    """Follow a task this client just created (e.g. from a ``ResultClaim.resolve`` hook) to its result."""
    reporter = _Reporter(on_status)
    guard = _Guard(timeout=overall_timeout, grace=cancel_grace, what=f"task {task.task_id}")
    guard.attach(wire, task.task_id, reporter)
    follower = _Follower(wire, task, reporter, _Expiry(task, resumed=False), resumed=False)
    return await guard.run(follower.run)


class TaskRun(Generic[ResultT]):
    """A handle on one remote task: poll it, wait for it, cancel it.

    ``async with`` cancels the task on exit unless it already ended. Cancelling a pending
    :meth:`result` does not cancel the remote task (the handle stays usable); leave the
    ``async with`` block or call :meth:`cancel` for that. ``task_id`` is ``None`` only when a
    2026-07-28 server chose to answer the call directly instead of creating a task (its result
    is then available at once).
    """

    def __init__(
        self,
        *,
        wire: TaskWire[ResultT] | None,
        task: Task | None,
        immediate: ResultT | None = None,
        dialect: Dialect,
        on_status: OnStatus | None = None,
        resumed: bool = False,
        cancel_grace: float = CANCEL_GRACE_SECONDS,
    ) -> None:
        self._wire = wire
        self._first = task
        self._immediate = immediate
        self.dialect: Dialect = dialect
        self._reporter = _Reporter(on_status)
        self._resumed = resumed
        self._grace = cancel_grace
        self._expiry = _Expiry(task, resumed=resumed) if task is not None else None
        self._lock = anyio.Lock()
        self._outcome: tuple[Literal["ok"], ResultT] | tuple[Literal["error"], BaseException] | None = None
        if immediate is not None:
            self._outcome = ("ok", immediate)

    def __repr__(self) -> str:
        last = self.last_status
        state = last.status.value if last is not None else ("answered directly" if self._immediate else "?")
        return f"<TaskRun {self.task_id} dialect={self.dialect} status={state}>"

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
            task = await self._wire.get(self._first.task_id)
        except RemoteError as error:
            raise _lookup_error(
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
        async with self._lock:
            if self._outcome is None:
                assert self._wire is not None
                assert self._first is not None
                assert self._expiry is not None
                wire, first = self._wire, self._first
                guard = _Guard(timeout=seconds(timeout), grace=self._grace, what=f"task {first.task_id}")
                guard.attach(wire, first.task_id, self._reporter)
                start = self._reporter.last or first
                follower = _Follower(wire, start, self._reporter, self._expiry, resumed=self._resumed)
                try:
                    value = await guard.run(follower.run, end_on_abort=False)
                except TaskError as error:
                    self._outcome = ("error", error)
                    raise
                self._outcome = ("ok", value)
            if self._outcome[0] == "error":
                raise self._outcome[1]
            return self._outcome[1]

    async def cancel(self, *, wait: float = 5.0) -> Task | None:
        """Send ``tasks/cancel`` and report the state it leads to.

        Cancellation is cooperative (2026-07-28 servers only acknowledge it), so this polls up to
        ``wait`` seconds for a terminal status and returns the newest state seen.
        """
        if self._wire is None or self._first is None:
            return None
        wire, task_id = self._wire, self._first.task_id
        last = self.last_status
        if last is not None and last.is_terminal:
            return last
        try:
            answered = await wire.cancel(task_id)
        except RemoteError as error:
            logger.debug("tasks/cancel for %s answered %s; reading the state instead", task_id, error)
            answered = None
        if answered is not None:
            await self._reporter.report(answered)
        current = self.last_status
        deadline = anyio.current_time() + wait
        # The deadline is checked between requests, never by cancelling one (see _run_2025).
        while (current is None or not current.is_terminal) and anyio.current_time() < deadline:
            fetched = await self.status()
            if fetched is None:
                break
            current = fetched
            if not fetched.is_terminal:
                pause = clamp_poll_seconds(fetched.poll_interval_ms)
                await anyio.sleep(max(0.0, min(pause, deadline - anyio.current_time())))
        return current or self.last_status

    async def __aenter__(self) -> TaskRun[ResultT]:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._wire is None or self._first is None or self.done:
            return
        await _best_effort_cancel(self._wire, self._first.task_id, grace=self._grace)


async def start_tool(
    connection: ClientConnection[ResultT],
    name: str,
    arguments: dict[str, Any] | None,
    *,
    on_status: OnStatus | None,
    ttl_ms: int | None,
    meta: dict[str, Any] | None,
    cancel_grace: float,
) -> TaskRun[ResultT]:
    await _plan(connection, name, "task")
    dialect = connection.negotiated.dialect
    assert dialect is not None
    started = await connection.call(name, arguments, as_task=True, ttl_ms=ttl_ms, meta=meta)
    if not isinstance(started, Task):
        return TaskRun(wire=None, task=None, immediate=started, dialect=dialect, cancel_grace=cancel_grace)
    run = TaskRun(
        wire=connection.wire(), task=started, dialect=dialect, on_status=on_status, cancel_grace=cancel_grace
    )
    await run._reporter.report(started)  # pyright: ignore[reportPrivateUsage]
    return run


async def resume(
    connection: ClientConnection[ResultT],
    task_id: str,
    *,
    on_status: OnStatus | None,
    cancel_grace: float,
) -> TaskRun[ResultT]:
    if not isinstance(task_id, str) or not task_id:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"task_id must be a non-empty string, not {task_id!r}")
    negotiated = connection.negotiated
    if negotiated.dialect is None:
        raise _refuse(
            connection,
            f"resume({task_id!r})",
            f"a connection whose server offers tasks ({negotiated.reason or 'this one does not'})",
            "resume on a connection to the server that created the task",
        )
    _check_ready(connection)
    wire = connection.wire()
    try:
        task = await wire.get(task_id)
    except RemoteError as error:
        raise _lookup_error(error, task_id, wire.dialect, method="tasks/get", resumed=True) from None
    run = TaskRun(
        wire=wire,
        task=task,
        dialect=negotiated.dialect,
        on_status=on_status,
        resumed=True,
        cancel_grace=cancel_grace,
    )
    await run._reporter.report(task)  # pyright: ignore[reportPrivateUsage]
    return run


def seconds(value: float | timedelta | None) -> float | None:
    """Accept seconds or a ``timedelta`` for every duration option."""
    if value is None:
        return None
    if isinstance(value, timedelta):
        return value.total_seconds()
    return float(value)
