"""Task push on an mcp 2.x server: ``notifications/tasks`` on ``subscriptions/listen`` (2026-07-28).

The SDK's ``ListenHandler`` rebuilds the client's filter from the four core fields, so the Tasks
extension's ``notifications.taskIds`` is dropped from its acknowledgement and never matched, and
``subscriptions/listen`` is a spec method no extension ``MethodBinding`` may take over. So a
``Server.middleware`` entry (the probed seam ``v2.server_middleware``, as for 2025-11-25) takes
the listen requests that ask for ``taskIds`` on 2026-07-28:

* a request that does not declare the extension gets -32021 (``requiredCapabilities``);
* the acknowledgement agrees to the ids of tasks the caller owns (others are left out, as the
  ids are bearer handles and must not be probed), at most :data:`MAX_TASK_IDS`;
* each agreed task is then sent as its full ``DetailedTask`` (result or error inline once
  terminal) right after the acknowledgement and whenever it changes, in order, until it ends;
* a filter that also asks for core kinds (``toolsListChanged``, ...) still reaches the SDK's own
  handler, whose acknowledgement gains the agreed ``taskIds`` on its way out; one asking for
  ``taskIds`` only is served here entirely (a server built with ``subscriptions=False`` included).

Changes are followed through the engine's record of each task (``engine.watch``), which the
engine wakes on every change made here and, on a shared store, on every change another replica
announces.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any, Final, cast

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS
from pydantic import BaseModel, model_serializer

from ..._detect import sdk_info
from ..._engine import TaskRecord
from ..._observe import metrics
from ...core import codec_2026
from ...core.model import Task
from ...dialects import DIALECT_2026_07_28, TASKS_EXTENSION_ID
from ...errors import PeerProtocolError
from .runtime import TasksRuntime, answering_store_errors, mcp_error

__all__ = ["MAX_TASK_IDS", "TaskPushMiddleware", "push_middleware"]

logger = logging.getLogger("mcp_tasks_compat.server")

LISTEN_METHOD: Final = "subscriptions/listen"
ACK_METHOD: Final = "notifications/subscriptions/acknowledged"
SUBSCRIPTION_ID_META_KEY: Final = "io.modelcontextprotocol/subscriptionId"
MAX_TASK_IDS: Final = 1024
"""Most task ids one stream follows; the acknowledgement leaves the rest out."""
MAX_STREAMS: Final = 1024
"""Most task streams open at once on one server (more are refused before the acknowledgement)."""
_CORE_KINDS: Final = (
    "toolsListChanged",
    "promptsListChanged",
    "resourcesListChanged",
    "resourceSubscriptions",
)


class _RawNotification(BaseModel):
    """A notification sent exactly as built (the session's ``exclude_none`` would drop ``ttlMs: null``)."""

    method: str
    params: dict[str, Any]

    @model_serializer
    def _serialize(self) -> dict[str, Any]:
        return {"method": self.method, "params": self.params}


def push_middleware(runtime: TasksRuntime) -> list[TaskPushMiddleware]:
    """The middleware to add: one entry when the server pushes, none when it cannot or should not."""
    if not runtime.tasks.push or not runtime.serves_2026:
        return []
    features = sdk_info().features
    if "v2.listen" not in features or "v2.server_middleware" not in features:
        logger.info("task push is off: this mcp lacks subscriptions/listen or the middleware seam")
        return []
    return [TaskPushMiddleware(runtime)]


def _asked_task_ids(params: object) -> list[object] | None:
    """The request's ``notifications.taskIds`` (``None`` when it does not ask for task states)."""
    if not isinstance(params, Mapping):
        return None
    notifications = cast("Mapping[str, Any]", params).get("notifications")
    if not isinstance(notifications, Mapping) or "taskIds" not in notifications:
        return None
    task_ids = cast("Mapping[str, Any]", notifications)["taskIds"]
    if not isinstance(task_ids, list):
        raise MCPError(code=INVALID_PARAMS, message="notifications.taskIds must be an array of strings")
    return cast("list[object]", task_ids)


def _asks_core_kinds(params: Mapping[str, Any]) -> bool:
    notifications = cast("Mapping[str, Any]", params.get("notifications") or {})
    return any(notifications.get(kind) for kind in _CORE_KINDS)


def _declares_tasks(ctx: ServerRequestContext[Any, Any]) -> bool:
    capabilities = ctx.session.client_capabilities
    extensions = capabilities.extensions if capabilities is not None else None
    return bool(extensions) and TASKS_EXTENSION_ID in (extensions or {})


class _AmendingSession:
    """The session the SDK's listen handler sees: its acknowledgement gains the agreed ``taskIds``."""

    def __init__(self, session: Any, task_ids: list[str], acked: anyio.Event) -> None:
        self._session = session
        self._task_ids = task_ids
        self._acked = acked

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)

    async def send_notification(self, notification: Any, related_request_id: Any = None) -> None:
        if getattr(notification, "method", None) != ACK_METHOD or self._acked.is_set():
            await self._session.send_notification(notification, related_request_id=related_request_id)
            return
        wire = cast(BaseModel, notification).model_dump(by_alias=True, mode="json", exclude_none=True)
        params = dict(wire.get("params") or {})
        params["notifications"] = {**dict(params.get("notifications") or {}), "taskIds": self._task_ids}
        await self._session.send_notification(
            cast(Any, _RawNotification(method=ACK_METHOD, params=params)),
            related_request_id=related_request_id,
        )
        self._acked.set()


