"""A server's task policy: which tools may run as tasks, which dialects are served, and its engine.

This is the SDK-free half of :class:`mcp_tasks_compat.server.ServerTasks` (which adds only the
installing on an SDK server). The server adapters type against :class:`TaskPolicy`, so they sit
above this layer and below ``server.py``, never beside it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Literal

from .._detect import refuse_unsupported
from ..dialects import ALL_DIALECTS, DIALECT_2025_11_25, Dialect, TaskSupport
from .engine import DEFAULT_LEASE_S, DEFAULT_TTL_FLOOR_MS, PollPolicy, TaskEngine
from .grace import GraceMemory
from .inline import DEFAULT_INLINE_GRACE_S
from .limits import (
    DEFAULT_MAX_ACTIVE_TASKS_PER_OWNER,
    DEFAULT_MAX_TASK_ID_LENGTH,
    DEFAULT_MAX_TTL_MS,
    TaskLimits,
)
from .settings import EngineSettings
from .stores import TaskStore, store_from_url
from .stores.task_state import RunOn

__all__ = ["MAX_RERUNS", "RUN_ON_VALUES", "SUPPORT_VALUES", "TASK_TOOL_VERBS", "TaskPolicy"]

SUPPORT_VALUES: tuple[TaskSupport, ...] = ("forbidden", "optional", "required")

MAX_RERUNS = 100
"""A bound on a tool's re-runs: a run that keeps taking its server down must end some day."""

RUN_ON_VALUES: tuple[RunOn, ...] = ("here", "workers")

Scope2025 = Literal["session", "task_id"]
SCOPES_2025: tuple[Scope2025, ...] = ("session", "task_id")

DEFAULT_TASK_TOOLS_PREFIX = "task_"
TASK_TOOL_VERBS: tuple[str, ...] = ("status", "result", "cancel", "answer")
"""The task tools of the plain hand-off, each named ``task_tools_prefix`` + its verb."""


