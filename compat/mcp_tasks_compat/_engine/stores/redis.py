"""The Redis task store: several replicas share their tasks through one redis-server.

Data layout (``P`` is the prefix, ``mcp-tasks:`` by default):

* ``P task:<id>``: a hash. ``data`` is the state's JSON (:func:`~.task_state.dumps`), ``version``
  its compare-and-set version, ``claim`` the fencing token of its run (checked by a run's
  writes inside the save script), ``order`` its member in the list indexes, ``owner`` the key of its
  owner's list index. A task with ``expires_at`` expires as a key :data:`KEY_TTL_MARGIN` after
  it (judged inside the script on ``TIME``), so Redis drops it even if no replica is left to
  sweep it: deadlines and leases are on the redis-server's clock (:meth:`RedisTaskStore.now`,
  ``TIME``), which every replica reads, so the replicas' own clocks need not agree.
* ``P expiry``: a sorted set of task ids scored by ``expires_at`` (microseconds since the Unix
  epoch, exact for years 1685 to 2255).
* ``P leases``: a sorted set of the non-terminal tasks that have a runner, scored by
  ``lease_until``.
* ``P order:*`` (every owner), ``P order:-`` (unowned) and ``P order:=<owner>``: the list order,
  sorted sets whose members are ``<created_at in microseconds since year 1, 18 digits>|<id>``, all
  scored 0 so they sort lexicographically: creation order, ties by id, the in-memory store's order;
  a cursor is a position in it, valid after the task it names is deleted.
* ``P active:-`` (unowned) and ``P active:=<owner>``: sets of the owner's tasks that are not
  terminal, for the per-owner limit (counted inside the create script, and by
  :meth:`RedisTaskStore.count_active`); a member whose hash Redis expired is dropped when counted.
* ``P events``: the pub/sub channel of :class:`~.redis_link.RedisNotifier`.
* ``P queue``: the workers' queue, a stream read by the consumer group ``workers``
  (:mod:`.redis_queue`); the hash field ``queued`` says the task has an entry waiting there.

Every write is one Lua script (:mod:`.redis_scripts`: create-if-absent, compare-and-set save,
delete), so the hash and its index entries change together; a save also publishes its
:class:`~.contract.StoreEvent` (once the engine named its origin), so a change is one round
trip, and concurrent callers' creates, saves, reads and counts share round trips
(:meth:`.redis_link.RedisLink.execute`). An index entry whose hash Redis expired is dropped when a
read meets it. The client, its errors and pub/sub are in :mod:`.redis_link`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Final, cast

from ...errors import TaskStoreError
from .contract import (
    EVERY_OWNER,
    ActiveLimitReached,
    EveryOwner,
    StoreConflict,
    StoreEvent,
    decode_cursor,
    encode_cursor,
)
from .redis_link import RedisLink, RedisNotifier, encode_event
from .redis_queue import RedisTaskQueue
from .redis_scripts import KEY_TTL_MARGIN_MS
from .task_state import TaskState, WrittenStates, loads

if TYPE_CHECKING:
    from redis import asyncio as aioredis

__all__ = ["KEY_TTL_MARGIN", "RedisKeys", "RedisNotifier", "RedisTaskStore"]

KEY_TTL_MARGIN: Final = timedelta(milliseconds=KEY_TTL_MARGIN_MS)
"""How long Redis keeps a task past its ``expires_at``: the replicas' sweeper deletes it first."""

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=timezone.utc)
_YEAR_ONE: Final = datetime(1, 1, 1, tzinfo=timezone.utc)
_MICROSECOND: Final = timedelta(microseconds=1)


def micros(value: datetime, since: datetime = _EPOCH) -> int:
    """A score: microseconds from ``since`` (the Unix epoch) to ``value``."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return (value - since) // _MICROSECOND


def _server_time(reply: object) -> datetime:
    """``TIME``'s reply (seconds, microseconds) as a UTC instant."""
    seconds, micro = cast("list[str]", reply)
    return datetime.fromtimestamp(int(seconds), timezone.utc) + timedelta(microseconds=int(micro))


def order_member(created_at: datetime, task_id: str) -> str:
    """A task's member in the list indexes: sorts as creation order, ties by id."""
    return f"{micros(created_at, _YEAR_ONE):018d}|{task_id}"


def cursor_member(cursor: str) -> str:
    """The list position an :func:`~.contract.encode_cursor` cursor names."""
    return order_member(*decode_cursor(cursor))


