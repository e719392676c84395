"""The Redis task store: several replicas share their tasks through one redis-server.

redis-py rather than valkey-py: valkey-py is a fork of it with the same API, and both talk to Redis
and Valkey servers alike; redis-py is the maintained upstream with the longer record (5.0.1, our
floor, is from 2023). Both are asyncio-only, so this store needs an asyncio event loop:
:meth:`RedisTaskStore.open` refuses trio with a :class:`TaskStoreError` (use ``sqlite:`` or
``memory:`` there). The loop is found with ``asyncio.get_running_loop()`` rather than sniffio,
which anyio no longer depends on.

Data layout (``P`` is the prefix, ``mcp-tasks:`` by default):

* ``P task:<id>``: a hash. ``data`` is the state's JSON (:func:`~.persisted.dumps`), ``version``
  its compare-and-set version, ``order`` its member in the list indexes, ``owner`` the key of its
  owner's list index. A task with ``expires_at`` has a key TTL of the time left plus
  :data:`KEY_TTL_MARGIN`, so Redis drops it even if no replica is left to sweep it. The TTL is
  relative (``PEXPIRE``), so the clocks of Redis and of the replicas need not agree.
* ``P expiry``: a sorted set of task ids scored by ``expires_at`` (microseconds since the Unix
  epoch, exact for years 1685 to 2255).
* ``P leases``: a sorted set of the non-terminal tasks that have a runner, scored by
  ``lease_until``.
* ``P order:*`` (every owner), ``P order:-`` (unowned) and ``P order:=<owner>``: the list order,
  sorted sets whose members are ``<created_at in microseconds since year 1, 18 digits>|<id>``, all
  scored 0 so they sort lexicographically: creation order, ties by id, the in-memory store's order;
  a cursor is a position in it, valid after the task it names is deleted.
* ``P active:-`` (unowned) and ``P active:=<owner>``: sets of the owner's tasks that are not
  terminal, for the per-owner limit (:meth:`RedisTaskStore.count_active`); a member whose hash
  Redis expired is dropped when counted.
* ``P events``: the pub/sub channel of :class:`RedisNotifier`.

Every write is one Lua script (create-if-absent, compare-and-set save, delete), so the hash and its
index entries change together. An index entry whose hash Redis expired is dropped when a read
meets it. redis-py's own retries are off: a write whose answer was lost must not run twice (a
retried create would conflict with itself); after a connection error the pool's idle connections
are dropped, so the calls after Redis is back get fresh ones.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress
from datetime import datetime, timedelta, timezone
from typing import Any, Final, cast
from urllib.parse import urlsplit, urlunsplit

import anyio

from ..errors import TaskStoreError
from .persisted import TaskState, dumps, loads
from .store import (
    EVERY_OWNER,
    EventKind,
    EveryOwner,
    StoreConflict,
    StoreEvent,
    decode_cursor,
    encode_cursor,
)

try:
    from redis import asyncio as aioredis
    from redis.asyncio.client import PubSub
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import RedisError
    from redis.exceptions import TimeoutError as RedisTimeoutError
except ImportError as missing:  # pragma: no cover - the test group installs redis
    raise TaskStoreError(
        "the Redis task store needs redis-py: pip install 'mcp-tasks-compat[redis]'"
    ) from missing

__all__ = ["KEY_TTL_MARGIN", "RedisNotifier", "RedisTaskStore"]

KEY_TTL_MARGIN: Final = timedelta(seconds=60)
"""How long Redis keeps a task past its ``expires_at``: the replicas' sweeper deletes it first."""

CONNECT_TIMEOUT_S: Final = 5.0
COMMAND_TIMEOUT_S: Final = 10.0
EVENT_POLL_S: Final = 1.0  # one pub/sub read; a message arriving meanwhile returns at once

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=timezone.utc)
_YEAR_ONE: Final = datetime(1, 1, 1, tzinfo=timezone.utc)
_MICROSECOND: Final = timedelta(microseconds=1)
_EVENT_KINDS: Final[frozenset[str]] = frozenset({"changed", "cancel", "input"})