class TaskPolicy:
    """Which tools may run as tasks, which dialects are served, and the engine that runs them.

    Validated here, at construction: a support value outside :data:`SUPPORT_VALUES`, an unknown
    dialect, or one the installed SDK cannot serve is refused before any server is touched.
    ``store`` is a :class:`~.stores.TaskStore` or a URL (``memory:``, ``sqlite:///tasks.db``,
    ``redis://host:port/db``); ``lease_s`` is how long a run's claim holds on a shared store
    without renewal (another replica fails the task once it runs out). ``inline_grace_s`` is how
    long a 2026-07-28 call that may be a task waits for its tool before answering with one (a tool
    done by then is answered plainly); ``0`` makes every such call a task at once. ``push``
    (2026-07-28 on mcp 2.x): serve ``notifications/tasks`` on ``subscriptions/listen`` streams that
    ask for ``taskIds``; ``False`` leaves such requests to the SDK (clients then poll).

    Limits (see docs/errors.md): ``max_active_tasks_per_owner`` non-terminal tasks per owner (the
    authenticated principal, else the session on 2025-11-25, else the whole server on
    unauthenticated 2026-07-28), beyond which creating one is answered with a JSON-RPC error;
    ``max_ttl_ms`` caps every TTL (``None``: no cap, ``ttl: null`` stays unlimited), never above
    2**53 - 1; ``max_task_id_length`` bounds the ids looked up, and errors echo only a prefix.

    ``unauthenticated_2025_scope``: who may read an unauthenticated 2025-11-25 task by its id:
    ``"session"`` (default) only the session that created it; ``"task_id"`` any session that
    knows the id (the 2026-07-28 rule: the unguessable id is the capability), so a client reads
    its task back after a reconnect or a restart. ``tasks/list`` stays the session's either way,
    and an authenticated task is always its principal's.

    ``reruns``: tool name to how many times a run of it lost to a crash or a stopped replica is
    started again (on any replica sharing a durable store, the attempt in its status message)
    instead of failed. Declare only tools that are safe to run again (idempotent); every other
    lost run is failed, with the reason.

    ``run_on="workers"``: task runs are not run here but queued in the store (SQLite or Redis)
    for worker processes (``mcp-tasks-compat worker``, docs/deploy.md); a tool may say otherwise
    for itself (:meth:`set_run_on`). ``max_queued`` bounds the tasks waiting for a worker: a
    create past it is refused with a JSON-RPC error (``None``: no bound).

    ``plain_handoff_s`` (off by default): a plain ``tools/call`` (no task asked for) to a
    task-capable tool waits this long for it and, if it is still running, is answered with an
    ordinary result naming the task it goes on as; the task tools (``task_status``,
    ``task_result``, ``task_cancel``, ``task_answer``: ``task_tools_prefix`` + a verb) then serve
    such clients (docs/any-host.md).
    """

    def __init__(
        self,
        *,
        tools: Mapping[str, TaskSupport] | None = None,
        default_support: TaskSupport = "forbidden",
        ttl_floor_ms: int = DEFAULT_TTL_FLOOR_MS,
        default_ttl_ms: int | None = None,
        poll_policy: PollPolicy | None = None,
        store: TaskStore | str | None = None,
        dialects: Iterable[Dialect] | None = None,
        lease_s: float = DEFAULT_LEASE_S,
        push: bool = True,
        inline_grace_s: float = DEFAULT_INLINE_GRACE_S,
        max_active_tasks_per_owner: int | None = DEFAULT_MAX_ACTIVE_TASKS_PER_OWNER,
        max_ttl_ms: int | None = DEFAULT_MAX_TTL_MS,
        max_task_id_length: int = DEFAULT_MAX_TASK_ID_LENGTH,
        unauthenticated_2025_scope: Scope2025 = "session",
        reruns: Mapping[str, int] | None = None,
        run_on: RunOn = "here",
        max_queued: int | None = None,
        plain_handoff_s: float | None = None,
        task_tools_prefix: str = DEFAULT_TASK_TOOLS_PREFIX,
    ) -> None:
        self.tools: dict[str, TaskSupport] = _checked_support(tools, default_support)
        self.default_support: TaskSupport = default_support
        self.dialects: tuple[Dialect, ...] | None = _checked_dialects(dialects)
        self.unauthenticated_2025_scope: Scope2025 = _checked_scope(unauthenticated_2025_scope, self.dialects)
        if inline_grace_s < 0:
            raise ValueError(f"inline_grace_s must be >= 0; got {inline_grace_s}")
        self.grace = GraceMemory(inline_grace_s)
        """The inline grace per call, learnt per tool: a tool whose calls outlive it skips it."""
        self.push = push
        self.plain_handoff_s: float | None = _checked_handoff(plain_handoff_s)
        """How long a plain call of a task-capable tool waits before handing off (``None``: never)."""
        if not isinstance(task_tools_prefix, str) or not task_tools_prefix.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError(f"task_tools_prefix must be a non-empty string; got {task_tools_prefix!r}")
        self.task_tools_prefix = task_tools_prefix
        self.refuse_task_tool_names(self.tools)
        limits = TaskLimits(
            max_active_tasks_per_owner=max_active_tasks_per_owner,
            max_ttl_ms=max_ttl_ms,
            max_task_id_length=max_task_id_length,
        )
        settings = EngineSettings(
            store=store_from_url(store) if isinstance(store, str) else store,  # Redis imported only if named
            ttl_floor_ms=ttl_floor_ms,
            default_ttl_ms=default_ttl_ms,
            poll_policy=poll_policy or PollPolicy(),
            lease_s=lease_s,
            limits=limits,
            max_queued=max_queued,
        )
        self.reruns: dict[str, int] = {}
        """Tool name to how many times a lost run of it starts again: one table, which every engine
        of this server (a worker's included) reads, so tools declared later are seen by them."""
        self.engine = TaskEngine(settings, reruns=self.reruns)
        self.run_on: RunOn = self._checked_run_on("run_on", run_on)
        """Where task runs happen by default: ``"here"`` (this process) or ``"workers"`` (queued)."""
        self.tools_run_on: dict[str, RunOn] = {}
        """Tool name to where its task runs happen, for tools that say so themselves."""
        for name, count in (reruns or {}).items():
            self.allow_reruns(name, count)

    @property
    def settings(self) -> EngineSettings:
        """What this server's engines are built from (a worker's too, on its own store)."""
        return self.engine.settings

    def engine_on(self, store: TaskStore | str | None) -> TaskEngine:
        """This server's engine, or one built from the same settings on ``store`` (a worker's
        ``--store``), reading the same re-run declarations and result rules (each dialect's
        service gives them to this server's engine)."""
        if store is None:
            return self.engine
        store = store_from_url(store) if isinstance(store, str) else store
        return TaskEngine(
            self.settings.with_store(store), reruns=self.reruns, result_rules=self.engine.runs.result_rules
        )

    @property
    def inline_grace_s(self) -> float:
        """How long a 2026-07-28 call that may be a task waits to be answered plainly."""
        return self.grace.grace_s

    @inline_grace_s.setter
    def inline_grace_s(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError(f"inline_grace_s must be >= 0; got {seconds}")
        self.grace.grace_s = seconds  # what was learnt of each tool is kept

    @staticmethod
    def check_reruns(tool_name: str, count: object) -> int:
        """``count`` if it is a valid number of re-runs, else ``ValueError`` naming the tool."""
        if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= MAX_RERUNS:
            raise ValueError(f"reruns of {tool_name!r} must be an int from 0 to {MAX_RERUNS}; got {count!r}")
        return count

    def allow_reruns(self, tool_name: str, count: int) -> None:
        """Let a lost run of ``tool_name`` start again up to ``count`` times (``0``: never)."""
        if self.check_reruns(tool_name, count):
            self.reruns[tool_name] = count
        else:
            self.reruns.pop(tool_name, None)

    def set_run_on(self, tool_name: str, run_on: RunOn | None) -> None:
        """Where ``tool_name``'s task runs happen (``None``: the server's :attr:`run_on`)."""
        if run_on is None:
            self.tools_run_on.pop(tool_name, None)
            return
        self.tools_run_on[tool_name] = self._checked_run_on(f"run_on of {tool_name!r}", run_on)

    def _checked_run_on(self, what: str, run_on: object) -> RunOn:
        """``run_on`` if valid and honoured by this engine's store (workers need its queue)."""
        if run_on == "here":
            return "here"
        if run_on != "workers":
            raise ValueError(f"{what} must be one of {RUN_ON_VALUES}; got {run_on!r}")
        self.engine.queueing.refuse_without_queue(f"{what}='workers'")
        return "workers"

    def runs_on(self, tool_name: str) -> RunOn:
        """Where a task run of ``tool_name`` happens: here, or queued for the workers."""
        return self.tools_run_on.get(tool_name, self.run_on)

    def support_for(self, tool_name: str) -> TaskSupport:
        return self.tools.get(tool_name, self.default_support)

    def refuse_task_tool_names(self, names: Iterable[str]) -> None:
        """``ValueError`` for tools named as the hand-off's task tools (``task_tools_prefix=``)."""
        if clash := sorted(set(names) & set(self.task_tool_names.values())):
            raise ValueError(f"tools {clash} have the names of task tools (task_tools_prefix= renames them)")

    @property
    def task_tool_names(self) -> dict[str, str]:
        """The task tools a plain client is given, verb to tool name (``{}`` without the hand-off)."""
        if self.plain_handoff_s is None:
            return {}
        return {verb: self.task_tools_prefix + verb for verb in TASK_TOOL_VERBS}


def _checked_handoff(seconds: float | None) -> float | None:
    """``plain_handoff_s``: ``None`` (off) or a finite number of seconds above zero."""
    if seconds is None:
        return None
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds < math.inf:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(
            f"plain_handoff_s must be a positive number of seconds (or None: off); got {seconds!r}"
        )
    return float(seconds)


def _checked_support(tools: Mapping[str, TaskSupport] | None, default: TaskSupport) -> dict[str, TaskSupport]:
    """The declared task support per tool, every value (and the default) one of :data:`SUPPORT_VALUES`."""
    declared: dict[str, TaskSupport] = dict(tools or {})
    bad: dict[str, str] = {name: v for name, v in declared.items() if v not in SUPPORT_VALUES}
    if default not in SUPPORT_VALUES:
        bad["default_support"] = default
    if bad:
        raise ValueError(f"task support must be one of {SUPPORT_VALUES}; got {bad}")
    return declared


def _checked_dialects(dialects: Iterable[Dialect] | None) -> tuple[Dialect, ...] | None:
    """The dialects asked for (``None``: every one the SDK serves); one it cannot serve is refused."""
    if dialects is None:
        return None
    asked = tuple(dict.fromkeys(dialects))
    unknown = [d for d in asked if d not in ALL_DIALECTS]
    if unknown or not asked:
        raise ValueError(f"dialects must be a non-empty subset of {ALL_DIALECTS}; got {asked}")
    refuse_unsupported([f"dialect={d!r}" for d in asked], side="server")
    return asked


def _checked_scope(scope: Scope2025, dialects: tuple[Dialect, ...] | None) -> Scope2025:
    """``unauthenticated_2025_scope``, refused where it means nothing (no 2025-11-25 served)."""
    if scope not in SCOPES_2025:
        raise ValueError(f"unauthenticated_2025_scope must be one of {SCOPES_2025}; got {scope!r}")
    if scope != "session":
        if dialects is not None and DIALECT_2025_11_25 not in dialects:
            raise ValueError(
                f"unauthenticated_2025_scope={scope!r} concerns 2025-11-25 tasks, "
                f"which this server does not serve (dialects={dialects})"
            )
        refuse_unsupported([f"dialect={DIALECT_2025_11_25!r}"], side="server")
    return scope