def write_args(state: TaskState, written: WrittenStates) -> list[str | int]:
    """The first ``ARGV`` of :data:`~.redis_scripts.CREATE`: data, version, order member, expiry
    score, lease score, key expiry (ms since the epoch), id, terminal."""
    expiry = "" if state.expires_at is None else micros(state.expires_at)
    leased = state.runner is not None and state.lease_until is not None and not state.is_terminal
    lease = micros(state.lease_until) if leased and state.lease_until is not None else ""
    ttl: str | int = ""
    if state.expires_at is not None:  # on the store's clock, as every deadline
        ttl = micros(state.expires_at) // 1000
    order = order_member(state.task.created_at, state.task_id)
    terminal = "1" if state.is_terminal else "0"
    return [written.dumps(state), state.version, order, expiry, lease, ttl, state.task_id, terminal]


@dataclass(frozen=True)
class RedisKeys:
    """The names of a store's keys under its prefix (the layout in the module docstring)."""

    prefix: str

    def task(self, task_id: str) -> str:
        return f"{self.prefix}task:{task_id}"

    @property
    def expiry(self) -> str:
        return f"{self.prefix}expiry"

    @property
    def leases(self) -> str:
        return f"{self.prefix}leases"

    @property
    def channel(self) -> str:
        return f"{self.prefix}events"

    @property
    def queue(self) -> str:
        return f"{self.prefix}queue"

    def order(self, owner: object) -> str:
        if owner is EVERY_OWNER:
            return f"{self.prefix}order:*"
        if owner is None:
            return f"{self.prefix}order:-"
        if not isinstance(owner, str):
            raise TypeError(f"owner must be a str, None or EVERY_OWNER, not {owner!r}")
        return f"{self.prefix}order:={owner}"

    def active(self, owner: str | None) -> str:
        return f"{self.prefix}active:-" if owner is None else f"{self.prefix}active:={owner}"

    def of_write(self, state: TaskState) -> list[str]:
        """The ``KEYS`` of :data:`~.redis_scripts.CREATE` and :data:`~.redis_scripts.SAVE`."""
        return [
            self.task(state.task_id),
            self.expiry,
            self.leases,
            self.order(EVERY_OWNER),
            self.order(state.owner),
            self.active(state.owner),
        ]


