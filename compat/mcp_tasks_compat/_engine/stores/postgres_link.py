"""How the PostgreSQL store talks to the server: a small pool of psycopg connections, their
errors, the checks at open, and ``LISTEN/NOTIFY`` between replicas.

psycopg 3 (async) rather than asyncpg: measured with ``benchmarks/postgres_drivers.py`` (the
figures are in docs/deploy.md), and it reads every libpq URL, option, service file and
``.pgpass`` as ``psql`` does. The connections are the store's own small pool rather than
psycopg_pool's: a call takes an idle connection or opens one (up to ``pool_size``), so a server
that went away fails the call that needed it at once, with the driver's own reason, and no
background task logs each reconnection attempt meanwhile (an outage is two log lines per
replica, :mod:`..outage`); after a connection error the idle connections are dropped, as the
Redis store drops its pool's, so the calls after the server is back get fresh ones. psycopg's
async connections need asyncio: :meth:`PostgresLink.open` refuses trio, as the Redis store does.

No psycopg error leaves this module: each becomes a :class:`TaskStoreError` that names the URL
(without its password) and the fix; one whose cause is a lost connection carries a
``ConnectionError`` as its cause, so the outage log says "unreachable".
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress
from typing import TYPE_CHECKING, Any, Final, cast

import anyio

from ...errors import TaskStoreError
from .contract import SavesAnnounced, StoreEvent
from .echo import shown_url
from .postgres_schema import STORE_SCHEMA_VERSION, foreign_schema, migrations, newer_schema

try:
    import psycopg
    from psycopg import errors as pg_errors
    from psycopg import sql
except ImportError as missing:  # pragma: no cover - the test group installs psycopg
    raise TaskStoreError(
        "the PostgreSQL task store needs psycopg 3: pip install 'mcp-tasks-compat[postgres]'"
    ) from missing

if TYPE_CHECKING:
    from typing_extensions import LiteralString

__all__ = [
    "COMMAND_TIMEOUT_S",
    "CONNECT_TIMEOUT_S",
    "LISTEN_CHECK_S",
    "PostgresLink",
    "PostgresNotifier",
    "decode_event",
    "encode_event",
    "statement",
]

CONNECT_TIMEOUT_S: Final = 5
COMMAND_TIMEOUT_S: Final = 10.0
LISTEN_CHECK_S: Final = 5.0
"""How long a listening connection may hear nothing before it is checked with a query: a
connection that died unnoticed then fails, and the engine subscribes again and re-reads what it
holds (the fallback for the notifications missed meanwhile)."""

Row = tuple[Any, ...]

_IN_STORE_CALL: Final = contextvars.ContextVar("mcp_tasks_compat_postgres_call", default=False)


class _CancelledHere(logging.Filter):
    """Drops psycopg's "query cancellation interrupted" warning for a statement of this store that
    its caller cancelled (a shutdown, the command timeout): anyio cancels every await of a
    cancelled scope, psycopg's own wait for the server-side cancel included, and the store closes
    that connection anyway. The same warning from any other use of psycopg is kept."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (_IN_STORE_CALL.get() and str(record.msg).startswith("query cancellation interrupted"))


logging.getLogger("psycopg").addFilter(_CancelledHere())

_LOST: Final = (psycopg.OperationalError, psycopg.InterfaceError, OSError)


def statement(text: str) -> sql.SQL:
    """``text`` as a statement for psycopg. The store builds its statements from its own constants
    and a schema name checked against :data:`~.postgres_schema.SCHEMA_NAME`, never from input;
    values always go as parameters."""
    return sql.SQL(cast("LiteralString", text))


def encode_event(event: StoreEvent) -> str:
    """The ``NOTIFY`` payload of ``event`` (JSON, the Redis store's message shape)."""
    return json.dumps({"kind": "changed", "task": event.task_id, "origin": event.origin})


def decode_event(data: str) -> StoreEvent | None:
    """A notified event, or ``None`` for a payload that is not one (skipped)."""
    try:
        fields: object = json.loads(data)
    except ValueError:
        return None
    if not isinstance(fields, dict):
        return None
    task_id, origin = fields.get("task"), fields.get("origin")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    if not isinstance(task_id, str) or not isinstance(origin, str):
        return None
    return StoreEvent(task_id=task_id, origin=origin)


