"""Where task states live: the store contract, the three stores, and a store from a URL.

Storage only: nothing here runs work, knows of records, waiters or sessions, or imports the rest
of ``_engine`` (the engine uses the stores, never the other way round).

* ``task_state``: :class:`TaskState`, what a store keeps of a task, and its JSON form;
* ``contract``: the :class:`TaskStore` and :class:`Notifier` protocols every store keeps, the
  :class:`StoreEvent` processes sharing a store send each other, :class:`StoreConflict` (a lost
  compare-and-set), :class:`ActiveLimitReached` (a create over the per-owner limit),
  :data:`EVERY_OWNER` and the list cursor;
* ``memory``: :class:`InMemoryTaskStore` (one process);
* ``sqlite`` and ``sqlite_file``: :class:`SqliteTaskStore` (one host), and its file's layout,
  migrations and refusals;
* ``redis``, ``redis_link`` and ``redis_scripts``: ``RedisTaskStore`` (several replicas), its
  connection and pub/sub notifier, and its Lua scripts; imported only when asked for (redis-py
  is an optional extra), so not re-exported here;
* ``postgres``, ``postgres_link``, ``postgres_schema`` and ``postgres_queue``: ``PostgresTaskStore``
  (several replicas), its connections, refusals at open and ``LISTEN/NOTIFY`` notifier, its
  schema and migrations, and its workers' queue; imported only when asked for (psycopg is an
  optional extra), so not re-exported here;
* ``queue``, ``sqlite_queue``, ``redis_queue`` and ``postgres_queue``: the workers' queue
  (:class:`~.queue.TaskQueue`, :func:`~.queue.queue_of`) and each durable store's;
* ``delegating``: one layer between the engine and its store, the queue included, that hands every
  operation on and tells hooks of each (the engine's health and metrics);
* ``urls``: :func:`store_from_url` (``memory:``, ``sqlite:///...``, ``redis://...``,
  ``postgresql://...``);
* ``echo``: a path or URL as a refusal repeats it (control and bidi characters escaped, no password).
"""

from __future__ import annotations

from .contract import (
    EVERY_OWNER,
    ActiveLimitReached,
    EveryOwner,
    Notifier,
    SilentNotifier,
    StoreConflict,
    StoreEvent,
    TaskStore,
    check_store,
)
from .memory import InMemoryTaskStore
from .sqlite import SqliteTaskStore
from .task_state import TaskState
from .urls import ACCEPTED_FORMS, store_from_url

__all__ = [
    "ACCEPTED_FORMS",
    "EVERY_OWNER",
    "ActiveLimitReached",
    "EveryOwner",
    "InMemoryTaskStore",
    "Notifier",
    "SilentNotifier",
    "SqliteTaskStore",
    "StoreConflict",
    "StoreEvent",
    "TaskState",
    "TaskStore",
    "check_store",
    "store_from_url",
]