class RedisTaskStore:
    """Task states in Redis, shared by every replica that opens the same URL and prefix."""

    def __init__(self, url: str, *, prefix: str = "mcp-tasks:") -> None:
        self._link = RedisLink(url)
        self._keys = RedisKeys(prefix)
        self._notifier = RedisNotifier(self._link, self._keys.channel)
        self._written = WrittenStates()  # what a read of this store's own last write returns
        self.queue = RedisTaskQueue(self._link, self._keys.queue)
        """The workers' queue (:mod:`.redis_queue`), filled by this store's own writes."""

    @property
    def channel(self) -> str:
        """The pub/sub channel of this store's prefix."""
        return self._keys.channel

    @property
    def shared(self) -> bool:
        """Every replica that opens the same URL and prefix uses it."""
        return True

    @property
    def notifier(self) -> RedisNotifier:
        return self._notifier

    @property
    def describe(self) -> str:
        return self._link.describe

    async def open(self) -> None:
        await self._link.open()

    async def close(self) -> None:
        await self._link.close()

    def connection(self) -> aioredis.Redis:
        """The open client (the notifier's too); :class:`TaskStoreError` when the store is not open."""
        return self._link.client()

    def _decode(self, task_id: str, data: object) -> TaskState:
        if (known := self._written.recall(data)) is not None:
            return known
        try:
            return loads(cast("str", data))
        except (ValueError, TypeError) as exc:
            raise TaskStoreError(
                f"{self._keys.task(task_id)} in {self.describe} is not a task state this version reads "
                f"({exc}); upgrade mcp-tasks-compat, or give this server its own prefix"
            ) from None

    async def create(self, state: TaskState, *, active_limit: int | None = None) -> None:
        limit = "" if active_limit is None else active_limit
        queue = self._keys.queue if state.queued else ""
        argv = [*write_args(state, self._written), limit, self._keys.task(""), state.claim, queue]
        reply = await self._link.run("create", self._keys.of_write(state), argv)
        outcome = int(reply[0])
        if outcome == 2:
            raise ActiveLimitReached(int(reply[1]))
        if outcome != 1:
            current = self._decode(state.task_id, reply[1]) if len(reply) > 1 else None
            raise StoreConflict(state.task_id, current)

    async def get(self, task_id: str) -> TaskState | None:
        data: object = await self._link.execute("HGET", self._keys.task(task_id), "data")
        return None if data is None else self._decode(task_id, data)

    async def save(self, state: TaskState, *, fence: int | None = None) -> TaskState:
        saved = state.evolve(version=state.version + 1)
        origin = self._notifier.saves_origin
        event = "" if origin is None else encode_event(StoreEvent(state.task_id, origin))
        checked = "" if fence is None else fence
        reply = await self._link.run(
            "save",
            self._keys.of_write(saved),
            [
                state.version,
                *write_args(saved, self._written),
                self._keys.channel,
                event,
                checked,
                saved.claim,
                self._keys.queue if saved.queued else "",
            ],
        )
        if int(reply[0]) != 1:
            current = self._decode(state.task_id, reply[1]) if len(reply) > 1 else None
            raise StoreConflict(state.task_id, current)
        return saved

    async def now(self) -> datetime:
        """The redis-server's clock (``TIME``): the one every replica judges leases on."""
        return _server_time(await self._link.execute("TIME"))

    async def delete(self, task_id: str) -> None:
        keys = [self._keys.task(task_id), self._keys.expiry, self._keys.leases, self._keys.order(EVERY_OWNER)]
        await self._link.run("delete", keys, [task_id])

    async def _load(self, task_ids: Sequence[str]) -> list[TaskState | None]:
        """The states of ``task_ids`` (``None`` where the task is gone), in one round trip."""
        if not task_ids:
            return []
        async with self._link.talking() as client, client.pipeline(transaction=False) as pipe:
            for task_id in task_ids:
                pipe.hget(self._keys.task(task_id), "data")  # pyright: ignore[reportUnknownMemberType]
            rows = cast("list[object]", await pipe.execute())
        return [
            None if row is None else self._decode(tid, row) for tid, row in zip(task_ids, rows, strict=True)
        ]

    async def _forget(self, zsets: tuple[str, str], members: Sequence[str], task_ids: Sequence[str]) -> None:
        if members:
            await self._link.run("forget", [*zsets, *(self._keys.task(t) for t in task_ids)], list(members))

    async def _by_score(self, zset: str, now: datetime, limit: int) -> list[TaskState]:
        """States in ``zset`` scored at or before ``now``, lowest first; dangling entries dropped."""
        found: list[TaskState] = []
        while len(found) < limit:
            wanted = limit - len(found)
            async with self._link.talking() as client:
                ids = cast(
                    "list[str]",
                    await client.zrangebyscore(  # pyright: ignore[reportUnknownMemberType]
                        zset, "-inf", micros(now), start=len(found), num=wanted
                    ),
                )
            states = await self._load(ids)
            gone = [task_id for task_id, state in zip(ids, states, strict=True) if state is None]
            await self._forget((self._keys.expiry, self._keys.leases), gone, gone)
            found.extend(state for state in states if state is not None)
            if len(ids) < wanted or not gone:
                break
        return found

    async def count_active(self, owner: str | None, *, at_most: int) -> int:
        reply = await self._link.run(
            "count_active", [self._keys.active(owner)], [self._keys.task(""), at_most]
        )
        return int(reply)

    async def due_for_expiry(self, now: datetime, *, limit: int = 100) -> list[TaskState]:
        due = await self._by_score(self._keys.expiry, now, limit)
        return [state for state in due if state.expires_at is not None and state.expires_at <= now]

    async def next_expiry(self) -> datetime | None:
        while True:
            async with self._link.talking() as client:
                ids = cast("list[str]", await client.zrange(self._keys.expiry, 0, 0))  # pyright: ignore[reportUnknownMemberType]
            if not ids:
                return None
            (state,) = await self._load(ids)
            if state is not None and state.expires_at is not None:
                return state.expires_at
            await self._forget((self._keys.expiry, self._keys.leases), ids, ids)

    async def lease_expired(self, now: datetime, *, limit: int = 100) -> list[TaskState]:
        held = await self._by_score(self._keys.leases, now, limit)
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
        zset = self._keys.order(owner)
        start = "-" if cursor is None else f"({cursor_member(cursor)}"
        page: list[TaskState] = []
        while True:
            wanted = limit + 1 - len(page)  # one more than the page: is there a next one?
            async with self._link.talking() as client:
                members = cast(
                    "list[str]",
                    await client.zrangebylex(zset, start, "+", start=0, num=wanted),  # pyright: ignore[reportUnknownMemberType]
                )
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