class PostgresLink:
    """The connections of one PostgreSQL URL and schema, shared by a store, its queue and notifier."""

    def __init__(self, url: str, schema: str, *, pool_size: int) -> None:
        self.url = url
        self.schema = schema
        self.describe = shown_url(url) + ("" if schema == "mcp_tasks" else f" (schema {schema})")
        self._idle: list[psycopg.AsyncConnection[Row]] = []
        self._slots = anyio.Semaphore(pool_size)
        self._open = False
        self._holding: set[psycopg.AsyncConnection[Row]] = set()

    async def connect(self) -> psycopg.AsyncConnection[Row]:
        """A new autocommit connection; a failure is a :class:`TaskStoreError` naming its cause."""
        try:
            return await psycopg.AsyncConnection.connect(
                self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S
            )
        except psycopg.ProgrammingError as exc:  # a malformed URL or option
            raise TaskStoreError(
                f"not a usable PostgreSQL URL: {self.describe!r} ({_first_line(exc)})"
            ) from None
        except (psycopg.Error, OSError) as exc:
            raise self.connect_error(exc) from _lost(exc)

    async def open(self) -> None:
        """Connect, check that the server is a primary, refuse a schema that is not the store's,
        create or migrate it; idempotent. Every refusal comes before anything is written."""
        if self._open:
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            raise TaskStoreError(
                f"the PostgreSQL task store ({self.describe}) needs an asyncio event loop: psycopg's async"
                " connections are asyncio-only; run the server on asyncio, or use sqlite: or memory:"
                " under trio"
            ) from None
        connection = await self.connect()
        try:
            await self._prepare(connection)
        except BaseException:
            await connection.close()
            raise
        self._idle.append(connection)
        self._open = True

    async def _prepare(self, connection: psycopg.AsyncConnection[Row]) -> None:
        user, database = "this user", "this database"
        try:
            cursor = await connection.execute("SELECT pg_is_in_recovery(), current_user, current_database()")
            row = await cursor.fetchone()
            assert row is not None
            if row[0]:
                raise TaskStoreError(
                    f"the PostgreSQL task store {self.describe} is a read-only standby (pg_is_in_recovery()"
                    " is true): every task is a write; point the store at the primary"
                )
            user, database = str(row[1]), str(row[2])
            found = await self._layout(connection)
            if found is None:
                return
            async with connection.transaction():
                await connection.execute(
                    "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"{self.schema}|migrate",)
                )
                again = await self._layout(connection)  # another replica may have migrated meanwhile
                if again is None:
                    return
                await connection.execute(statement(f"CREATE SCHEMA IF NOT EXISTS {self.schema}"))
                for step in migrations(self.schema, again):
                    await connection.execute(statement(step))
        except pg_errors.InsufficientPrivilege as exc:
            raise TaskStoreError(
                f"the PostgreSQL task store {self.describe} refused to create the store's schema"
                f" {self.schema!r} for user {user!r} ({_first_line(exc)}); nothing was written:"
                f" GRANT CREATE ON DATABASE {database} TO {user} (or have the owner open the store once,"
                f" then GRANT USAGE ON SCHEMA {self.schema} and ALL ON ALL TABLES/SEQUENCES IN SCHEMA"
                f" {self.schema} TO {user})"
            ) from None
        except pg_errors.ReadOnlySqlTransaction as exc:
            raise TaskStoreError(
                f"the PostgreSQL task store {self.describe} is read-only ({_first_line(exc)}): every task is"
                " a write; point the store at a writable primary (default_transaction_read_only off)"
            ) from None
        except psycopg.Error as exc:
            raise self.store_error(exc) from _lost(exc)

    async def _layout(self, connection: psycopg.AsyncConnection[Row]) -> int | None:
        """The layout to migrate from (0: a new schema), or ``None`` when the schema is current;
        refuses (:class:`TaskStoreError`) a schema that is not ours or is newer."""
        cursor = await connection.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = %s AND c.relkind IN ('r', 'p', 'v', 'm', 'f')",
            (self.schema,),
        )
        tables = [str(name) for (name,) in await cursor.fetchall()]
        where = f"the PostgreSQL task store {self.describe}"
        refusal = foreign_schema(where, self.schema, tables)
        if refusal is not None:
            raise TaskStoreError(refusal)
        if not tables:
            return 0
        cursor = await connection.execute(statement(f"SELECT key, value FROM {self.schema}.store_meta"))
        meta = {str(key): str(value) for key, value in await cursor.fetchall()}
        refusal = newer_schema(where, self.schema, meta, tables)
        if refusal is not None:
            raise TaskStoreError(refusal)
        found = int(meta["schema"])
        return None if found == STORE_SCHEMA_VERSION else found

    async def close(self) -> None:
        self._open = False
        idle, self._idle = self._idle, []
        for connection in [*idle, *self._holding]:
            with suppress(psycopg.Error, OSError):
                await connection.close()

    @asynccontextmanager
    async def connection(self) -> AsyncGenerator[psycopg.AsyncConnection[Row]]:
        """An idle connection (or a new one, up to ``pool_size``), given back when done; a psycopg
        error becomes a :class:`TaskStoreError`, and a lost connection drops the idle ones too."""
        if not self._open:
            raise TaskStoreError(f"the PostgreSQL task store {self.describe} is not open: call open() first")
        async with self._slots:
            connection = self._idle.pop() if self._idle else await self.connect()
            self._holding.add(connection)
            kept = False
            marked = _IN_STORE_CALL.set(True)
            try:
                with anyio.fail_after(COMMAND_TIMEOUT_S):
                    yield connection
                kept = connection.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
            except TimeoutError:
                raise TaskStoreError(
                    f"the PostgreSQL task store {self.describe} does not answer (no reply in"
                    f" {COMMAND_TIMEOUT_S:g} s): check the server and the network"
                ) from ConnectionError("timed out")
            except _LOST as exc:
                await self._drop_idle()
                raise self.store_error(exc) from _lost(exc)
            except psycopg.Error as exc:
                kept = connection.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
                raise self.store_error(exc) from None
            finally:
                _IN_STORE_CALL.reset(marked)
                self._holding.discard(connection)
                if kept and self._open and not connection.closed:
                    self._idle.append(connection)
                else:
                    with suppress(psycopg.Error, OSError):
                        await connection.close()

    async def _drop_idle(self) -> None:
        idle, self._idle = self._idle, []
        for connection in idle:
            with suppress(psycopg.Error, OSError):
                await connection.close()

    async def fetch(self, query: str, params: Sequence[object] = ()) -> list[Row]:
        """The rows of one statement (none for a statement that returns none)."""
        async with self.connection() as connection:
            cursor = await connection.execute(statement(query), params)
            return await cursor.fetchall() if cursor.description is not None else []

    def connect_error(self, exc: BaseException) -> TaskStoreError:
        """The refusal of a connection the server did not accept, by its reason."""
        text = _first_line(exc)
        if "password authentication failed" in text or "no password supplied" in text:
            return TaskStoreError(
                f"the PostgreSQL task store {self.describe} refused the credentials ({text}): check the"
                " user and password in the URL (or ~/.pgpass, PGPASSWORD)"
            )
        if "does not exist" in text or "pg_hba.conf" in text or "permission denied" in text:
            return TaskStoreError(
                f"the PostgreSQL task store {self.describe} refused the connection ({text}): create the"
                " database or role, or allow this host in pg_hba.conf"
            )
        return self._unreachable(text)

    def store_error(self, exc: BaseException) -> TaskStoreError:
        """The :class:`TaskStoreError` for a psycopg error (none escapes the store)."""
        if isinstance(exc, pg_errors.ReadOnlySqlTransaction):
            return TaskStoreError(
                f"the PostgreSQL task store {self.describe} is now read-only and refused a write (a"
                " failover made it a standby?): point the store at the current primary"
            )
        if isinstance(exc, _LOST):
            return self._unreachable(_first_line(exc))
        return TaskStoreError(
            f"the PostgreSQL task store {self.describe} refused a statement: {_first_line(exc)}"
        )

    def _unreachable(self, reason: str) -> TaskStoreError:
        return TaskStoreError(
            f"the PostgreSQL task store {self.describe} does not answer ({reason or 'connection lost'}):"
            " start PostgreSQL, or check the URL"
        )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _lost(exc: BaseException) -> BaseException | None:
    """The cause a lost connection's :class:`TaskStoreError` carries (a ``ConnectionError``, so the
    outage log says "unreachable"); ``None`` for any other error."""
    return ConnectionError(_first_line(exc)) if isinstance(exc, _LOST) else None