# KEYS: task, expiry, leases, every owner's order, this owner's order, this owner's active set.
# ARGV: data, version, order member, expiry score, lease score, key TTL ms ("": none), task id,
# terminal ("1"/"0").
_CREATE: Final = """
if redis.call('EXISTS', KEYS[1]) == 1 then
  return {0, redis.call('HGET', KEYS[1], 'data')}
end
redis.call('HSET', KEYS[1], 'data', ARGV[1], 'version', ARGV[2], 'order', ARGV[3], 'owner', KEYS[5],
  'active', KEYS[6])
if ARGV[8] == '0' then redis.call('SADD', KEYS[6], ARGV[7]) end
if ARGV[6] ~= '' then redis.call('PEXPIRE', KEYS[1], ARGV[6]) end
redis.call('ZADD', KEYS[4], 0, ARGV[3])
redis.call('ZADD', KEYS[5], 0, ARGV[3])
if ARGV[4] ~= '' then redis.call('ZADD', KEYS[2], ARGV[4], ARGV[7]) end
if ARGV[5] ~= '' then redis.call('ZADD', KEYS[3], ARGV[5], ARGV[7]) end
return {1}
"""

# KEYS: as _CREATE. ARGV: expected version, then as _CREATE (data, new version, ...).
_SAVE: Final = """
local held = redis.call('HMGET', KEYS[1], 'version', 'order', 'owner', 'active')
if not held[1] then return {0} end
if held[1] ~= ARGV[1] then return {0, redis.call('HGET', KEYS[1], 'data')} end
if held[2] ~= ARGV[4] or held[3] ~= KEYS[5] then
  if held[2] then
    redis.call('ZREM', KEYS[4], held[2])
    if held[3] then redis.call('ZREM', held[3], held[2]) end
  end
  redis.call('ZADD', KEYS[4], 0, ARGV[4])
  redis.call('ZADD', KEYS[5], 0, ARGV[4])
end
redis.call('HSET', KEYS[1], 'data', ARGV[2], 'version', ARGV[3], 'order', ARGV[4], 'owner', KEYS[5],
  'active', KEYS[6])
if ARGV[7] ~= '' then redis.call('PEXPIRE', KEYS[1], ARGV[7]) else redis.call('PERSIST', KEYS[1]) end
if held[4] and held[4] ~= KEYS[6] then redis.call('SREM', held[4], ARGV[8]) end
if ARGV[9] == '1' then redis.call('SREM', KEYS[6], ARGV[8]) else redis.call('SADD', KEYS[6], ARGV[8]) end
for i = 2, 3 do
  if ARGV[i + 3] ~= '' then
    redis.call('ZADD', KEYS[i], ARGV[i + 3], ARGV[8])
  else
    redis.call('ZREM', KEYS[i], ARGV[8])
  end
end
return {1}
"""

# KEYS: task, expiry, leases, every owner's order. ARGV: task id.
_DELETE: Final = """
local held = redis.call('HMGET', KEYS[1], 'order', 'owner', 'active')
if held[1] then
  redis.call('ZREM', KEYS[4], held[1])
  if held[2] then redis.call('ZREM', held[2], held[1]) end
end
if held[3] then redis.call('SREM', held[3], ARGV[1]) end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
return 1
"""

# The owner's tasks that are not terminal, up to a limit. KEYS: the active set. ARGV: the task
# key prefix, the limit. A member whose hash Redis expired is dropped here (its key is built in
# the script: one redis-server, as every script of this store assumes).
_COUNT_ACTIVE: Final = """
local count = 0
local limit = tonumber(ARGV[2])
for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  if redis.call('EXISTS', ARGV[1] .. id) == 1 then
    count = count + 1
    if count >= limit then return count end
  else
    redis.call('SREM', KEYS[1], id)
  end
end
return count
"""

