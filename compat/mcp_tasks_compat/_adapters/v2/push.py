"""Task push on an mcp 2.x server: routing ``subscriptions/listen`` to the 2026-07-28 listen service.

What a stream agrees to and sends is :class:`~mcp_tasks_compat._server.TaskListen2026`'s. The
SDK's ``ListenHandler`` rebuilds the client's filter from the four core fields, so the Tasks
extension's ``notifications.taskIds`` is dropped from its acknowledgement and never matched, and
``subscriptions/listen`` is a spec method no extension ``MethodBinding`` may take over. So a
``Server.middleware`` entry (the probed seam ``v2.server_middleware``, as for 2025-11-25) routes
the listen requests that ask for ``taskIds`` on 2026-07-28 to the service. A filter that also
asks for core kinds (``toolsListChanged``, ...) still reaches the SDK's own handler, whose
acknowledgement gains the agreed ``taskIds`` on its way out (:class:`_AmendingSession`); one asking
for ``taskIds`` only is served here entirely (a server built with ``subscriptions=False`` included).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, cast

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from pydantic import BaseModel

from ..._detect import sdk_info
from ..._server import ListenStream, TaskListen2026, asked_task_ids, asks_core_kinds
from ..._server.listen_2026 import ACK_METHOD, Send
from ...dialects import DIALECT_2026_07_28
from .runtime import RawNotification, TasksRuntime, declares_tasks, sdk_errors

__all__ = ["TaskPushMiddleware", "push_middleware"]

logger = logging.getLogger("mcp_tasks_compat.server")

LISTEN_METHOD = "subscriptions/listen"


def push_middleware(runtime: TasksRuntime) -> list[TaskPushMiddleware]:
    """The middleware to add: one entry when the server pushes, none when it cannot or should not."""
    if not runtime.tasks.push or not runtime.serves_2026:
        return []
    features = sdk_info().features
    if "v2.listen" not in features or "v2.server_middleware" not in features:
        logger.info("task push is off: this mcp lacks subscriptions/listen or the middleware seam")
        return []
    return [TaskPushMiddleware(runtime)]


def _sender(ctx: ServerRequestContext[Any, Any], session: Any = None) -> Send:
    """Notifications (wire JSON) on the listen request's stream, sent exactly as built."""
    target = session if session is not None else ctx.session

    async def send(wire: Mapping[str, Any]) -> None:
        notification = RawNotification(method=wire["method"], params=dict(wire["params"]))
        await target.send_notification(cast(Any, notification), related_request_id=ctx.request_id)

    return send


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
            cast(Any, RawNotification(method=ACK_METHOD, params=params)),
            related_request_id=related_request_id,
        )
        self._acked.set()


class TaskPushMiddleware:
    """The ``Server.middleware`` entry that routes task listen streams to the listen service."""

    def __init__(self, runtime: TasksRuntime) -> None:
        self._runtime = runtime
        self._listen = TaskListen2026(runtime.tasks, runtime.service_2026)

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if (
            ctx.method != LISTEN_METHOD
            or ctx.request_id is None
            or ctx.protocol_version != DIALECT_2026_07_28
        ):
            return await call_next(ctx)
        with sdk_errors():
            asked = asked_task_ids(ctx.params)
            if asked is None:
                return await call_next(ctx)
            opened = self._listen.open(
                asked,
                self._runtime.caller(ctx),
                declares_tasks=declares_tasks(ctx),
                subscription_id=ctx.request_id,
            )
            async with opened as stream:
                if asks_core_kinds(ctx.params):
                    return await self._beside_sdk(ctx, call_next, stream)
                send = _sender(ctx)
                await send(stream.acknowledgement())
                await stream.push(send)
                await anyio.sleep_forever()  # the stream stays open until the client closes it
        raise AssertionError("unreachable")  # pragma: no cover

    async def _beside_sdk(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext, stream: ListenStream
    ) -> HandlerResult:
        acked = anyio.Event()
        session = _AmendingSession(ctx.session, stream.task_ids, acked)
        result: list[HandlerResult] = []

        async def sdk_stream() -> None:
            result.append(await call_next(replace(ctx, session=cast(Any, session))))
            group.cancel_scope.cancel()  # the SDK closed the stream: so do the pushes

        async def pushes() -> None:
            await acked.wait()
            await stream.push(_sender(ctx))

        async with anyio.create_task_group() as group:
            group.start_soon(sdk_stream)
            group.start_soon(pushes)
        return result[0] if result else None
