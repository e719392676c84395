"""What every task store keeps: the :class:`TaskStore` and :class:`Notifier` contracts.

Storage only, like the python-sdk's own task store: a store keeps :class:`~.task_state.TaskState`
values and never runs work. Every write is a compare-and-set on ``version``, so two processes
sharing a store (a restarted server, replicas behind a load balancer) never overwrite each
other's transitions silently: the loser re-reads and asks the lifecycle table again, which keeps
a cancelled task cancelled when another replica finishes its work.

The notifier tells the other processes sharing a store that a task changed, and nothing more:
a :class:`StoreEvent` names the task and who changed it. A process holding that task re-reads it
from the store (the state is the truth, the event only a hint to look now); what it then does
follows from the state it read: waiters wake, a run whose task ended elsewhere is stopped
(``records.adopt``), an answered input reaches the work. In one process the
engine wakes its own waiters, so the in-memory notifier is a no-op.

Contract (checked for every store by ``tests/contracts/test_task_store.py``):

* ``shared`` says whether other processes may use the store: the engine then claims and renews
  leases, follows the notifier and re-reads; ``False`` only for a store no one else can open.
* ``create`` is durable when it returns (the spec wants a task readable before the create answer
  is sent); an id that exists raises :class:`StoreConflict`. With ``active_limit`` it first
  counts the owner's non-terminal tasks and raises :class:`ActiveLimitReached` instead when there
  are that many; count and insert are one atomic step, so concurrent creates (in this process or
  on other replicas) never overshoot the per-owner limit.
* ``get`` returns ``None`` for an unknown (or deleted) id.
* ``save(state, fence=None)`` writes ``state`` with ``version + 1`` and returns it, if the stored
  version is ``state.version`` and, with ``fence`` (a write of a run: the claim it was started
  under), the stored ``claim`` is ``fence``; otherwise it raises :class:`StoreConflict` carrying
  the stored state (or ``None`` if the task is gone). Both checks and the write are one atomic
  step: a run whose claim a newer one replaced (its replica paused past its lease, cut off from
  the store) never writes again, whatever it read before.
* ``now()`` (optional): the store's own clock, on which every replica judges leases and
  deadlines (Redis: ``TIME``); a store without it is one host's (SQLite, memory), whose clock
  is the engine's.
* ``due_for_expiry(now)`` returns states whose ``expires_at`` is at or before ``now``, soonest
  first, without scanning tasks that are not due; ``next_expiry()`` the soonest deadline.
* ``lease_expired(now)`` returns non-terminal states with a ``runner`` whose ``lease_until`` is
  at or before ``now``, oldest ``lease_until`` first. The engine asks with a ``now`` far in the
  future (every leased run): it judges a lease on its own monotonic clock, from whether the run's
  ``runner``, ``claim`` and ``lease_until`` changed (a renewal marker), never from the value of
  ``lease_until`` (``_engine/leases.py``). A ``delete`` of an id no task has changes nothing (the
  engine's write probe).
* ``list_tasks(owner=..., cursor=..., limit=...)`` pages through an owner's tasks (or every
  owner's, :data:`EVERY_OWNER`) in creation order; the cursor (:func:`encode_cursor`) is opaque
  and ``None`` at the end.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Final, Protocol

import anyio

from ...core._model import format_timestamp, parse_timestamp
from ...errors import ActiveLimitReached, StoreConflict, TaskStoreError
from .task_state import TaskState

__all__ = [
    "EVERY_OWNER",
    "ActiveLimitReached",
    "EveryOwner",
    "Notifier",
    "SavesAnnounced",
    "SilentNotifier",
    "StoreConflict",
    "StoreEvent",
    "TaskStore",
    "TaskStoreError",
    "check_store",
    "decode_cursor",
    "encode_cursor",
    "sql_page_filter",
]


class EveryOwner:
    """The type of :data:`EVERY_OWNER` (a store's ``list_tasks`` may test ``owner is EVERY_OWNER``)."""

    def __repr__(self) -> str:
        return "EVERY_OWNER"


EVERY_OWNER: Final = EveryOwner()
"""``list_tasks(owner=EVERY_OWNER)``: every task, for operators (``owner=None`` means unowned)."""


@dataclass(frozen=True)
class StoreEvent:
    """One message between processes sharing a store: task ``task_id`` changed, ``origin`` changed it.

    It says *that* the task changed, not how: the receiver re-reads the task and acts on the state
    it finds (which is the truth even when events are lost, reordered or merged).
    """

    task_id: str
    origin: str


class Notifier(Protocol):
    """Carries :class:`StoreEvent` between the processes sharing a store."""

    def announce_saves_as(self, origin: str) -> None:
        """The one process saving through this store is ``origin``: a store whose save can publish
        its own event (Redis, from inside the write) does so from now on, and :meth:`publish` of an
        event of ``origin`` is then not sent a second time. A second, different origin (two
        engines on one store object) turns that off again: every event is published as before."""
        ...

    async def publish(self, event: StoreEvent) -> None: ...

    def subscribe(self) -> AbstractAsyncContextManager[AsyncIterator[StoreEvent]]:
        """``async with notifier.subscribe() as events: async for event in events: ...``.

        Events published while subscribed are delivered; a notifier that cannot deliver (the
        connection dropped) raises :class:`TaskStoreError` from the iterator.
        """
        ...


class TaskStore(Protocol):
    """Where task states live (see the module docstring for the contract every store keeps).

    A class of your own with these members is one (``tests/contracts/test_task_store.py`` holds
    every store to the contract). Example::

        class PostgresTaskStore:  # a TaskStore: no base class needed
            async def create(self, state, *, active_limit=None): ...  # ActiveLimitReached at the limit
            async def save(self, state, *, fence=None): ...  # StoreConflict when version/claim moved
            ...  # shared, notifier, describe, open, close, get, delete, count_active, list_tasks...

        app = TaskServer("builder", store=PostgresTaskStore())
    """

    @property
    def shared(self) -> bool:
        """Other processes may use this store (leases, the notifier and re-reads matter)."""
        ...

    @property
    def notifier(self) -> Notifier: ...

    @property
    def describe(self) -> str:
        """What and where the store is, for messages (``memory:``, ``sqlite:///tasks.db``)."""
        ...

    async def open(self) -> None:
        """Connect, create or migrate; idempotent. A bad store raises :class:`TaskStoreError`."""
        ...

    async def close(self) -> None: ...

    async def create(self, state: TaskState, *, active_limit: int | None = None) -> None:
        """Insert ``state`` (:class:`StoreConflict` if its id exists); with ``active_limit``, only
        if its owner has fewer unfinished tasks, counted in the same atomic step
        (:class:`ActiveLimitReached` otherwise)."""
        ...

    async def get(self, task_id: str) -> TaskState | None: ...

    async def save(self, state: TaskState, *, fence: int | None = None) -> TaskState:
        """Compare-and-set on ``version`` and, with ``fence``, on ``claim`` (the module docstring)."""
        ...

    async def delete(self, task_id: str) -> None: ...

    async def count_active(self, owner: str | None, *, at_most: int) -> int:
        """How many of ``owner``'s tasks are not terminal, counting no further than ``at_most``.

        For operators and tests (the engine's limit is checked inside :meth:`create`); it must not
        read every task the owner ever had: terminal ones are skipped by an index or a counter.
        """
        ...

    async def due_for_expiry(self, now: datetime, *, limit: int = 100) -> list[TaskState]: ...

    async def next_expiry(self) -> datetime | None: ...

    async def lease_expired(self, now: datetime, *, limit: int = 100) -> list[TaskState]: ...

    async def list_tasks(
        self, *, owner: str | EveryOwner | None = EVERY_OWNER, cursor: str | None = None, limit: int = 100
    ) -> tuple[list[TaskState], str | None]: ...


def _takes_keyword(method: object, name: str) -> bool:
    """Whether ``method`` takes the keyword ``name`` (or ``**kwargs``); ``True`` when it has no
    signature to read (a C callable: trusted)."""
    try:
        parameters = inspect.signature(method).parameters  # pyright: ignore[reportArgumentType]
    except (TypeError, ValueError):
        return True
    takes_keywords = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    return name in parameters or takes_keywords


def check_store(store: TaskStore) -> TaskStore:
    """``store``, refused (``TypeError``) when it predates a part of the contract the engine needs.

    The per-owner limit is counted inside ``create`` (``active_limit``) and a run's writes are
    fenced inside ``save`` (``fence``), each one atomic step with the write; a store written
    against an older contract would fail at its first create, or let a replica paused past its
    lease overwrite the run that replaced it, so it is refused here, where the server is built,
    with the fix.
    """
    name = type(store).__name__
    if not _takes_keyword(store.create, "active_limit"):
        raise TypeError(
            f"task store {name}: its create(state) does not take active_limit, which "
            "the per-owner limit of active tasks needs after mcp-tasks-compat 0.1.0 (counted in one "
            "step with the insert); add `*, active_limit: int | None = None` to create and, when it "
            "is set and the owner already has that many unfinished tasks, raise "
            "mcp_tasks_compat.errors.ActiveLimitReached(active) instead of inserting"
        )
    if not _takes_keyword(store.save, "fence"):
        raise TypeError(
            f"task store {name}: its save(state) does not take fence, which fencing a run's writes "
            "needs (a replica paused past its lease must not overwrite "
            "the run that replaced it); add `*, fence: int | None = None` to save and, when it is "
            "set and the stored state's claim is not fence, raise StoreConflict(task_id, stored) "
            "instead of writing, in the same atomic step as the version check"
        )
    return store


class SavesAnnounced:
    """The rule of :meth:`Notifier.announce_saves_as` for a notifier whose store's save sends its
    own event (Redis from its save script, PostgreSQL from its ``UPDATE``): one origin is
    announced by the save; a second, different one turns that off for good."""

    def __init__(self) -> None:
        self._saves_origin: str | None = None
        self._two_origins = False

    @property
    def saves_origin(self) -> str | None:
        """The origin the store's save announces every save as (``None``: it does not)."""
        return self._saves_origin

    def announce_saves_as(self, origin: str) -> None:
        if self._two_origins or self._saves_origin == origin:
            return
        if self._saves_origin is not None:
            self._two_origins, self._saves_origin = True, None  # whose save is it? publish apart
            return
        self._saves_origin = origin

    def sent_by_save(self, event: StoreEvent) -> bool:
        """Whether the save that made this change sent its event already (so publish skips it)."""
        return self._saves_origin is not None and event.origin == self._saves_origin


class SilentNotifier:
    """One process: nothing to tell anyone (the engine wakes its own waiters)."""

    def announce_saves_as(self, origin: str) -> None:
        del origin

    async def publish(self, event: StoreEvent) -> None:
        del event

    @asynccontextmanager
    async def subscribe(self) -> AsyncGenerator[AsyncIterator[StoreEvent], None]:
        yield _Never()


class _Never:
    """An event stream on which nothing ever arrives."""

    def __aiter__(self) -> _Never:
        return self

    async def __anext__(self) -> StoreEvent:
        await anyio.sleep_forever()
        raise StopAsyncIteration  # pragma: no cover - sleep_forever only ends by cancellation


def encode_cursor(last: TaskState) -> str:
    """A page cursor: where the page ended in creation order (valid even if that task is deleted)."""
    return f"{format_timestamp(last.task.created_at)}|{last.task_id}"


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    """(created_at, task id) of a cursor from :func:`encode_cursor`; :class:`TaskStoreError` otherwise."""
    created, sep, task_id = cursor.partition("|")
    try:
        if not sep or not task_id:
            raise ValueError(cursor)
        return parse_timestamp(created), task_id
    except ValueError:
        raise TaskStoreError(f"not a cursor this store issued: {cursor[:40]!r}") from None


def sql_page_filter(owner: object, cursor: Sequence[object] | None, mark: str) -> tuple[str, list[object]]:
    """The ``WHERE`` of an SQL store's ``list_tasks`` page and its parameters, one rule for SQLite
    and PostgreSQL: ``owner`` a name, ``None`` (unowned) or :data:`EVERY_OWNER`; ``cursor`` the
    decoded (created_at, task id) the page starts after; ``mark`` the driver's placeholder."""
    clauses: list[str] = []
    params: list[object] = []
    if owner is None:
        clauses.append("owner IS NULL")
    elif isinstance(owner, str):
        clauses.append(f"owner = {mark}")
        params.append(owner)
    elif owner is not EVERY_OWNER:
        raise TypeError(f"owner must be a str, None or EVERY_OWNER, not {owner!r}")
    if cursor is not None:
        clauses.append(f"(created_at, task_id) > ({mark}, {mark})")
        params.extend(cursor)
    return (f" WHERE {' AND '.join(clauses)}" if clauses else ""), params
