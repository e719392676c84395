"""The server-side task engine: store, lifecycle, background runs, waiting, input, TTL sweeping.

Rules of this layer (read before changing anything under ``_engine/``):

* It is SDK-free and uses anyio only. It must never import ``mcp``, ``mcp_tasks_compat.server``,
  ``mcp_tasks_compat.client`` or anything under ``_adapters/`` or ``_server/``: the layers above
  type against :class:`TaskPolicy` and :class:`TaskEngine`; it knows nothing of sessions or SDK
  objects. Below it are only ``core``, ``dialects``, ``errors`` and ``_detect`` (the policy's
  dialect refusal).
* Every status change goes through ``core._lifecycle``'s transition table (``next_status``), and
  only the engine's writer writes a record's state (:class:`TaskWriter`, ``engine.writer``): the
  runs, the input relay, the sweeper, the replica link and the re-runs hold that one writer and ask
  it to. So a cancelled task stays cancelled whatever its work does afterwards, and no exception
  from the work escapes into the session.
* The engine holds its parts (a reader, a writer, the runs, the input relay, the sweeper, the
  replica link, the re-runs, the background); none of them inherits from another, so each is read
  on its own and the parts name what they use.
* ``stores/`` is storage only: it never imports the rest of the engine. What a store keeps is
  :class:`TaskState` (the same on every replica); what lives only in this process (a run's stop
  handle, the change event, listeners) is the :class:`TaskRecord`, never stored.
* A run is stopped through anyio's own task handle (anyio >= 4.14), or a cancel scope the run
  enters before that (``runs``); ``tasks/cancel`` saves ``cancelled`` first, then stops it. Any
  number of waiters wait on a task (one ``anyio.Event`` per change, never reused); the task group
  a run lives in is chosen by the adapter (a session's for 2025-11-25 on 1.x, the server
  lifespan's otherwise).
* Processes sharing a store tell each other only *which* task changed (:class:`StoreEvent`); the
  receiver re-reads it, and the state read decides what happens (``records.adopt`` stops a run
  whose task ended elsewhere).
* TTL expiry is swept from the store's deadline order, never by scanning every task; a task that
  expires while running is failed and kept for a grace period, not silently dropped.

One concern per module (``tests/engine/test_rules_header.py`` checks each is named here):

* ``engine``: :class:`TaskEngine`: create, start a run, cancel; it holds the parts below;
* ``writer``: :class:`TaskWriter`: every change (create, end, cancel, status) saved
  (compare-and-set), stamped and announced;
* ``reader``: :class:`~.reader.TaskReader`: the four ways to get a task, and reads as the wire answers;
* ``records``: :class:`TaskRecord` (a task as this process sees it) and the records it holds;
* ``polling``: :class:`PollPolicy`, the poll-hint rule;
* ``runs``: a task's run (started as a task, or undecided first), the work's outcome ending the
  task, and the current run of a tool body (``current_run``, ``report_status``);
* ``inline``: a call not yet known to be a task (the inline grace; an input round answered
  before any task, whose wire is ``_server``'s);
* ``grace``: which calls wait out the inline grace (a tool whose calls outlive it skips it);
* ``inputs``: input requests relayed between the work and the client;
* ``expiry``: deadlines, the TTL sweep and the sweep of runs whose replica stopped;
* ``replicas``: what a shared store needs of a serving engine (leases, the notifier);
* ``leases``: whether another process's lease ran out, judged on this process's monotonic clock
  (a renewal marker that stood still for a lease, counted only while this process's writes land);
* ``reruns``: re-run by choice: whether a lost run starts again, and starting it;
* ``settings``: :class:`EngineSettings`, the one frozen object every engine of a server is built from;
* ``hosting``: :class:`EngineHost`, what an engine serves in (runs with no request, how they call
  a tool, the lifespan value they see);
* ``serving``: the store opened, recovery at start, and the one entry that hosts an engine;
* ``queueing``: the workers' queue as a server sees it (room, the refusal without one) and the
  changes that queue a task again (a lost run, a give-back);
* ``workers``: :class:`~.workers.WorkerRuns`, a worker's take, claim and run of queued tasks;
* ``outage``: the store's health (:class:`~.outage.StoreHealth`): the parts report its failures
  there, so an outage is one log line when it begins and one, with a count, when it ends; its
  successes come from a hook on the store layer (``stores.delegating``);
* ``observed``: what the engine tells OpenTelemetry (runs as spans; its store's operations, the
  queue's included, timed by a hook on the store layer);
* ``limits``: what one client can make a server hold (active tasks, TTL, echoed ids, list pages);
* ``policy``: :class:`TaskPolicy`, which tools and dialects a server serves, and its engine;
* ``stores``: where task states live: ``stores.task_state`` (:class:`TaskState` and its JSON),
  ``stores.contract`` (:class:`TaskStore`, :class:`Notifier`, :class:`StoreEvent`,
  :class:`StoreConflict`, :data:`EVERY_OWNER`), ``stores.memory``, ``stores.sqlite`` with
  ``stores.sqlite_file`` (its file's layout and refusals) and ``stores.sqlite_batches`` (its
  connection and group commit), ``stores.redis`` with
  ``stores.redis_link`` (connection, pub/sub), ``stores.redis_checks`` (what a server is, at
  open), ``stores.redis_scripts`` (Lua) and
  ``stores.redis_queue`` (the workers' stream), ``stores.postgres`` with ``stores.postgres_link``
  (connections, refusals at open, LISTEN/NOTIFY), ``stores.postgres_schema`` (tables, functions,
  migrations) and ``stores.postgres_queue`` (its ``SKIP LOCKED`` table), ``stores.queue`` (the
  queue contract) with ``stores.sqlite_queue`` (its table),
  ``stores.urls`` (:func:`store_from_url`), ``stores.delegating`` (the one layer between the
  engine and its store, queue included, whose hooks are the health and the metrics), and
  ``stores.echo`` (a path or URL as a refusal repeats it: printable, without a password).
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
from .hosting import EngineHost, ToolRunner
from .inline import (
    DEFAULT_INLINE_GRACE_S,
    InlineCall,
    Outcome,
    ProgressWatch,
    RoundTripAnswer,
    next_progress,
    progress_sent,
    progress_watch,
)
from .inputs import DELIVERY_BOUND_S, InputRefused, InputRelay, InputSender, input_key_prefix
from .limits import UnknownTask
from .policy import SUPPORT_VALUES, TaskPolicy
from .records import TaskRecord, new_task_id
from .runs import SERVER_STOPPED, ToolCallFailure, Work
from .settings import EngineSettings
from .stores import (
    EVERY_OWNER,
    InMemoryTaskStore,
    Notifier,
    SilentNotifier,
    SqliteTaskStore,
    StoreConflict,
    StoreEvent,
    TaskState,
    TaskStore,
    store_from_url,
)
from .writer import TaskWriter

__all__ = [
    "DEFAULT_INLINE_GRACE_S",
    "DEFAULT_LEASE_S",
    "DEFAULT_TTL_FLOOR_MS",
    "DELIVERY_BOUND_S",
    "EVERY_OWNER",
    "EXPIRED_GRACE_MS",
    "SERVER_STOPPED",
    "SUPPORT_VALUES",
    "EngineHost",
    "EngineSettings",
    "InMemoryTaskStore",
    "InlineCall",
    "InputRefused",
    "InputRelay",
    "InputSender",
    "Notifier",
    "Outcome",
    "PollPolicy",
    "ProgressWatch",
    "RoundTripAnswer",
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
    "ToolRunner",
    "UnknownTask",
    "Work",
    "current_run",
    "input_key_prefix",
    "new_task_id",
    "next_progress",
    "pending_call",
    "progress_sent",
    "progress_watch",
    "report_status",
    "store_from_url",
]
