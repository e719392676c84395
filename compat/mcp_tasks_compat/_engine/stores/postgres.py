"""The PostgreSQL task store: several replicas and workers share their tasks through one database.

Each operation is one statement, so one round trip, atomic in the database:

* a create is ``create_task(...)`` (:mod:`.postgres_schema`): with a per-owner limit, an advisory
  lock on the owner, the count of its unfinished tasks and the insert, in one transaction; a task
  created queued gets its queue entry from the table's trigger, in the same statement;
* a save is one conditional ``UPDATE ... WHERE task_id = $ AND version = $ [AND claim = $]``: the
  compare-and-set and, for a run's write, its fencing token are checked by the write itself, so a
  run whose claim was replaced never writes; its :class:`~.contract.StoreEvent` is sent with
  ``pg_notify`` by the same statement (delivered at its commit), and the queue's trigger adds (or,
  on a claim, removes) the task's entry;
* deadlines and leases are on the database's clock (:meth:`PostgresTaskStore.now`,
  ``clock_timestamp()``), which every replica reads, as Redis's ``TIME``.

Layout, migrations and the refusals at open are in :mod:`.postgres_schema` and
:mod:`.postgres_link`; the workers' queue in :mod:`.postgres_queue`.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Final

from ...errors import TaskStoreError
from .contract import (
    EVERY_OWNER,
    ActiveLimitReached,
    StoreConflict,
    StoreEvent,
    decode_cursor,
    encode_cursor,
    sql_page_filter,
)
from .postgres_link import PostgresLink, PostgresNotifier, Row, encode_event
from .postgres_queue import PostgresTaskQueue
from .postgres_schema import SCHEMA_NAME
from .task_state import TaskState, dumps, loads

__all__ = ["DEFAULT_SCHEMA", "PostgresTaskStore"]

DEFAULT_SCHEMA: Final = "mcp_tasks"


def _columns(state: TaskState) -> tuple[object, ...]:
    """owner, created_at, expires_at, lease_until, runner, terminal, version, claim, queued, state."""
    return (
        state.owner,
        state.task.created_at,
        state.expires_at,
        state.lease_until,
        state.runner,
        state.is_terminal,
        state.version,
        state.claim,
        state.queued,
        dumps(state),
    )


class PostgresTaskStore:
    """Task states in the PostgreSQL database ``url`` names (``postgresql://user:pass@host:port/db``),
    in the schema ``schema`` (created and migrated by :meth:`open`); every replica and worker that
    opens the same URL and schema shares them. ``pool_size``: connections kept per process."""

    def __init__(self, url: str, *, schema: str = DEFAULT_SCHEMA, pool_size: int = 10) -> None:
        if not SCHEMA_NAME.fullmatch(schema):
            raise ValueError(
                f"schema {schema!r}: a task store's schema is lowercase letters, digits and _ (at most 48)"
            )
        self._link = PostgresLink(url, schema, pool_size=pool_size)
        self._s = schema
        self._notifier = PostgresNotifier(self._link, f"{schema}.events")
        self.queue = PostgresTaskQueue(self._link, schema)
        """The workers' queue (:mod:`.postgres_queue`), filled by this store's own writes."""
        s = schema
        self._save = (
            f"WITH saved AS (UPDATE {s}.tasks SET owner = %s, created_at = %s, expires_at = %s,"
            " lease_until = %s, runner = %s, terminal = %s, version = %s, claim = %s, queued = %s, state = %s"
            " WHERE task_id = %s AND version = %s AND (%s::bigint IS NULL OR claim = %s) RETURNING task_id),"
            " told AS (SELECT pg_notify(%s, %s) FROM saved WHERE %s <> '')"
            " SELECT (SELECT count(*) FROM saved), (SELECT count(*) FROM told)"
        )
        self._create = (
            f"SELECT outcome, active FROM {s}.create_task(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
        )

    @property
    def schema(self) -> str:
        return self._s

    @property
    def shared(self) -> bool:
        """Every replica and worker that opens the same URL and schema uses it."""
        return True

    @property
    def notifier(self) -> PostgresNotifier:
        return self._notifier

    @property
    def describe(self) -> str:
        return self._link.describe

    async def open(self) -> None:
        await self._link.open()

    async def close(self) -> None:
        await self.queue.close()
        await self._link.close()

    def _load(self, text: object) -> TaskState:
        try:
            return loads(str(text))
        except ValueError as exc:
            raise TaskStoreError(
                f"the PostgreSQL task store {self.describe}: a stored task cannot be read ({exc}); upgrade"
                " mcp-tasks-compat if a newer release wrote it"
            ) from None

    async def _states(self, query: str, params: tuple[object, ...]) -> list[TaskState]:
        return [self._load(row[0]) for row in await self._link.fetch(query, params)]

    async def now(self) -> datetime:
        """The database's clock (``clock_timestamp()``): the one every replica judges leases on."""
        rows = await self._link.fetch("SELECT clock_timestamp()")
        return _utc(rows[0][0])

    async def create(self, state: TaskState, *, active_limit: int | None = None) -> None:
        rows = await self._link.fetch(self._create, (state.task_id, *_columns(state), active_limit))
        outcome, active = int(rows[0][0]), int(rows[0][1])
        if outcome == 1:
            return
        if outcome == 2:
            raise ActiveLimitReached(active)
        raise StoreConflict(state.task_id, await self.get(state.task_id))

    async def get(self, task_id: str) -> TaskState | None:
        found = await self._states(f"SELECT state FROM {self._s}.tasks WHERE task_id = %s", (task_id,))
        return found[0] if found else None

    async def save(self, state: TaskState, *, fence: int | None = None) -> TaskState:
        saved = state.evolve(version=state.version + 1)
        origin = self._notifier.saves_origin
        event = "" if origin is None else encode_event(StoreEvent(state.task_id, origin))
        params = (
            *_columns(saved),
            state.task_id,
            state.version,
            fence,
            fence,
            self._notifier.channel,
            event,
            event,
        )
        rows: list[Row] = await self._link.fetch(self._save, params)
        if int(rows[0][0]) != 1:  # the version or the claim moved: nothing written, nothing sent
            raise StoreConflict(state.task_id, await self.get(state.task_id))
        return saved

    async def delete(self, task_id: str) -> None:
        await self._link.fetch(
            f"WITH gone AS (DELETE FROM {self._s}.tasks WHERE task_id = %s)"
            f" DELETE FROM {self._s}.task_queue WHERE task_id = %s",
            (task_id, task_id),
        )

    async def count_active(self, owner: str | None, *, at_most: int) -> int:
        where = "owner IS NULL" if owner is None else "owner = %s"
        params: tuple[object, ...] = (at_most,) if owner is None else (owner, at_most)
        rows = await self._link.fetch(
            f"SELECT count(*) FROM (SELECT 1 FROM {self._s}.tasks WHERE {where} AND NOT terminal"
            " LIMIT %s) AS held",
            params,
        )
        return int(rows[0][0])

    async def due_for_expiry(self, now: datetime, *, limit: int = 100) -> list[TaskState]:
        return await self._states(
            f"SELECT state FROM {self._s}.tasks WHERE expires_at IS NOT NULL AND expires_at <= %s"
            " ORDER BY expires_at, task_id LIMIT %s",
            (now, limit),
        )

    async def next_expiry(self) -> datetime | None:
        rows = await self._link.fetch(
            f"SELECT min(expires_at) FROM {self._s}.tasks WHERE expires_at IS NOT NULL"
        )
        return None if rows[0][0] is None else _utc(rows[0][0])

    async def lease_expired(self, now: datetime, *, limit: int = 100) -> list[TaskState]:
        return await self._states(
            f"SELECT state FROM {self._s}.tasks WHERE NOT terminal AND runner IS NOT NULL"
            " AND lease_until IS NOT NULL AND lease_until <= %s ORDER BY lease_until, task_id LIMIT %s",
            (now, limit),
        )

    async def list_tasks(
        self, *, owner: object = EVERY_OWNER, cursor: str | None = None, limit: int = 100
    ) -> tuple[list[TaskState], str | None]:
        """``owner``: a name, ``None`` (unowned tasks) or :data:`~.contract.EVERY_OWNER`."""
        if limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        where, params = sql_page_filter(owner, None if cursor is None else decode_cursor(cursor), "%s")
        params.append(limit + 1)  # one more than the page: is there a next page?
        found = await self._states(
            f"SELECT state FROM {self._s}.tasks{where} ORDER BY created_at, task_id LIMIT %s", tuple(params)
        )
        if len(found) > limit:
            page = found[:limit]
            return page, encode_cursor(page[-1])
        return found, None


def _utc(value: object) -> datetime:
    if not isinstance(value, datetime):
        raise TaskStoreError(f"the PostgreSQL task store read a time that is not one: {value!r}")
    return value.astimezone(timezone.utc)
