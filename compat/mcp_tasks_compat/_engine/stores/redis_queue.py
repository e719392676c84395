"""The Redis store's workers' queue: a stream (``P queue``) read by one consumer group.

Entries are added by the store's own create and save scripts (:mod:`.redis_scripts`), in the same
step as the write that makes a task queued. Workers read in the consumer group ``workers``
(``XREADGROUP ... >``: each entry handed to one of them); an entry handed to a worker that died
before acking it is taken over with ``XAUTOCLAIM`` once it idled past the redelivery bound; an
acked entry is deleted (``XACK`` + ``XDEL``), so the stream holds only what still waits.

A Redis that comes back empty (no persistence, ``FLUSHALL``, a failover to an empty instance) has
lost the stream and its group with everything else: the first read then hears ``NOGROUP`` (or,
blocked when the stream went, ``UNBLOCKED``), and the group is made again at once, in one log
line, so the tasks created afterwards are taken as before by the same workers.
"""

from __future__ import annotations

import logging
from datetime import datetime, timezone
from typing import Any, Final, cast

from redis.exceptions import ResponseError

from .queue import QUEUE_GROUP, QueueEntry
from .redis_link import RedisLink

__all__ = ["RedisTaskQueue"]

logger = logging.getLogger("mcp_tasks_compat.engine")

_GROUP_GONE: Final = ("NOGROUP", "UNBLOCKED")
"""How Redis answers a group read once the stream or its group is gone: ``NOGROUP`` to a new
read, ``UNBLOCKED the stream key no longer exists`` to a read blocked when it went."""


def _entry(raw: object) -> QueueEntry | None:
    """``(id, {field: value})`` of a stream entry as a :class:`QueueEntry` (``None``: malformed)."""
    entry_id, fields = cast("tuple[str, dict[str, str] | None]", raw)
    if not fields or "task" not in fields:
        return None
    try:
        claim = int(fields.get("claim", "0"))
    except ValueError:
        return None
    millis = int(entry_id.partition("-")[0])
    queued_at = datetime.fromtimestamp(millis / 1000, timezone.utc)
    return QueueEntry(entry_id, fields["task"], claim, queued_at)


class RedisTaskQueue:
    """``XREADGROUP``/``XAUTOCLAIM``/``XACK`` on the store's stream, in the group ``workers``."""

    def __init__(self, link: RedisLink, stream: str) -> None:
        self._link = link
        self._stream = stream
        self._group_made = False

    async def _make_group(self) -> None:
        """The consumer group, reading from the stream's start (entries queued before any worker
        ran are handed too); made once, by whichever worker comes first."""
        if self._group_made:
            return
        async with self._link.talking() as client:
            try:
                await client.xgroup_create(self._stream, QUEUE_GROUP, id="0", mkstream=True)  # pyright: ignore[reportUnknownMemberType]
            except ResponseError as exc:
                if "BUSYGROUP" not in str(exc):
                    raise
        self._group_made = True

    async def take(
        self, consumer: str, count: int, *, wait_s: float, redeliver_after_s: float
    ) -> list[QueueEntry]:
        await self._make_group()
        raws = await self._read(consumer, count, wait_s=wait_s, redeliver_after_s=redeliver_after_s)
        if raws is None:  # the next take (at once) reads the group made again
            await self._remake_group()
            return []
        found = [_entry(raw) for raw in raws]
        pairs = zip(raws, found, strict=True)
        malformed = [cast("tuple[str, object]", raw)[0] for raw, entry in pairs if entry is None]
        if malformed:  # not ours (written by hand): dropped, never handed again
            async with self._link.talking() as client:
                await client.xack(self._stream, QUEUE_GROUP, *malformed)  # pyright: ignore[reportUnknownMemberType]
                await client.xdel(self._stream, *malformed)  # pyright: ignore[reportUnknownMemberType]
        return [entry for entry in found if entry is not None]

    async def _read(
        self, consumer: str, count: int, *, wait_s: float, redeliver_after_s: float
    ) -> list[object] | None:
        """The raw entries handed to ``consumer``: an idle one of a dead worker first, else new
        ones (waiting up to ``wait_s``); ``None`` when the group is gone (Redis lost its data)."""
        async with self._link.talking() as client:
            try:
                reply: list[Any] = await client.xautoclaim(  # pyright: ignore[reportUnknownMemberType]
                    self._stream, QUEUE_GROUP, consumer, int(redeliver_after_s * 1000), "0-0", count=count
                )
                raws = list(cast("list[object]", reply[1])) if len(reply) > 1 else []
                if raws:
                    return raws
                streams = cast(
                    "list[Any] | None",
                    await client.xreadgroup(  # pyright: ignore[reportUnknownMemberType]
                        QUEUE_GROUP,
                        consumer,
                        {self._stream: ">"},
                        count=count,
                        block=max(1, int(wait_s * 1000)),
                    ),
                )
            except ResponseError as exc:
                if str(exc).startswith(_GROUP_GONE):
                    return None
                raise
        return [raw for _name, entries in streams or [] for raw in entries]

    async def _remake_group(self) -> None:
        """The group again, after Redis lost it with the stream: said once per loss (each worker
        that finds it gone says so; the first makes it, the others find it made)."""
        self._group_made = False
        await self._make_group()
        logger.warning(
            "task store %s: the workers' queue (stream %s) had lost its consumer group: Redis came back"
            " empty or was flushed; made it again, taking tasks as before",
            self._link.describe,
            self._stream,
        )

    async def ack(self, entry: QueueEntry) -> None:
        async with self._link.talking() as client, client.pipeline(transaction=True) as pipe:
            pipe.xack(self._stream, QUEUE_GROUP, entry.entry_id)  # pyright: ignore[reportUnknownMemberType]
            pipe.xdel(self._stream, entry.entry_id)  # pyright: ignore[reportUnknownMemberType]
            await pipe.execute()

    async def depth(self) -> int:
        async with self._link.talking() as client:
            return int(await client.xlen(self._stream))  # pyright: ignore[reportUnknownMemberType]