# Index entries whose task hash is gone (Redis expired it). KEYS: two sorted sets, then one task
# key per member. ARGV: the members. Checked again here, so a concurrent write is never undone.
_FORGET: Final = """
for i = 3, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 0 then
    redis.call('ZREM', KEYS[1], ARGV[i - 2])
    redis.call('ZREM', KEYS[2], ARGV[i - 2])
  end
end
return 1
"""


def _micros(value: datetime, since: datetime = _EPOCH) -> int:
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return (value - since) // _MICROSECOND


def _order_member(created_at: datetime, task_id: str) -> str:
    return f"{_micros(created_at, _YEAR_ONE):018d}|{task_id}"


def _cursor_member(cursor: str) -> str:
    """The list position an :func:`~.store.encode_cursor` cursor names."""
    return _order_member(*decode_cursor(cursor))


def _redacted(url: str) -> str:
    """The URL without its password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port is not None else ""
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}{port}"))


def _decode_event(data: object) -> StoreEvent | None:
    """A published event, or ``None`` for a message that is not one (skipped)."""
    try:
        fields: object = json.loads(data) if isinstance(data, (str, bytes)) else None
    except ValueError:
        return None
    if not isinstance(fields, dict):
        return None
    event = cast("dict[str, object]", fields)
    kind, task_id, origin = event.get("kind"), event.get("task"), event.get("origin")
    if kind not in _EVENT_KINDS or not isinstance(task_id, str) or not isinstance(origin, str):
        return None
    return StoreEvent(kind=cast("EventKind", kind), task_id=task_id, origin=origin)


async def _next_message(pubsub: PubSub) -> dict[str, object] | None:
    """The next pub/sub reply, or ``None`` when none came within :data:`EVENT_POLL_S`."""
    reply = await pubsub.get_message(timeout=EVENT_POLL_S)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    return cast("dict[str, object] | None", reply)


class RedisTaskStore:
    """Task states in Redis, shared by every replica that opens the same URL and prefix."""

    def __init__(self, url: str, *, prefix: str = "mcp-tasks:") -> None:
        if urlsplit(url).scheme not in ("redis", "rediss", "unix"):
            raise TaskStoreError(f"not a Redis URL: {_redacted(url)!r} (use redis://host:port/db)")
        self._url = url
        self._prefix = prefix
        self._client: aioredis.Redis | None = None
        self._scripts: dict[str, Any] = {}
        self._notifier = RedisNotifier(self)

    # -- keys ---------------------------------------------------------------------------------

    def _task_key(self, task_id: str) -> str:
        return f"{self._prefix}task:{task_id}"

    @property
    def _expiry_key(self) -> str:
        return f"{self._prefix}expiry"

    @property
    def _leases_key(self) -> str:
        return f"{self._prefix}leases"

    def _order_key(self, owner: object) -> str:
        if owner is EVERY_OWNER:
            return f"{self._prefix}order:*"
        if owner is None:
            return f"{self._prefix}order:-"
        if not isinstance(owner, str):
            raise TypeError(f"owner must be a str, None or EVERY_OWNER, not {owner!r}")
        return f"{self._prefix}order:={owner}"

    def _active_key(self, owner: str | None) -> str:
        return f"{self._prefix}active:-" if owner is None else f"{self._prefix}active:={owner}"

    @property
    def channel(self) -> str:
        return f"{self._prefix}events"

    # -- the TaskStore protocol ---------------------------------------------------------------

    @property
    def notifier(self) -> RedisNotifier:
        return self._notifier

    @property
    def describe(self) -> str:
        return _redacted(self._url)

    async def open(self) -> None:
        if self._client is not None:
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            raise TaskStoreError(
                f"the Redis task store ({self.describe}) needs an asyncio event loop: redis-py is "
                "asyncio-only; run the server on asyncio, or use a sqlite: or memory: store under trio"
            ) from None
        try:
            client = aioredis.from_url(  # pyright: ignore[reportUnknownMemberType]
                self._url,
                decode_responses=True,
                socket_connect_timeout=CONNECT_TIMEOUT_S,
                socket_timeout=COMMAND_TIMEOUT_S,
                retry=Retry(NoBackoff(), 0),
            )
        except ValueError as exc:
            raise TaskStoreError(f"not a usable Redis URL: {self.describe!r} ({exc})") from None
        try:
            await client.ping()  # pyright: ignore[reportUnknownMemberType]
        except (RedisError, OSError) as exc:
            await client.aclose()
            raise self._unreachable(exc) from None
        self._client = client
        register = client.register_script  # pyright: ignore[reportUnknownMemberType]
        self._scripts = {
            "create": register(_CREATE),
            "save": register(_SAVE),
            "delete": register(_DELETE),
            "forget": register(_FORGET),
            "count_active": register(_COUNT_ACTIVE),
        }

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            with suppress(RedisError, OSError):  # closing a broken pool
                await client.aclose()

    def _unreachable(self, exc: BaseException) -> TaskStoreError:
        reason = str(exc) or type(exc).__name__
        return TaskStoreError(
            f"the Redis task store {self.describe} does not answer ({reason}): "
            "start redis-server, or check the URL"
        )

    def connection(self) -> aioredis.Redis:
        """The open client (the notifier's too); :class:`TaskStoreError` when the store is not open."""
        if self._client is None:
            raise TaskStoreError(f"the Redis task store {self.describe} is not open: call open() first")
        return self._client

    async def _run(self, script: str, keys: Sequence[str], args: Sequence[str | int]) -> Any:
        self.connection()
        try:
            return await self._scripts[script](keys=list(keys), args=list(args))
        except (RedisError, OSError) as exc:
            raise await self.failed(exc) from None

    async def failed(self, exc: BaseException) -> TaskStoreError:
        """:meth:`store_error`, after dropping the pool's idle connections when Redis went away.

        They were opened to the Redis that went away: kept, each would fail its next command once
        Redis is back (redis-py notices a closed socket only when it reads from it).
        """
        client = self._client
        if client is not None and isinstance(exc, (RedisConnectionError, RedisTimeoutError, OSError)):
            with suppress(RedisError, OSError):
                await client.connection_pool.disconnect(inuse_connections=False)
        return self.store_error(exc)

    def store_error(self, exc: BaseException) -> TaskStoreError:
        """The :class:`TaskStoreError` for a redis-py error (never let one escape the store)."""
        if isinstance(exc, (RedisConnectionError, RedisTimeoutError, OSError)):
            return self._unreachable(exc)
        return TaskStoreError(f"the Redis task store {self.describe} refused a command: {exc}")

    def _decode(self, task_id: str, data: object) -> TaskState:
        try:
            return loads(cast("str", data))
        except (ValueError, TypeError) as exc:
            raise TaskStoreError(
                f"{self._task_key(task_id)} in {self.describe} is not a task state this version reads "
                f"({exc}); upgrade mcp-tasks-compat, or give this server its own prefix"
            ) from None

    def _write_args(self, state: TaskState) -> list[str | int]:
        """data, version, order member, expiry score, lease score, key TTL ms, id, terminal (see _CREATE)."""
        expiry = "" if state.expires_at is None else _micros(state.expires_at)
        leased = state.runner is not None and state.lease_until is not None and not state.is_terminal
        lease = _micros(state.lease_until) if leased and state.lease_until is not None else ""
        ttl: str | int = ""
        if state.expires_at is not None:
            left = max(state.expires_at - datetime.now(timezone.utc), timedelta(0))
            ttl = (left + KEY_TTL_MARGIN) // timedelta(milliseconds=1)
        order = _order_member(state.task.created_at, state.task_id)
        terminal = "1" if state.is_terminal else "0"
        return [dumps(state), state.version, order, expiry, lease, ttl, state.task_id, terminal]

    def _write_keys(self, state: TaskState) -> list[str]:
        return [
            self._task_key(state.task_id),
            self._expiry_key,
            self._leases_key,
            self._order_key(EVERY_OWNER),
            self._order_key(state.owner),
            self._active_key(state.owner),
        ]

    async def create(self, state: TaskState) -> None:
        reply = await self._run("create", self._write_keys(state), self._write_args(state))
        if int(reply[0]) != 1:
            current = self._decode(state.task_id, reply[1]) if len(reply) > 1 else None
            raise StoreConflict(state.task_id, current)

    async def get(self, task_id: str) -> TaskState | None:
        try:
            data: object = await self.connection().hget(self._task_key(task_id), "data")  # pyright: ignore[reportUnknownMemberType]
        except (RedisError, OSError) as exc:
            raise await self.failed(exc) from None
        return None if data is None else self._decode(task_id, data)

    async def save(self, state: TaskState) -> TaskState:
        saved = state.evolve(version=state.version + 1)
        reply = await self._run("save", self._write_keys(saved), [state.version, *self._write_args(saved)])
        if int(reply[0]) != 1:
            current = self._decode(state.task_id, reply[1]) if len(reply) > 1 else None
            raise StoreConflict(state.task_id, current)
        return saved

    async def delete(self, task_id: str) -> None:
        keys = [self._task_key(task_id), self._expiry_key, self._leases_key, self._order_key(EVERY_OWNER)]
        await self._run("delete", keys, [task_id])

    async def _load(self, task_ids: Sequence[str]) -> list[TaskState | None]:
        """The states of ``task_ids`` (``None`` where the task is gone), in one round trip."""
        if not task_ids:
            return []
        try:
            async with self.connection().pipeline(transaction=False) as pipe:
                for task_id in task_ids:
                    pipe.hget(self._task_key(task_id), "data")  # pyright: ignore[reportUnknownMemberType]
                rows = cast("list[object]", await pipe.execute())
        except (RedisError, OSError) as exc:
            raise await self.failed(exc) from None
        return [
            None if row is None else self._decode(tid, row) for tid, row in zip(task_ids, rows, strict=True)
        ]

    async def _forget(self, zsets: tuple[str, str], members: Sequence[str], task_ids: Sequence[str]) -> None:
        if members:
            await self._run("forget", [*zsets, *(self._task_key(t) for t in task_ids)], list(members))

    async def _by_score(self, zset: str, now: datetime, limit: int) -> list[TaskState]:
        """States in ``zset`` scored at or before ``now``, lowest first; dangling entries dropped."""
        found: list[TaskState] = []
        while len(found) < limit:
            wanted = limit - len(found)
            try:
                ids = cast(
                    "list[str]",
                    await self.connection().zrangebyscore(  # pyright: ignore[reportUnknownMemberType]
                        zset, "-inf", _micros(now), start=len(found), num=wanted
                    ),
                )
            except (RedisError, OSError) as exc:
                raise await self.failed(exc) from None
            states = await self._load(ids)
            gone = [task_id for task_id, state in zip(ids, states, strict=True) if state is None]
            await self._forget((self._expiry_key, self._leases_key), gone, gone)
            found.extend(state for state in states if state is not None)
            if len(ids) < wanted or not gone:
                break
        return found

    async def count_active(self, owner: str | None, *, at_most: int) -> int:
        reply = await self._run("count_active", [self._active_key(owner)], [self._task_key(""), at_most])
        return int(reply)

    async def due_for_expiry(self, now: datetime, *, limit: int = 100) -> list[TaskState]:
        due = await self._by_score(self._expiry_key, now, limit)
        return [state for state in due if state.expires_at is not None and state.expires_at <= now]

    async def next_expiry(self) -> datetime | None:
        while True:
            try:
                ids = cast("list[str]", await self.connection().zrange(self._expiry_key, 0, 0))  # pyright: ignore[reportUnknownMemberType]
            except (RedisError, OSError) as exc:
                raise await self.failed(exc) from None
            if not ids:
                return None
            (state,) = await self._load(ids)
            if state is not None and state.expires_at is not None:
                return state.expires_at
            await self._forget((self._expiry_key, self._leases_key), ids, ids)

    async def lease_expired(self, now: datetime, *, limit: int = 100) -> list[TaskState]:
        held = await self._by_score(self._leases_key, now, limit)
        return [
            state
            for state in held
            if not state.is_terminal
            and state.runner is not None
            and state.lease_until is not None
            and state.lease_until <= now
        ]

    async def list_tasks(
        self, *, owner: str | EveryOwner | None = EVERY_OWNER, cursor: str | None = None, limit: int = 100
    ) -> tuple[list[TaskState], str | None]:
        if limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        zset = self._order_key(owner)
        start = "-" if cursor is None else f"({_cursor_member(cursor)}"
        page: list[TaskState] = []
        while True:
            wanted = limit + 1 - len(page)  # one more than the page: is there a next one?
            try:
                members = cast(
                    "list[str]",
                    await self.connection().zrangebylex(zset, start, "+", start=0, num=wanted),  # pyright: ignore[reportUnknownMemberType]
                )
            except (RedisError, OSError) as exc:
                raise await self.failed(exc) from None
            ids = [member.partition("|")[2] for member in members]
            states = await self._load(ids)
            gone = [
                (member, task_id)
                for member, task_id, state in zip(members, ids, states, strict=True)
                if state is None
            ]
            await self._forget((zset, zset), [m for m, _ in gone], [t for _, t in gone])
            for state in states:
                if state is None:
                    continue
                if len(page) == limit:
                    return page, encode_cursor(page[-1])
                page.append(state)
            if len(members) < wanted:
                return page, None
            start = f"({members[-1]}"


class RedisNotifier:
    """:class:`~.store.Notifier` on Redis pub/sub, one channel per prefix.

    Pub/sub is enough because an event is only a hint ("re-read this task now"): the state in the
    store is the truth, and it is written before the event is published. Redis delivers to a
    connected subscriber in order and drops messages only for one that is not connected; then the
    iterator raises :class:`TaskStoreError`, and the subscriber subscribes again and re-reads what
    it watches, after :meth:`subscribe` has returned (the subscription is confirmed by then). So a
    lost message costs latency, never a task or an answer.
    """

    def __init__(self, store: RedisTaskStore) -> None:
        self._store = store

    async def publish(self, event: StoreEvent) -> None:
        message = json.dumps({"kind": event.kind, "task": event.task_id, "origin": event.origin})
        try:
            await self._store.connection().publish(self._store.channel, message)  # pyright: ignore[reportUnknownMemberType]
        except (RedisError, OSError) as exc:
            raise await self._store.failed(exc) from None

    @asynccontextmanager
    async def subscribe(self) -> AsyncGenerator[AsyncIterator[StoreEvent]]:
        store = self._store
        pubsub: PubSub = store.connection().pubsub()  # pyright: ignore[reportUnknownMemberType]
        try:
            try:
                await pubsub.subscribe(store.channel)  # pyright: ignore[reportUnknownMemberType]
                with anyio.fail_after(COMMAND_TIMEOUT_S):
                    while True:  # events published once this returns are delivered
                        reply = await _next_message(pubsub)
                        if reply is not None and reply.get("type") == "subscribe":
                            break
            except (RedisError, OSError, TimeoutError) as exc:
                raise await store.failed(exc) from None
            yield self._events(pubsub)
        finally:
            with suppress(RedisError, OSError):  # the connection may be gone already
                await pubsub.aclose()

    async def _events(self, pubsub: PubSub) -> AsyncIterator[StoreEvent]:
        while True:
            try:
                message = await _next_message(pubsub)
            except (RedisError, OSError) as exc:
                raise await self._store.failed(exc) from None
            if message is not None and message.get("type") == "message":
                event = _decode_event(message.get("data"))
                if event is not None:
                    yield event