class TaskPushMiddleware:
    """The ``Server.middleware`` entry that serves ``notifications/tasks`` on listen streams."""

    def __init__(self, runtime: TasksRuntime) -> None:
        self._runtime = runtime
        self._streams = 0

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if (
            ctx.method != LISTEN_METHOD
            or ctx.request_id is None
            or ctx.protocol_version != DIALECT_2026_07_28
        ):
            return await call_next(ctx)
        asked = _asked_task_ids(ctx.params)
        if asked is None:
            return await call_next(ctx)
        if not _declares_tasks(ctx):
            raise mcp_error(codec_2026.missing_capability_error())
        if self._streams >= MAX_STREAMS:
            raise MCPError(code=INTERNAL_ERROR, message="Subscription limit reached")
        self._streams += 1
        metrics.push_stream(1, DIALECT_2026_07_28)
        try:
            with answering_store_errors():
                records = await self._owned(asked)
            try:
                params = cast("Mapping[str, Any]", ctx.params)
                if _asks_core_kinds(params):
                    return await self._beside_sdk(ctx, call_next, records)
                return await self._serve(ctx, records)
            finally:
                for record in records:
                    self._runtime.tasks.engine.unwatch(record)
        finally:
            self._streams -= 1
            metrics.push_stream(-1, DIALECT_2026_07_28)

    async def _owned(self, asked: list[object]) -> list[TaskRecord]:
        """The caller's tasks among ``asked``, each watched (the caller unwatches them)."""
        runtime = self._runtime
        owner = runtime.principal()
        records: list[TaskRecord] = []
        seen: set[str] = set()
        for task_id in asked:
            if not isinstance(task_id, str) or task_id in seen or len(records) >= MAX_TASK_IDS:
                continue
            seen.add(task_id)
            try:
                record = await runtime.service_2026.record(task_id, owner)
            except PeerProtocolError:
                continue  # unknown, expired, or another caller's: not agreed
            records.append(runtime.tasks.engine.watch(record))
        return records

    async def _serve(self, ctx: ServerRequestContext[Any, Any], records: list[TaskRecord]) -> HandlerResult:
        meta = {SUBSCRIPTION_ID_META_KEY: ctx.request_id}
        ack = {"notifications": {"taskIds": [record.task.task_id for record in records]}, "_meta": meta}
        await ctx.session.send_notification(
            cast(Any, _RawNotification(method=ACK_METHOD, params=ack)), related_request_id=ctx.request_id
        )
        async with anyio.create_task_group() as group:
            for record in records:
                group.start_soon(self._push, ctx, record, meta)
        await anyio.sleep_forever()  # the stream stays open until the client closes it
        raise AssertionError("unreachable")  # pragma: no cover

    async def _beside_sdk(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext, records: list[TaskRecord]
    ) -> HandlerResult:
        acked = anyio.Event()
        session = _AmendingSession(ctx.session, [record.task.task_id for record in records], acked)
        meta = {SUBSCRIPTION_ID_META_KEY: ctx.request_id}
        result: list[HandlerResult] = []

        async def sdk_stream() -> None:
            result.append(await call_next(replace(ctx, session=cast(Any, session))))
            group.cancel_scope.cancel()  # the SDK closed the stream: so do the pushes

        async def pushes() -> None:
            await acked.wait()
            async with anyio.create_task_group() as inner:
                for record in records:
                    inner.start_soon(self._push, ctx, record, meta)

        async with anyio.create_task_group() as group:
            group.start_soon(sdk_stream)
            group.start_soon(pushes)
        return result[0] if result else None

    async def _push(
        self, ctx: ServerRequestContext[Any, Any], record: TaskRecord, meta: dict[str, Any]
    ) -> None:
        """Send ``record``'s task now and after each change, until it is terminal."""
        sent: Task | None = None
        while True:
            changed = record.changed
            task = record.task
            if task != sent:
                await self._send(ctx, task, meta)
                sent = task
            if task.is_terminal:
                return
            await changed.wait()

    async def _send(self, ctx: ServerRequestContext[Any, Any], task: Task, meta: dict[str, Any]) -> None:
        wire = codec_2026.encode_tasks_notification(self._runtime.tasks.engine.shown(task))
        params: dict[str, Any] = {**wire["params"], "_meta": {**wire["params"].get("_meta", {}), **meta}}
        send: Callable[..., Awaitable[None]] = ctx.session.send_notification
        await send(
            cast(Any, _RawNotification(method=wire["method"], params=params)),
            related_request_id=ctx.request_id,
        )
