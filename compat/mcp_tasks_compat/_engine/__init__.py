"""The server-side task engine: store, lifecycle, background runs, waiting, input, TTL sweeping.

Rules of this layer (read before changing anything under ``_engine/``):

* It is SDK-free and uses anyio only. It must never import ``mcp``, ``mcp_tasks_compat.server``,
  ``mcp_tasks_compat.client`` or anything under ``_adapters/``: the server adapters sit above it
  and type against :class:`TaskPolicy`; it knows nothing of sessions or SDK objects. Below it
  are only ``core``, ``dialects``, ``errors`` and ``_detect`` (the policy's dialect refusal).
* Every status change goes through ``core.lifecycle``'s transition table (``next_status``), and
  only the engine writes a record's task (:class:`~.state.TaskWriter`): the input relay and the
  sweeper ask it to. So a cancelled task stays cancelled whatever its work does afterwards, and
  no exception from the work escapes into the session.
* Each run has its own cancel scope (``tasks/cancel`` stops it); any number of waiters wait on a
  task (one ``anyio.Event`` per change, never reused); the task group a run lives in is chosen by
  the adapter (a session's for 2025-11-25 on 1.x, the server lifespan's for the Tasks extension).
* TTL expiry is swept from the store's deadline order, never by scanning every task; a task that
  expires while running is failed and kept for a grace period, not silently dropped.

One concern per module: ``state`` (the record and the errors work raises), ``store`` (where
records live), ``engine`` (create, run, finish, read, cancel, wait), ``inline`` (a call not yet
known to be a task: the inline grace, multi-round-trip input before a task), ``inputs`` (input requests
relayed between the work and the client), ``expiry`` (deadlines and the sweeper), ``policy``
(which tools and dialects a server serves, and its engine).
"""

from __future__ import annotations

from .engine import (
    DEFAULT_LEASE_S,
    DEFAULT_TTL_FLOOR_MS,
    PollPolicy,
    TaskEngine,
    current_run,
    pending_call,
    report_status,
)
from .expiry import EXPIRED_GRACE_MS, Sweeper
from .inline import (
    DEFAULT_INLINE_GRACE_S,
    InlineCall,
    Outcome,
    RoundTripAnswer,
    RoundTrips,
    plain_rounds,
    rounds_of_plain_call,
)
from .inputs import DELIVERY_BOUND_S, InputRelay, input_key_prefix
from .persisted import TaskState
from .policy import SUPPORT_VALUES, TaskPolicy
from .sqlite_store import SqliteTaskStore
from .state import InputRefused, InputSender, TaskRecord, TaskWriter, ToolCallFailure, new_task_id
from .store import (
    EVERY_OWNER,
    InMemoryTaskStore,
    Notifier,
    SilentNotifier,
    StoreConflict,
    StoreEvent,
    TaskStore,
)
from .stores import store_from_url

__all__ = [
    "DEFAULT_INLINE_GRACE_S",
    "DEFAULT_LEASE_S",
    "DEFAULT_TTL_FLOOR_MS",
    "DELIVERY_BOUND_S",
    "EVERY_OWNER",
    "EXPIRED_GRACE_MS",
    "SUPPORT_VALUES",
    "InMemoryTaskStore",
    "InlineCall",
    "InputRefused",
    "InputRelay",
    "InputSender",
    "Notifier",
    "Outcome",
    "PollPolicy",
    "RoundTripAnswer",
    "RoundTrips",
    "SilentNotifier",
    "SqliteTaskStore",
    "StoreConflict",
    "StoreEvent",
    "Sweeper",
    "TaskEngine",
    "TaskPolicy",
    "TaskRecord",
    "TaskState",
    "TaskStore",
    "TaskWriter",
    "ToolCallFailure",
    "current_run",
    "input_key_prefix",
    "new_task_id",
    "pending_call",
    "plain_rounds",
    "report_status",
    "rounds_of_plain_call",
    "store_from_url",
]