class PostgresNotifier(SavesAnnounced):
    """:class:`~.contract.Notifier` on ``LISTEN/NOTIFY``, one channel per store schema.

    An event is only a hint ("re-read this task now"): the state in the store is the truth, and
    ``NOTIFY`` is delivered at the commit of the write it follows. PostgreSQL delivers to a
    connected listener in order; a listener whose connection drops raises
    :class:`TaskStoreError` from its iterator, and the engine subscribes again and re-reads what it
    holds. Once told who saves (:meth:`announce_saves_as`), the store's save sends the event in
    its own statement, so a change is one round trip.
    """

    def __init__(self, link: PostgresLink, channel: str) -> None:
        super().__init__()
        self._link = link
        self.channel = channel

    async def publish(self, event: StoreEvent) -> None:
        if self.sent_by_save(event):
            return  # the save that made the change sent it, in the same statement
        await self._link.fetch("SELECT pg_notify(%s, %s)", (self.channel, encode_event(event)))

    @asynccontextmanager
    async def subscribe(self) -> AsyncGenerator[AsyncIterator[StoreEvent]]:
        connection = await self._link.connect()
        try:
            try:
                with anyio.fail_after(COMMAND_TIMEOUT_S):
                    await connection.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
            except (psycopg.Error, OSError, TimeoutError) as exc:
                raise self._link.store_error(exc) from ConnectionError(_first_line(exc))
            yield self._events(connection)
        finally:
            with suppress(psycopg.Error, OSError):
                await connection.close()

    async def _events(self, connection: psycopg.AsyncConnection[Row]) -> AsyncIterator[StoreEvent]:
        while True:
            try:
                heard = False
                async for note in connection.notifies(timeout=LISTEN_CHECK_S):
                    heard = True
                    event = decode_event(note.payload)
                    if event is not None:
                        yield event
                if not heard:  # a quiet while: is the connection still there?
                    with anyio.fail_after(COMMAND_TIMEOUT_S):
                        await connection.execute("SELECT 1")
            except (psycopg.Error, OSError, TimeoutError) as exc:
                raise self._link.store_error(exc) from ConnectionError(_first_line(exc))
