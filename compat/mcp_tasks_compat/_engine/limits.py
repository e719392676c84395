"""What one client can make a server hold: active tasks per owner, TTL, and the size of an echoed id.

The engine hands :attr:`TaskLimits.max_active_tasks_per_owner` to the store's ``create``, which
counts the owner's unfinished tasks and inserts in one atomic step (on a shared store, SQLite or
Redis, every replica's tasks of that owner, and no overshoot from concurrent creates); a create
it refuses is answered with :meth:`TaskLimits.refusal`. :meth:`TaskLimits.granted_ttl` is the TTL
a task gets (the request's, raised to the server's floor, or its default; capped by
:meth:`TaskLimits.ttl`). The adapters answer the :class:`~..errors.PeerProtocolError` raised here
as a JSON-RPC error, so the session lives on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from ..errors import INVALID_PARAMS, INVALID_REQUEST, PeerProtocolError

__all__ = [
    "DEFAULT_MAX_ACTIVE_TASKS_PER_OWNER",
    "DEFAULT_MAX_TASK_ID_LENGTH",
    "DEFAULT_MAX_TTL_MS",
    "ECHOED_ID_PREFIX",
    "LIST_PAGE_SIZE",
    "MAX_SAFE_INTEGER",
    "TaskLimits",
    "UnknownTask",
    "echoed_id",
]

MAX_SAFE_INTEGER: Final = 2**53 - 1
"""The largest integer a JavaScript client reads exactly: no reported TTL is ever above it."""
DEFAULT_MAX_ACTIVE_TASKS_PER_OWNER: Final = 1_000
DEFAULT_MAX_TTL_MS: Final = 30 * 24 * 3_600_000
"""30 days."""
DEFAULT_MAX_TASK_ID_LENGTH: Final = 256
ECHOED_ID_PREFIX: Final = 64
"""At most this many characters of a task id the server does not know come back in an error."""

LIST_PAGE_SIZE: Final = 100
"""Tasks per 2025-11-25 ``tasks/list`` page, on both majors."""


def echoed_id(task_id: str) -> str:
    """``task_id`` as an error may repeat it: whole when short, else a prefix and an ellipsis."""
    if len(task_id) <= ECHOED_ID_PREFIX:
        return task_id
    return f"{task_id[:ECHOED_ID_PREFIX]}… ({len(task_id)} characters)"


class UnknownTask(LookupError):
    """No task of this id that the asker may see: unknown, expired, another owner's, or an id
    longer than any this server issues. It carries no wire text: each dialect's service says it in
    its own words (``_server``), the same for every case, so ids cannot be probed."""

    def __init__(self, task_id: str, *, detail: str | None = None) -> None:
        self.task_id = task_id
        self.detail = detail
        """Why, when saying it gives nothing away (an id too long to be one of ours)."""
        super().__init__(f"no task {echoed_id(task_id)}" + (f" ({detail})" if detail else ""))


@dataclass(frozen=True)
class TaskLimits:
    """Per-owner bounds, checked where tasks are created and looked up.

    The owner is who the task belongs to: the authenticated principal, else (2025-11-25) the
    session; unauthenticated 2026-07-28 tasks all share one owner, the whole server.
    """

    max_active_tasks_per_owner: int | None = DEFAULT_MAX_ACTIVE_TASKS_PER_OWNER
    """Non-terminal tasks one owner may have; ``None``: no limit (nothing is counted)."""
    max_ttl_ms: int | None = DEFAULT_MAX_TTL_MS
    """Longer TTLs (and an unlimited ``ttl: null``) are capped to it; ``None``: no maximum."""
    max_task_id_length: int = DEFAULT_MAX_TASK_ID_LENGTH

    def __post_init__(self) -> None:
        if self.max_active_tasks_per_owner is not None and self.max_active_tasks_per_owner < 1:
            raise ValueError("max_active_tasks_per_owner must be >= 1, or None for no limit")
        if self.max_ttl_ms is not None and not 0 <= self.max_ttl_ms <= MAX_SAFE_INTEGER:
            raise ValueError(f"max_ttl_ms must be between 0 and 2**53 - 1 ({MAX_SAFE_INTEGER}), or None")
        if self.max_task_id_length < 1:
            raise ValueError("max_task_id_length must be >= 1")

    def granted_ttl(
        self, requested_ms: int | None, *, requested: bool, floor_ms: int, default_ms: int | None
    ) -> int | None:
        """The TTL a task gets: the request's (raised to ``floor_ms``), or ``default_ms`` when the
        request names none; capped by :meth:`ttl`. A negative TTL is refused (-32602) rather than
        silently raised to the floor."""
        if not requested:
            return self.ttl(default_ms)
        if requested_ms is None:
            return self.ttl(None)
        if requested_ms < 0:
            raise PeerProtocolError(
                f"params.task.ttl must be >= 0 milliseconds or null, not {requested_ms}",
                jsonrpc_code=INVALID_PARAMS,
            )
        return self.ttl(max(requested_ms, floor_ms))

    def ttl(self, granted_ms: int | None) -> int | None:
        """The TTL a task is given and reported with: capped, and never above 2**53 - 1."""
        if self.max_ttl_ms is not None and (granted_ms is None or granted_ms > self.max_ttl_ms):
            return self.max_ttl_ms
        if granted_ms is not None and granted_ms > MAX_SAFE_INTEGER:
            return MAX_SAFE_INTEGER
        return granted_ms

    def check_task_id(self, task_id: str) -> None:
        """Refuse an id longer than any this server issues (:class:`UnknownTask`, saying why)."""
        if len(task_id) > self.max_task_id_length:
            raise UnknownTask(task_id, detail=f"task ids are at most {self.max_task_id_length} characters")

    def refusal(self, owner: str | None, active: int) -> PeerProtocolError:
        """The error a create refused by the store's count (:class:`~.stores.ActiveLimitReached`)
        is answered with: who hit which limit, and how to raise it."""
        limit = self.max_active_tasks_per_owner
        who = (
            "this client already has"
            if owner is not None
            else ("unauthenticated callers (who share one owner on 2026-07-28) already have")
        )
        return PeerProtocolError(
            f"too many active tasks: {who} {active} of at most {limit} "
            "(max_active_tasks_per_owner); wait for one to end or cancel one, or raise the limit "
            "on the server (ServerTasks(max_active_tasks_per_owner=...), "
            "example-server --max-active-tasks N)",
            jsonrpc_code=INVALID_REQUEST,
            data={"limit": "max_active_tasks_per_owner", "max": limit},
        )
