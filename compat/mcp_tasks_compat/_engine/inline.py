"""A tool call that may still be answered plainly: the inline grace, and input rounds before a task.

On 2026-07-28 the server decides per call whether to answer with a task (SEP-2663). The engine
starts the work *before* deciding (:meth:`~.runs.TaskRuns.begin`): an :class:`InlineCall`
is the run while it is still undecided. It ends one of two ways, decided exactly once:

* **answered**: the work finished (or asked for input as a multi-round-trip round, which it
  raises as :class:`RoundTripAnswer`) while undecided; the caller answers the ``tools/call``
  plainly and no task ever exists;
* **a task**: the grace ran out, or the work asked for input that only a task can carry; the
  task is created then and attached to the run, which goes on as the task's work, unrestarted.

Why here and not in the adapter: the same run must be able to become a task halfway, with its
cancel scope, status and input relay, and only the engine owns those. What a round says on the
wire, and how its answers come back, is the dialect's (``_server/rounds_2026.py``): a round's
answer is opaque here.
"""

from __future__ import annotations

import contextvars
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

import anyio
import anyio.lowlevel

from .records import RunStop, TaskRecord

__all__ = [
    "DEFAULT_INLINE_GRACE_S",
    "InlineCall",
    "Outcome",
    "ProgressWatch",
    "RoundTripAnswer",
    "next_progress",
    "progress_sent",
    "progress_watch",
    "run_task_hook",
]

DEFAULT_INLINE_GRACE_S: Final = 0.05
"""How long a 2026-07-28 task-capable call waits for its tool before answering with a task.

Measured (``benchmarks/inline_grace.py``): a quick tool answered plainly costs what a plain call
costs, while the task path of the same tool costs a task write plus at least one ``tasks/get``
round trip; 50 ms covers tools that finish "at once" (cache hits, small computations) with room
for a loaded machine, and is short enough that a client waiting for its task handle does not
notice it.
"""

logger = logging.getLogger("mcp_tasks_compat.engine")


class RoundTripAnswer(Exception):
    """The call's answer is an input round (multi-round trip, SEP-2322): ``result``, as the server
    layer wrote it.

    Raised by the work while the call is still undecided; the caller answers it plainly. It can
    never be a task's outcome: a task asks through its input relay instead.
    """

    def __init__(self, result: Mapping[str, Any]) -> None:
        super().__init__("the call asks the client for input before it runs as a task")
        self.result = dict(result)


@dataclass(frozen=True)
class Outcome:
    """What the work gave: its result (wire JSON) or the exception it raised."""

    result: Mapping[str, Any] | None = None
    error: Exception | None = None

    @property
    def is_round_trip(self) -> bool:
        return isinstance(self.error, RoundTripAnswer)


_Phase = Literal["open", "answered", "escalating", "task", "dropped"]


