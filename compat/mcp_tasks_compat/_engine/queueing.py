"""The workers' queue as a server's engine sees it, and the state changes that queue a task.

A task of the workers' is *queued* while no worker claims it (``TaskState.queued``); the store
adds its queue entry in the same write (:mod:`.stores.queue`). Queued again: after a lost run of
a tool declared safe to run again (:mod:`.reruns`), or given back by a stopping worker
(:mod:`.workers`); each time with the next claim, so the run that held it writes nothing more.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from .._observe import metrics
from ..errors import INVALID_REQUEST, PeerProtocolError
from .stores import TaskState, TaskStore
from .stores.queue import TaskQueue, queue_of

__all__ = ["QUEUED", "Queueing", "gave_back", "requeued"]

QUEUED: Final = "queued: waiting for a worker"
"""The status message of a task waiting in the workers' queue."""


def requeued(state: TaskState, message: str, **changes: object) -> TaskState:
    """``state`` back in the queue: no runner, no lease, the next claim (so the run that held it,
    should it wake, writes nothing more), ``message`` its status message."""
    task = state.task.evolve(status_message=message)
    return state.evolve(task=task, runner=None, lease_until=None, claim=state.claim + 1, **changes)


def gave_back(worker: str) -> Callable[[TaskState], TaskState | None]:
    """The change a stopping worker writes for a run it gives back: queued again, same attempt."""

    def change(current: TaskState) -> TaskState | None:
        if current.is_terminal or current.runner != worker:
            return None
        return requeued(current, f"given back by worker {worker} as it stopped; {QUEUED}")

    return change


class Queueing:
    """The workers' queue as a server's engine sees it: whether there is one, and room in it."""

    def __init__(self, store: TaskStore, *, max_queued: int | None) -> None:
        if max_queued is not None and max_queued < 1:
            raise ValueError(f"max_queued must be at least 1 (or None: no bound); got {max_queued}")
        self.max_queued = max_queued
        self._store = store

    @property
    def queue(self) -> TaskQueue | None:
        return queue_of(self._store) if self._store.shared else None

    def refuse_without_queue(self, asked: str) -> None:
        """``ValueError`` naming the fix when ``asked`` (run on workers) needs a queue the store lacks."""
        if self.queue is None:
            raise ValueError(
                f"{asked} needs a task store the workers share, with a queue: sqlite:///PATH (workers on "
                f"this host), redis://HOST:PORT/DB or postgresql://USER@HOST/DB; this server's store is"
                f" {self._store.describe}"
            )

    async def check_room(self) -> None:
        """Refuse a create past ``max_queued`` waiting tasks (counted before the create: concurrent
        creates may pass it by their number)."""
        queue = self.queue
        if queue is None:
            self.refuse_without_queue("a task run on workers")
            return
        if self.max_queued is None:
            return
        waiting = await queue.depth()
        metrics.queue_depth(waiting)
        if waiting >= self.max_queued:
            raise PeerProtocolError(
                f"too many queued tasks: {waiting} wait for a worker, at most {self.max_queued} "
                "(max_queued); try again later, start more workers (mcp-tasks-compat worker), or raise "
                "the bound (ServerTasks(max_queued=...), example-server --max-queued N)",
                jsonrpc_code=INVALID_REQUEST,
                data={"limit": "max_queued", "max": self.max_queued},
            )
