"""mcp 2.x client: what :func:`.client.session_kwargs` plants in a session, and the routes it feeds.

A ``ClientSession`` has no place for our per-session choices, so they ride on the handlers
``session_kwargs`` registers: the 2025-11-25 status binding (:class:`RouteStatus`, which is also
how :func:`config_of` finds the config again), the 2026-07-28 ``notifications/tasks`` binding and
the ``message_handler`` that takes our listen streams' acknowledgements. The push link's
``subscriptions/listen`` request (:func:`listen`) lives here too, as the config opens it.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import anyio.abc
import mcp_types
from mcp.client.extension import ClaimContext, NotificationBinding
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError

from ..._client import (
    CANCEL_GRACE_SECONDS,
    OnStatus,
    PerSession,
    PushLink,
    StatusListener,
    StatusListeners,
    follow,
)
from ..._detect import sdk_info
from ...core import _codec_2026 as codec_2026
from ...dialects import Dialect
from .task_wires import RawResult, TaskHandle, TaskStatusParams, Wire2026, raw_json, remote

__all__ = [
    "STATUS_NOTIFICATION",
    "TASKS_NOTIFICATION",
    "CatchAcks",
    "ResolveTask",
    "RoutePushed",
    "RouteStatus",
    "SessionConfig",
    "config_of",
    "listen",
    "listen_available",
]

logger = logging.getLogger("mcp_tasks_compat.client")

STATUS_NOTIFICATION = "notifications/tasks/status"
TASKS_NOTIFICATION = "notifications/tasks"
_SUBSCRIPTION_ID_META_KEY = "io.modelcontextprotocol/subscriptionId"
_LISTEN_TIMEOUT_SECONDS = 86_400.0
"""A listen request's read timeout: its answer comes only when the stream ends."""


@dataclass
class SessionConfig:
    """The per-session choices made in :func:`.client.session_kwargs`, found again from the session."""

    dialects: tuple[Dialect, ...]
    statuses: StatusListeners = field(default_factory=StatusListeners)
    push: bool = True
    links: weakref.WeakSet[PushLink] = field(default_factory=lambda: weakref.WeakSet[PushLink]())
    """Every live session's push link (each kept on its session, :data:`_PUSH_LINKS`), for the
    acknowledgements to find theirs; a link goes with its session."""

    def listen(self, task_id: str, listener: StatusListener) -> Callable[[], None]:
        return self.statuses.listen(task_id, listener)

    def push_link(self, session: ClientSession) -> PushLink | None:
        """The session's push link (made on first use); ``None`` when push is off or unavailable."""
        if not self.push or not listen_available():
            return None
        link = _PUSH_LINKS.get(session)
        if link is None:
            group: object = getattr(session, "_task_group", None)
            if not isinstance(group, anyio.abc.TaskGroup):
                return None  # not entered, or an SDK whose session keeps no task group: poll
            if not _hears_acks(session, self):
                return None
            link = _PUSH_LINKS.set(
                session,
                PushLink(lambda stream_id, task_ids: listen(session, task_ids), group.start_soon),
            )
            self.links.add(link)
        return link

    def all_links(self) -> list[PushLink]:
        return list(self.links)


_PUSH_LINKS = PerSession[ClientSession, PushLink]("push_link")
"""The push link of each session, kept on the session (a session-keyed dictionary would keep every
session alive: the link refers back to it)."""

_warned_no_handler = False


def _hears_acks(session: ClientSession, config: SessionConfig) -> bool:
    """Whether our listen streams' acknowledgements reach :class:`CatchAcks` on ``session``.

    A session built with ``session_kwargs()`` has it as its ``message_handler``; one that
    ``mcp.Client`` builds (``tasks_extension()``) has the client's own, and a ``ClientExtension``
    cannot contribute a handler (an acknowledgement is a core notification, never given to a
    ``NotificationBinding``). So the session's private ``_message_handler`` gets a
    :class:`CatchAcks` around it, per session, once. Probed: without it the session polls, and
    says why once.
    """
    global _warned_no_handler
    handler: object = getattr(session, "_message_handler", None)
    if isinstance(handler, CatchAcks):
        return True
    if not callable(handler):
        if not _warned_no_handler:
            _warned_no_handler = True
            logger.info(
                "task states are polled on sessions mcp.Client builds: this mcp %s ClientSession has "
                "no _message_handler to hear subscriptions/listen acknowledgements",
                sdk_info().mcp_version,
            )
        return False
    session._message_handler = CatchAcks(config, handler)  # pyright: ignore[reportPrivateUsage, reportAttributeAccessIssue]
    return True


