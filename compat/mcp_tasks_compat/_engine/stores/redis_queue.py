"""The Redis store's workers' queue: a stream (``P queue``) read by one consumer group.

Entries are added by the store's own create and save scripts (:mod:`.redis_scripts`), in the same
step as the write that makes a task queued. Workers read in the consumer group ``workers``
(``XREADGROUP ... >``: each entry handed to one of them); an entry handed to a worker that died
before acking it is taken over with ``XAUTOCLAIM`` once it idled past the redelivery bound; an
acked entry is deleted (``XACK`` + ``XDEL``), so the stream holds only what still waits.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, cast

from redis.exceptions import ResponseError

from .queue import QUEUE_GROUP, QueueEntry
from .redis_link import RedisLink

__all__ = ["RedisTaskQueue"]


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
        async with self._link.talking() as client:
            reply: list[Any] = await client.xautoclaim(  # pyright: ignore[reportUnknownMemberType]
                self._stream, QUEUE_GROUP, consumer, int(redeliver_after_s * 1000), "0-0", count=count
            )
            raws = list(cast("list[object]", reply[1])) if len(reply) > 1 else []
            if not raws:
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
                raws = [raw for _name, entries in streams or [] for raw in entries]
        found = [_entry(raw) for raw in raws]
        pairs = zip(raws, found, strict=True)
        malformed = [cast("tuple[str, object]", raw)[0] for raw, entry in pairs if entry is None]
        if malformed:  # not ours (written by hand): dropped, never handed again
            async with self._link.talking() as client:
                await client.xack(self._stream, QUEUE_GROUP, *malformed)  # pyright: ignore[reportUnknownMemberType]
                await client.xdel(self._stream, *malformed)  # pyright: ignore[reportUnknownMemberType]
        return [entry for entry in found if entry is not None]

    async def ack(self, entry: QueueEntry) -> None:
        async with self._link.talking() as client, client.pipeline(transaction=True) as pipe:
            pipe.xack(self._stream, QUEUE_GROUP, entry.entry_id)  # pyright: ignore[reportUnknownMemberType]
            pipe.xdel(self._stream, entry.entry_id)  # pyright: ignore[reportUnknownMemberType]
            await pipe.execute()

    async def depth(self) -> int:
        async with self._link.talking() as client:
            return int(await client.xlen(self._stream))  # pyright: ignore[reportUnknownMemberType]