class InlineCall:
    """A run not yet known to be a task (see the module docstring): decided once, by either side.

    The work side calls :meth:`answer` with its outcome (``True``: the caller has it, nothing
    more to do) or :meth:`task` when it needs a task (input, or its outcome came too late). The
    caller side waits with :meth:`wait`, then :meth:`escalate` and :meth:`attach` the new record,
    or :meth:`drop` the run when its request is gone. The work may also wait for the task without
    deciding (:meth:`attached`), or be told when it exists (:meth:`on_attach`).
    """

    __slots__ = (
        "_attached",
        "_decided",
        "_listeners",
        "_phase",
        "outcome",
        "record",
        "scope",
        "status_message",
    )

    def __init__(self, stop: RunStop) -> None:
        self.record: TaskRecord | None = None
        self.outcome: Outcome | None = None
        self.status_message: str | None = None
        """The latest status the work reported while undecided: a task made later starts with it."""
        self.scope = stop
        """Stops the run: the task's, once it is one (``tasks/cancel``), or when dropped."""
        self._phase: _Phase = "open"
        # Both events live only while someone may wait on them: the run of a held task keeps its
        # call for as long as the task runs, and an event costs ~0.9 KB.
        self._decided: anyio.Event | None = anyio.Event()
        self._attached: anyio.Event | None = None  # made when the work waits for its task
        self._listeners: list[Callable[[TaskRecord], None]] | None = None

    @property
    def is_open(self) -> bool:
        """Undecided: an outcome given now is answered plainly."""
        return self._phase == "open"

    # --- the work's side ---------------------------------------------------------------------------

    def answer(self, outcome: Outcome) -> bool:
        """Give the outcome; ``True`` when the call was still undecided (the caller takes it)."""
        if self._phase != "open":
            return False
        self._phase = "answered"
        self.outcome = outcome
        self._wake_caller()
        self._wake_work()  # a waiter in the work's own task group: never a task now
        return True

    async def task(self) -> TaskRecord:
        """The task this run is (made now if still undecided); cancelled if the call was dropped."""
        if self._phase == "open":
            self._phase = "escalating"
            self._wake_caller()
        if self._phase == "escalating":
            if self._attached is None:
                self._attached = anyio.Event()
            await self._attached.wait()
        if self.record is None:  # dropped: the run's own scope is being cancelled
            await anyio.lowlevel.checkpoint()
            raise RuntimeError("the tool call was dropped before it became a task")
        return self.record

    async def attached(self) -> TaskRecord | None:
        """The task this run becomes, waited for without deciding anything (the grace decides);
        ``None`` when the call was answered plainly or dropped instead."""
        if self._phase in ("open", "escalating"):
            if self._attached is None:
                self._attached = anyio.Event()
            await self._attached.wait()
        return self.record

    def on_attach(self, listener: Callable[[TaskRecord], None]) -> None:
        """Call ``listener(record)`` when the run becomes a task (at once if it is one already)."""
        if self.record is not None:
            run_task_hook(listener, self.record)
        elif self._phase in ("open", "escalating"):
            if self._listeners is None:
                self._listeners = []
            self._listeners.append(listener)

    def _wake_caller(self) -> None:
        if self._decided is not None:
            self._decided.set()

    # --- the caller's side -------------------------------------------------------------------------

    async def wait(self, grace_s: float) -> None:
        """Until the work answers, asks for a task, or ``grace_s`` runs out.

        The run, started just before, goes first: a quick tool has answered after that one step
        (measured: every call of ``job``), so the call is decided without a timer or a cancel
        scope, which cost a quick call more than the rest of its wait."""
        decided = self._decided
        if decided is None:
            return
        await anyio.lowlevel.checkpoint()
        if decided.is_set():
            return
        with anyio.move_on_after(grace_s):
            await decided.wait()

    def escalate(self) -> bool:
        """Decide for a task; ``False`` when the work had already answered."""
        self._decided = None  # decided either way: nobody waits for it any more
        if self._phase == "answered":
            return False
        self._phase = "escalating"
        return True

    def attach(self, record: TaskRecord) -> None:
        """The task exists: the run goes on as its work (``tasks/cancel`` stops it)."""
        self._phase = "task"
        self.record = record
        record.scope = self.scope
        record.run_claim = record.state.claim  # the claim its create took: the run's writes carry it
        self._wake_work()
        listeners, self._listeners = self._listeners, None
        for listener in listeners or ():
            run_task_hook(listener, record)

    def drop(self) -> None:
        """The call is gone (its request cancelled, or its task could not be created): stop the run."""
        if self._phase == "task":
            return
        self._phase = "dropped"
        self._decided = None
        self._listeners = None
        self.scope.cancel()
        self._wake_work()

    def _wake_work(self) -> None:
        attached, self._attached = self._attached, None
        if attached is not None:
            attached.set()


def run_task_hook(listener: Callable[[TaskRecord], None], record: TaskRecord) -> None:
    """A tool's own hook on its task: its exception is logged, never raised into the call's decision
    (nor into the tool, so a hook behaves the same whenever the call became a task)."""
    try:
        listener(record)
    except Exception:
        logger.exception("task %s: an on_task hook raised", record.task.task_id)


class ProgressWatch:
    """The ``notifications/progress`` a waiting plain call sent so far (the plain hand-off,
    ``_server/handoff.py``): the last value and when, so a heartbeat sent while the tool reports
    nothing counts on from the tool's own values (progress must increase)."""

    __slots__ = ("at", "last")

    def __init__(self) -> None:
        self.last = 0.0
        self.at = time.monotonic()

    def sent(self, value: float) -> None:
        self.last = max(self.last, value)
        self.at = time.monotonic()

    def watch_in(self, context: contextvars.Context) -> None:
        """Make this the watch of the run started in ``context``."""
        context.run(_watch.set, self)


_watch: contextvars.ContextVar[ProgressWatch | None] = contextvars.ContextVar(
    "mcp_tasks_compat_progress_watch", default=None
)


def progress_watch() -> ProgressWatch | None:
    """The watch of the plain call running here, if it may hand off (else ``None``)."""
    return _watch.get()


def next_progress(last: float, progress: float | None) -> float:
    """The value a plain call's progress is sent with: ``progress``, or (``None``) the next step on
    from ``last`` and from any heartbeat of the hand-off's sent meanwhile."""
    if progress is not None:
        return float(progress)
    watch = _watch.get()
    return (last if watch is None else max(last, watch.last)) + 1.0


def progress_sent(value: float) -> None:
    """Note a progress notification the tool sent (a hand-off's heartbeat counts on from it)."""
    watch = _watch.get()
    if watch is not None:
        watch.sent(value)