class ResolveTask:
    """``ResultClaim.resolve``: follows the task to its result (``mcp.Client.call_tool`` calls it).

    ``on_status`` hears the task's statuses (``tasks_extension(on_status=...)``: ``mcp.Client``
    hands a resolver neither the call's ``progress_callback`` nor anything of its own). No
    output-schema check here: ``mcp.Client.call_tool`` checks what ``resolve`` returns itself.
    """

    def __init__(self, config: SessionConfig, on_status: OnStatus | None = None) -> None:
        self.config = config
        self.on_status = on_status

    async def __call__(self, handle: TaskHandle, context: ClaimContext) -> mcp_types.CallToolResult:
        task = codec_2026.decode_create_task_result(raw_json(handle))
        wire = Wire2026(context.session, self.config)
        return await follow(
            wire,
            task,
            on_status=self.on_status,
            overall_timeout=None,
            cancel_grace=CANCEL_GRACE_SECONDS,
        )


class RouteStatus:
    """``NotificationBinding`` handler: passes 2025-11-25 status notifications to whoever follows the task."""

    def __init__(self, config: SessionConfig, chained: NotificationBinding[Any] | None) -> None:
        self.config = config
        self.chained = chained

    async def __call__(self, params: TaskStatusParams) -> None:
        raw = raw_json(params)
        self.config.statuses.deliver(raw)
        if self.chained is not None:
            await self.chained.handler(self.chained.params_type.model_validate(raw, by_name=False))


class RoutePushed:
    """``NotificationBinding`` handler: 2026-07-28 ``notifications/tasks`` to the session's push link."""

    def __init__(self, config: SessionConfig, chained: NotificationBinding[Any] | None) -> None:
        self.config = config
        self.chained = chained

    async def __call__(self, params: TaskStatusParams) -> None:
        raw = raw_json(params)  # its _meta may carry this library's progress numbers (Task.progress)
        for link in self.config.all_links():
            link.deliver(raw)
        if self.chained is not None:
            await self.chained.handler(
                self.chained.params_type.model_validate(raw_json(params), by_name=False)
            )


class CatchAcks:
    """``message_handler``: the acknowledgements of our listen streams, the rest to the caller's handler."""

    def __init__(self, config: SessionConfig, chained: Any) -> None:
        self.config = config
        self.chained = chained

    async def __call__(self, message: Any) -> None:
        if isinstance(message, mcp_types.SubscriptionsAcknowledgedNotification) and self._claimed(message):
            return
        if self.chained is not None:
            await self.chained(message)

    def _claimed(self, message: mcp_types.SubscriptionsAcknowledgedNotification) -> bool:
        params = message.params
        subscription_id = (params.meta or {}).get(_SUBSCRIPTION_ID_META_KEY)
        extra = params.notifications.model_extra or {}
        raw_ids: object = extra.get("taskIds")
        task_ids: list[str] | None = None
        if isinstance(raw_ids, list):
            task_ids = [item for item in cast("list[object]", raw_ids) if isinstance(item, str)]
        links = self.config.all_links()
        if any(link.acknowledged(subscription_id, task_ids) for link in links):
            return True
        # A late ack of a stream this session already closed: only task listens ask for taskIds.
        return bool(links) and task_ids is not None


async def listen(session: ClientSession, task_ids: Sequence[str]) -> None:
    """One ``subscriptions/listen`` for ``task_ids``, until it ends (:data:`.._client.push.OpenStream`)."""
    filter_ = mcp_types.SubscriptionFilter.model_validate({"taskIds": list(task_ids)})
    request = mcp_types.SubscriptionsListenRequest(
        params=mcp_types.SubscriptionsListenRequestParams(notifications=filter_)
    )
    try:
        await session.send_request(request, RawResult, request_read_timeout_seconds=_LISTEN_TIMEOUT_SECONDS)
    except MCPError as error:
        raise remote(error) from None


def listen_available() -> bool:
    """Whether this SDK has ``subscriptions/listen`` (feature ``v2.listen``)."""
    return "v2.listen" in sdk_info().features


def config_of(session: ClientSession) -> SessionConfig | None:
    """The config :func:`.client.session_kwargs` planted, or ``None`` for a session built without it."""
    bindings: object = getattr(session, "_notification_bindings", None)
    if isinstance(bindings, Mapping):
        binding = cast("Mapping[str, object]", bindings).get(STATUS_NOTIFICATION)
        handler: object = getattr(binding, "handler", None)
        if isinstance(handler, RouteStatus):
            return handler.config
    return None
