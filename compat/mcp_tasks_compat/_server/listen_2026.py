"""Task push of the Tasks extension: ``subscriptions/listen`` with ``notifications.taskIds``, SDK-free.

What a listen stream agrees to and sends is decided here, on wire JSON, once:

* a request that does not declare the extension gets -32021 (``requiredCapabilities``);
* at most :data:`MAX_STREAMS` task streams are open at once on one server (more are refused
  before the acknowledgement);
* the acknowledgement agrees to the ids of tasks the caller owns (others are left out, as the
  ids are bearer handles and must not be probed), at most :data:`MAX_TASK_IDS`;
* each agreed task is then sent as its full ``DetailedTask`` (result or error inline once
  terminal) right after the acknowledgement and whenever it changes, in order, until it ends.

Changes are followed through the engine's record of each task (``engine.watch``), which the engine
wakes on every change made here and, on a shared store, on every change another replica announces.
The adapter keeps the routing (which requests reach here) and, for a filter that also asks for
the SDK's core kinds, amending the SDK's own acknowledgement with :attr:`ListenStream.task_ids`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, Final, cast

import anyio

from .._engine import TaskPolicy, TaskRecord
from .._observe import metrics
from ..core import _codec_2026 as codec
from ..core._model import Task
from ..dialects import DIALECT_2026_07_28
from ..errors import INTERNAL_ERROR, INVALID_PARAMS, PeerProtocolError
from .caller import Caller
from .service_2026 import Tasks2026Service, missing_extension

__all__ = [
    "ACK_METHOD",
    "MAX_STREAMS",
    "MAX_TASK_IDS",
    "SUBSCRIPTION_ID_META_KEY",
    "ListenStream",
    "TaskListen2026",
    "asked_task_ids",
    "asks_core_kinds",
]

ACK_METHOD: Final = "notifications/subscriptions/acknowledged"
SUBSCRIPTION_ID_META_KEY: Final = "io.modelcontextprotocol/subscriptionId"
MAX_TASK_IDS: Final = 1024
"""Most task ids one stream follows; the acknowledgement leaves the rest out."""
MAX_STREAMS: Final = 1024
"""Most task streams open at once on one server (more are refused before the acknowledgement)."""
CORE_KINDS: Final = (
    "toolsListChanged",
    "promptsListChanged",
    "resourcesListChanged",
    "resourceSubscriptions",
)
"""The filter's kinds the SDK's own listen handler serves."""

Send = Callable[[Mapping[str, Any]], Awaitable[None]]
"""Sends one notification (wire JSON: ``method`` and ``params``) on the listen request's stream."""


def asked_task_ids(params: object) -> list[object] | None:
    """The request's ``notifications.taskIds`` (``None`` when it does not ask for task states)."""
    if not isinstance(params, Mapping):
        return None
    notifications = cast("Mapping[str, Any]", params).get("notifications")
    if not isinstance(notifications, Mapping) or "taskIds" not in notifications:
        return None
    task_ids = cast("Mapping[str, Any]", notifications)["taskIds"]
    if not isinstance(task_ids, list):
        raise PeerProtocolError(
            "notifications.taskIds must be an array of strings", jsonrpc_code=INVALID_PARAMS
        )
    return cast("list[object]", task_ids)


def asks_core_kinds(params: object) -> bool:
    """Whether the filter also asks for kinds the SDK serves (its handler must see the request)."""
    if not isinstance(params, Mapping):
        return False
    notifications = cast("Mapping[str, Any]", params).get("notifications")
    if not isinstance(notifications, Mapping):
        return False
    return any(cast("Mapping[str, Any]", notifications).get(kind) for kind in CORE_KINDS)


class ListenStream:
    """One open listen stream's agreed tasks: the acknowledgement and the pushes, as wire JSON."""

    def __init__(self, tasks: TaskPolicy, records: list[TaskRecord], subscription_id: object) -> None:
        self._engine = tasks.engine
        self._records = records
        self._meta = {SUBSCRIPTION_ID_META_KEY: subscription_id}
        self.task_ids = [record.task.task_id for record in records]
        """The agreed ids, in the order asked."""

    def acknowledgement(self) -> dict[str, Any]:
        """The ``notifications/subscriptions/acknowledged`` of a stream that asks for tasks only."""
        params = {"notifications": {"taskIds": list(self.task_ids)}, "_meta": dict(self._meta)}
        return {"method": ACK_METHOD, "params": params}

    async def push(self, send: Send) -> None:
        """Send every agreed task now and after each change, until each is terminal."""
        async with anyio.create_task_group() as group:
            for record in self._records:
                group.start_soon(self._push_one, record, send)

    async def _push_one(self, record: TaskRecord, send: Send) -> None:
        sent: Task | None = None
        while True:
            changed = record.changed
            task = record.task
            if task != sent:
                wire = codec.encode_tasks_notification(self._engine.shown(task))
                params = wire["params"]
                await send(
                    {
                        "method": wire["method"],
                        "params": {**params, "_meta": {**params.get("_meta", {}), **self._meta}},
                    }
                )
                sent = task
            if task.is_terminal:
                return
            await changed.wait()


class TaskListen2026:
    """The task streams of one server: their count and what each agrees to."""

    def __init__(self, tasks: TaskPolicy, service: Tasks2026Service) -> None:
        self._tasks = tasks
        self._service = service
        self._streams = 0

    @asynccontextmanager
    async def open(
        self, asked: list[object], caller: Caller, *, declares_tasks: bool, subscription_id: object
    ) -> AsyncGenerator[ListenStream]:
        """A stream of the caller's tasks among ``asked``, open while the context is."""
        if not declares_tasks:
            raise missing_extension()
        if self._streams >= MAX_STREAMS:
            raise PeerProtocolError("Subscription limit reached", jsonrpc_code=INTERNAL_ERROR)
        self._streams += 1
        metrics.push_stream(1, DIALECT_2026_07_28)
        records: list[TaskRecord] = []
        try:
            await self._owned(asked, caller, records)
            yield ListenStream(self._tasks, records, subscription_id)
        finally:
            for record in records:
                self._tasks.engine.unwatch(record)
            self._streams -= 1
            metrics.push_stream(-1, DIALECT_2026_07_28)

    async def _owned(self, asked: list[object], caller: Caller, records: list[TaskRecord]) -> None:
        """The caller's tasks among ``asked`` into ``records``, each watched (:meth:`open` unwatches)."""
        seen: set[str] = set()
        for task_id in asked:
            if not isinstance(task_id, str) or task_id in seen or len(records) >= MAX_TASK_IDS:
                continue
            seen.add(task_id)
            try:
                record = await self._service.record(task_id, caller)
            except PeerProtocolError:
                continue  # unknown, expired, or another caller's: not agreed
            # Watched, then re-read: a change announced before the watch is not lost.
            records.append(await self._tasks.engine.reader.watch_current(record))
