"""The PostgreSQL store's tables, functions and migrations, and the checks that refuse a database at open.

Everything lives in one PostgreSQL schema of the store's own (``mcp_tasks`` by default; the
``schema=`` of :class:`~.postgres.PostgresTaskStore`):

* ``store_meta`` (key, value): ``application`` (``mcp-tasks-compat``: a schema without it belongs
  to someone else) and ``schema``, the layout version. A layout newer than
  :data:`STORE_SCHEMA_VERSION` is refused by name; an older one is migrated on open, in one
  transaction under an advisory lock, so two replicas starting together migrate once.
* ``tasks``: one row per task, the columns the store queries (owner and creation order for
  listing, the expiry deadline, the runner's lease, the terminal flag, the compare-and-set version,
  the run's fencing token, whether it waits in the workers' queue) and the exact state as JSON
  text (:func:`~.task_state.dumps`). Ids and owners sort bytewise (``COLLATE "C"``), as Python
  compares strings: the list order is the other stores'.
* ``task_queue``: the workers' queue (:mod:`.postgres_queue`), one row per wait, added by a
  trigger of ``tasks`` in the statement that queues the task (the same transaction); the trigger
  also sends ``NOTIFY`` on the queue's channel, which waiting workers ``LISTEN`` to.
* ``create_task(...)``: a create as one statement: with a per-owner limit it takes a transaction
  advisory lock on the owner, counts the owner's unfinished tasks and inserts, so concurrent
  creates on every replica never overshoot (each statement of a PL/pgSQL function reads the rows
  committed before it, so the count sees every create that held the lock before).

Opening refuses, before anything is written, a standby (``pg_is_in_recovery()``), a schema that
holds tables of another application, or a newer layout; a user without the rights to create the
schema is refused when the creating transaction fails (rolled back: nothing written).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

__all__ = [
    "APPLICATION",
    "SCHEMA_NAME",
    "STORE_SCHEMA_VERSION",
    "foreign_schema",
    "layout_statements",
    "migrations",
    "newer_schema",
]

APPLICATION: Final = "mcp-tasks-compat"
"""``store_meta.application``: how a schema says it is ours."""

SCHEMA_NAME: Final = re.compile(r"[a-z_][a-z0-9_]{0,47}")
"""A schema name the store accepts: lowercase, written into statements as it is (short enough
that its notification channels stay under PostgreSQL's 63-byte names)."""


def _schema_1(s: str) -> list[str]:
    return [
        f"CREATE TABLE {s}.store_meta (key text PRIMARY KEY, value text NOT NULL)",
        f"""CREATE TABLE {s}.tasks (
            task_id text COLLATE "C" PRIMARY KEY,
            owner text COLLATE "C",
            created_at timestamptz NOT NULL,
            expires_at timestamptz,
            lease_until timestamptz,
            runner text,
            terminal boolean NOT NULL,
            version bigint NOT NULL,
            claim bigint NOT NULL DEFAULT 0,
            queued boolean NOT NULL DEFAULT false,
            state text NOT NULL
        )""",
        f"CREATE INDEX tasks_by_creation ON {s}.tasks (created_at, task_id)",
        f"CREATE INDEX tasks_by_owner ON {s}.tasks (owner, created_at, task_id)",
        f"CREATE INDEX tasks_by_expiry ON {s}.tasks (expires_at, task_id) WHERE expires_at IS NOT NULL",
        f"CREATE INDEX tasks_by_lease ON {s}.tasks (lease_until, task_id)"
        " WHERE NOT terminal AND runner IS NOT NULL AND lease_until IS NOT NULL",
        f"CREATE INDEX tasks_unfinished_by_owner ON {s}.tasks (owner) WHERE NOT terminal",
        f"""CREATE TABLE {s}.task_queue (
            seq bigserial PRIMARY KEY,
            task_id text COLLATE "C" NOT NULL,
            claim bigint NOT NULL,
            queued_at timestamptz NOT NULL DEFAULT clock_timestamp(),
            consumer text,
            taken_at timestamptz
        )""",
        f"CREATE INDEX task_queue_by_task ON {s}.task_queue (task_id)",
        f"""CREATE FUNCTION {s}.queue_follows_task() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF NEW.queued AND (TG_OP = 'INSERT' OR NOT OLD.queued) THEN
            INSERT INTO {s}.task_queue (task_id, claim) VALUES (NEW.task_id, NEW.claim);
            PERFORM pg_notify('{s}.queue', '');
          END IF;
          RETURN NULL;
        END $$""",
        f"""CREATE TRIGGER tasks_queue AFTER INSERT OR UPDATE OF queued ON {s}.tasks
        FOR EACH ROW EXECUTE FUNCTION {s}.queue_follows_task()""",
        f"""CREATE FUNCTION {s}.create_task(
            p_id text, p_owner text, p_created timestamptz, p_expires timestamptz,
            p_lease timestamptz, p_runner text, p_terminal boolean, p_version bigint,
            p_claim bigint, p_queued boolean, p_state text, p_limit integer
        ) RETURNS TABLE (outcome integer, active bigint) LANGUAGE plpgsql AS $$
        DECLARE
          found_active bigint;
        BEGIN
          IF p_limit IS NOT NULL THEN
            PERFORM pg_advisory_xact_lock(hashtextextended('{s}|' || coalesce('=' || p_owner, '-'), 0));
            IF p_owner IS NULL THEN
              SELECT count(*) INTO found_active FROM (
                SELECT 1 FROM {s}.tasks WHERE owner IS NULL AND NOT terminal LIMIT p_limit) AS held;
            ELSE
              SELECT count(*) INTO found_active FROM (
                SELECT 1 FROM {s}.tasks WHERE owner = p_owner AND NOT terminal LIMIT p_limit) AS held;
            END IF;
            IF found_active >= p_limit THEN
              RETURN QUERY SELECT 2, found_active;
              RETURN;
            END IF;
          END IF;
          INSERT INTO {s}.tasks (task_id, owner, created_at, expires_at, lease_until, runner, terminal,
              version, claim, queued, state)
            VALUES (p_id, p_owner, p_created, p_expires, p_lease, p_runner, p_terminal, p_version,
              p_claim, p_queued, p_state)
            ON CONFLICT (task_id) DO NOTHING;
          IF FOUND THEN
            RETURN QUERY SELECT 1, 0::bigint;
          ELSE
            RETURN QUERY SELECT 0, 0::bigint;
          END IF;
        END $$""",
    ]


_MIGRATIONS: Final = {1: _schema_1}
"""``_MIGRATIONS[n](schema)``: the statements that bring a schema from layout ``n - 1`` (0: none) to ``n``."""

STORE_SCHEMA_VERSION: Final = max(_MIGRATIONS)
"""The layout this release writes; a newer one is refused, an older one migrated."""

_TABLES: Final = ("store_meta", "tasks", "task_queue")


def migrations(schema: str, found: int) -> list[str]:
    """The statements from layout ``found`` to :data:`STORE_SCHEMA_VERSION`, then the meta rows."""
    statements: list[str] = []
    for version in range(found + 1, STORE_SCHEMA_VERSION + 1):
        statements += _MIGRATIONS[version](schema)
    statements.append(
        f"INSERT INTO {schema}.store_meta (key, value) VALUES ('application', '{APPLICATION}'),"
        f" ('schema', '{STORE_SCHEMA_VERSION}') ON CONFLICT (key) DO UPDATE SET value = excluded.value"
    )
    return statements


def layout_statements(schema: str) -> list[str]:
    """Every statement of a new schema (for the docs and an operator who creates it by hand)."""
    return [f"CREATE SCHEMA IF NOT EXISTS {schema}", *migrations(schema, 0)]


def foreign_schema(where: str, schema: str, tables: Sequence[str]) -> str | None:
    """The refusal of a schema whose tables are not a store's (``None``: empty, or ours)."""
    if not tables or "store_meta" in tables:
        return None
    return (
        f"{where} has tables of another application in the schema {schema!r} ({', '.join(sorted(tables))}):"
        " give the task store a schema of its own (PostgresTaskStore(url, schema=...)) or another database"
    )


def newer_schema(where: str, schema: str, meta: dict[str, str], tables: Sequence[str]) -> str | None:
    """The refusal of a ``store_meta`` that is not ours, or of a newer layout; ``None``: usable."""
    if meta.get("application") != APPLICATION or not meta.get("schema", "").isdigit():
        return (
            f"{where} has a store_meta table of another application in the schema {schema!r}:"
            " give the task store a schema of its own (PostgresTaskStore(url, schema=...))"
        )
    found = int(meta["schema"])
    if found > STORE_SCHEMA_VERSION:
        return (
            f"{where} holds task-store schema {found} in the schema {schema!r}, written by a newer"
            f" mcp-tasks-compat; this one reads up to {STORE_SCHEMA_VERSION}: upgrade mcp-tasks-compat"
            " (pip install -U 'mcp-tasks-compat[postgres]') or use another schema"
        )
    missing = [table for table in _TABLES if table not in tables]
    if missing and found == STORE_SCHEMA_VERSION:
        return (
            f"{where} has an mcp-tasks-compat task store (schema {found}) in the schema {schema!r}"
            f" without its {', '.join(missing)} table: it was damaged or emptied by hand; restore it from a"
            " backup, or give the store another schema"
        )
    return None
