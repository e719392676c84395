"""How the Redis store talks to redis-server: one client, its errors, and pub/sub between replicas.

redis-py rather than valkey-py: valkey-py is a fork of it with the same API, and both talk to Redis
and Valkey servers alike; redis-py is the maintained upstream with the longer record (5.0.1, our
floor, is from 2023). Both are asyncio-only, so :meth:`RedisLink.open` refuses trio with a
:class:`TaskStoreError` (use ``sqlite:`` or ``memory:`` there). The loop is found with
``asyncio.get_running_loop()`` rather than sniffio, which anyio no longer depends on.

redis-py's own retries are off: a write whose answer was lost must not run twice (a retried create
would conflict with itself); after a connection error the pool's idle connections are dropped, so
the calls after Redis is back get fresh ones. No redis-py error leaves this module: each becomes a
:class:`TaskStoreError` that names the URL (without its password) and the fix.

The hot path's commands (a task's create, save, read and count: :meth:`RedisLink.execute`) share
round trips, as SQLite's group commit shares an fsync: while one round trip is out, the commands
issued meanwhile wait for it, then go out together on one pooled connection, as a pipeline (not a
transaction). Each is still one script or one read, atomic on its own and answered to its own
caller, so a caller sees nothing change but the cost: the per-command work in this process (a
pooled connection taken and given back, a socket write, the wake-ups) is paid once per batch. A
caller alone goes at once; batches grow with the load. The rest (sweeps, lists) go through
redis-py's client as they are.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import inspect
import json
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager, suppress
from typing import Any, Final, cast
from urllib.parse import urlsplit

import anyio

from ...errors import TaskStoreError
from .contract import SavesAnnounced, StoreEvent
from .echo import redacted, shown_url
from .redis_scripts import SCRIPTS

try:
    from redis import asyncio as aioredis
    from redis.asyncio.client import PubSub
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import NoScriptError, ReadOnlyError, RedisError, ResponseError
    from redis.exceptions import TimeoutError as RedisTimeoutError
except ImportError as missing:  # pragma: no cover - the test group installs redis
    raise TaskStoreError(
        "the Redis task store needs redis-py: pip install 'mcp-tasks-compat[redis]'"
    ) from missing

from .redis_checks import check_server

__all__ = [
    "BATCH_LIMIT",
    "COMMAND_TIMEOUT_S",
    "CONNECT_TIMEOUT_S",
    "EVENT_POLL_S",
    "RedisLink",
    "RedisNotifier",
    "decode_event",
    "encode_event",
    "redacted",
]

CONNECT_TIMEOUT_S: Final = 5.0
COMMAND_TIMEOUT_S: Final = 10.0
EVENT_POLL_S: Final = 1.0  # one pub/sub read; a message arriving meanwhile returns at once
BATCH_LIMIT: Final = 512
"""The most commands one round trip carries (the rest go in the next), so no caller waits on an
unbounded pipeline."""

_CONNECTION_NEEDS_NO_NAME: Final = (
    inspect.signature(aioredis.ConnectionPool.get_connection).parameters["command_name"].default
    is not inspect.Parameter.empty
)
"""redis-py 5.3 made ``get_connection``'s command name optional, and deprecated passing it."""


def _hiredis_packer() -> Callable[[tuple[str | int, ...]], bytes] | None:
    """hiredis's ``pack_command`` (the ``redis`` extra installs hiredis; 3.0 added it), else ``None``."""
    try:
        module = importlib.import_module("hiredis")
    except ImportError:
        return None
    return cast("Callable[[tuple[str | int, ...]], bytes] | None", getattr(module, "pack_command", None))


_HIREDIS_PACK: Final = _hiredis_packer()

_Queued = tuple[bytes, "asyncio.Future[Any]"]
"""A command waiting to be sent (in the Redis protocol), and where its caller waits for the reply."""

_WIRE_KIND: Final = "changed"
"""The ``kind`` every published event carries, for replicas of an earlier release.

Those read only messages whose ``kind`` is ``changed``, ``cancel`` or ``input``, and re-read the
task whatever the kind, as this release does; so during a rolling upgrade both read each other's
events. This release ignores ``kind`` when it reads one."""


def encode_event(event: StoreEvent) -> str:
    """The pub/sub message of ``event`` (JSON, with the ``kind`` an older replica wants)."""
    return json.dumps({"kind": _WIRE_KIND, "task": event.task_id, "origin": event.origin})


def decode_event(data: object) -> StoreEvent | None:
    """A published event, or ``None`` for a message that is not one (skipped); ``kind`` is not read."""
    try:
        fields: object = json.loads(data) if isinstance(data, (str, bytes)) else None
    except ValueError:
        return None
    if not isinstance(fields, dict):
        return None
    event = cast("dict[str, object]", fields)
    task_id, origin = event.get("task"), event.get("origin")
    if not isinstance(task_id, str) or not isinstance(origin, str):
        return None
    return StoreEvent(task_id=task_id, origin=origin)


class RedisLink:
    """The client of one Redis URL, shared by a store and its notifier; opened once, closed once."""

    def __init__(self, url: str) -> None:
        if urlsplit(url).scheme not in ("redis", "rediss", "unix"):
            raise TaskStoreError(f"not a Redis URL: {redacted(url)!r} (use redis://host:port/db)")
        self._url = url
        self._client: aioredis.Redis | None = None
        self._shas = {name: hashlib.sha1(script.encode()).hexdigest() for name, script in SCRIPTS.items()}
        self._queued: list[_Queued] = []  # commands waiting for the round trip out to end
        self._sending = False  # a round trip is out
        self._batches: set[asyncio.Task[None]] = set()

    @property
    def describe(self) -> str:
        return shown_url(self._url)

    async def open(self) -> None:
        """Connect, check that Redis answers and what it is (:func:`.redis_checks.check_server`); idempotent.

        The scripts (:data:`~.redis_scripts.SCRIPTS`) are loaded when Redis first says it lacks them.
        """
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
            try:
                await client.ping()  # pyright: ignore[reportUnknownMemberType]
                await check_server(client, self.describe)
            except (RedisError, OSError) as exc:
                raise self._unreachable(exc) from None
        except BaseException:
            await client.aclose()
            raise
        self._client = client

    async def close(self) -> None:
        client, self._client = self._client, None
        queued, self._queued = self._queued, []
        _reply_each(queued, [self._closed()] * len(queued))
        for batch in list(self._batches):  # their callers are told the store closed
            batch.cancel()
        for batch in list(self._batches):
            with suppress(asyncio.CancelledError):
                await batch
        if client is not None:
            with suppress(RedisError, OSError):  # closing a broken pool
                await client.aclose()

    def client(self) -> aioredis.Redis:
        """The open client; :class:`TaskStoreError` when the link is not open."""
        if self._client is None:
            raise TaskStoreError(f"the Redis task store {self.describe} is not open: call open() first")
        return self._client

    @asynccontextmanager
    async def talking(self) -> AsyncGenerator[aioredis.Redis]:
        """``async with link.talking() as client:`` commands whose redis-py errors become a
        :class:`TaskStoreError` (see :meth:`failed`)."""
        client = self.client()
        try:
            yield client
        except (RedisError, OSError) as exc:
            raise await self.failed(exc) from None

    async def run(self, script: str, keys: Sequence[str], args: Sequence[str | int]) -> Any:
        """Run the script ``script`` (a name in :data:`~.redis_scripts.SCRIPTS`), by its SHA1."""
        return await self.execute("EVALSHA", self._shas[script], len(keys), *keys, *args)

    async def execute(self, *command: str | int) -> Any:
        """One command's reply; a redis-py error becomes a :class:`TaskStoreError`.

        With nothing out it goes at once. While a round trip is out, it waits, and goes out with
        every other command that waited meanwhile, in one round trip (:meth:`_send_batch`), so
        concurrent callers share round trips. A caller cancelled while it waits stops waiting; its
        command may still run, as a command cancelled mid-flight may.
        """
        client = self.client()
        request = packed(command)  # here, so a command that cannot be sent fails its caller only
        if self._sending:
            reply: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            self._queued.append((request, reply))
            try:
                return await reply
            except (RedisError, OSError) as exc:  # the batch dropped the idle connections once
                raise self.store_error(exc) from None
        self._sending = True
        try:
            (answer,) = await self._exchange(client, [request])
        except (RedisError, OSError) as exc:
            raise await self.failed(exc) from None
        finally:
            self._sending = False
            self._send_queued(client)
        if isinstance(answer, RedisError):
            raise self.store_error(answer)
        return answer

    def _send_queued(self, client: aioredis.Redis) -> None:
        """Send what waited, as one batch, unless a round trip is still out (its end sends it)."""
        if not self._queued or self._sending:
            return
        if self._client is not client:  # closed meanwhile
            queued, self._queued = self._queued, []
            _reply_each(queued, [self._closed()] * len(queued))
            return
        batch, self._queued = self._queued[:BATCH_LIMIT], self._queued[BATCH_LIMIT:]
        self._sending = True
        sending = asyncio.get_running_loop().create_task(self._send_batch(client, batch))
        self._batches.add(sending)
        sending.add_done_callback(self._batches.discard)

    async def _send_batch(self, client: aioredis.Redis, batch: list[_Queued]) -> None:
        """Send ``batch`` in one round trip, and answer each caller (its reply or its error)."""
        answers: list[Any] | None = None  # None: close() cancelled the round trip
        try:
            answers = await self._exchange(client, [request for request, _ in batch])
        except (RedisError, OSError) as exc:
            answers = [exc] * len(batch)
            await self.failed(exc)
        except Exception as exc:  # not redis-py's: each caller sees it, as if it had sent alone
            answers = [exc] * len(batch)
        finally:
            self._sending = False
            _reply_each(batch, [self._closed()] * len(batch) if answers is None else answers)
            self._send_queued(client)

    async def _exchange(self, client: aioredis.Redis, requests: list[bytes]) -> list[Any]:
        """Each request's reply, or its ``ResponseError``: one round trip, two when Redis had lost
        the scripts (restarted, flushed); a script not run for that is loaded and run then."""
        replies = await _round_trip(client, requests)
        missing = [index for index, reply in enumerate(replies) if isinstance(reply, NoScriptError)]
        if missing:
            for script in SCRIPTS.values():
                await client.script_load(script)  # pyright: ignore[reportUnknownMemberType]
            again = await _round_trip(client, [requests[index] for index in missing])
            for index, reply in zip(missing, again, strict=True):
                replies[index] = reply
        return replies

    def _closed(self) -> TaskStoreError:
        """What a caller whose command was still waiting hears when the store is closed."""
        return TaskStoreError(f"the Redis task store {self.describe} was closed")

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
        if isinstance(exc, ReadOnlyError):  # a failover made it a replica (a replica is refused at open)
            return TaskStoreError(
                f"the Redis task store {self.describe} is now a read-only replica and refused a write:"
                " point the store at the current primary"
            )
        return TaskStoreError(f"the Redis task store {self.describe} refused a command: {exc}")

    def _unreachable(self, exc: BaseException) -> TaskStoreError:
        reason = str(exc) or type(exc).__name__
        return TaskStoreError(
            f"the Redis task store {self.describe} does not answer ({reason}): "
            "start redis-server, or check the URL"
        )


def packed(command: tuple[str | int, ...]) -> bytes:
    """``command`` in the Redis protocol (an array of bulk strings), as redis-py would send it.

    hiredis's packer when it is installed (in C, a quarter of the time), else ours: not redis-py's
    ``pack_command``, which checks each argument's type several times and was a third of a
    hot-path command's cost in this process (``benchmarks/sections/cost.py``).
    """
    if _HIREDIS_PACK is not None:
        return _HIREDIS_PACK(command)
    return packed_here(command)


def packed_here(command: Sequence[str | int]) -> bytes:
    """:func:`packed` without hiredis."""
    parts = [b"*%d\r\n" % len(command)]
    for arg in command:
        data = arg.encode() if isinstance(arg, str) else b"%d" % arg
        parts.append(b"$%d\r\n%b\r\n" % (len(data), data))
    return b"".join(parts)


async def _round_trip(client: aioredis.Redis, requests: list[bytes]) -> list[Any]:
    """Send ``requests`` together on one pooled connection, and read a reply (or a
    ``ResponseError``) for each. On any other error the connection is dropped, not reused: what
    is left unread on it is unknown."""
    pool = client.connection_pool
    connection = await (
        pool.get_connection() if _CONNECTION_NEEDS_NO_NAME else pool.get_connection("EVALSHA")
    )  # pyright: ignore[reportUnknownMemberType]
    try:
        await connection.send_packed_command(b"".join(requests))
        replies: list[Any] = []
        for _ in requests:
            try:
                replies.append(await connection.read_response())
            except ResponseError as exc:  # read whole: the connection is still in step
                replies.append(exc)
        return replies
    except BaseException:
        await connection.disconnect(nowait=True)
        raise
    finally:
        await pool.release(connection)


def _reply_each(batch: Sequence[tuple[object, asyncio.Future[Any]]], answers: Sequence[Any]) -> None:
    """Give each waiting caller of ``batch`` its reply, or raise its error there."""
    for (_, reply), answer in zip(batch, answers, strict=True):
        if reply.done():  # its caller was cancelled
            continue
        if isinstance(answer, BaseException):
            reply.set_exception(answer)
        else:
            reply.set_result(answer)


async def _next_message(pubsub: PubSub) -> dict[str, object] | None:
    """The next pub/sub reply, or ``None`` when none came within :data:`EVENT_POLL_S`."""
    reply = await pubsub.get_message(timeout=EVENT_POLL_S)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    return cast("dict[str, object] | None", reply)


class RedisNotifier(SavesAnnounced):
    """:class:`~.contract.Notifier` on Redis pub/sub, one channel per store prefix.

    Pub/sub is enough because an event is only a hint ("re-read this task now"): the state in the
    store is the truth, and it is written before the event is published. Redis delivers to a
    connected subscriber in order and drops messages only for one that is not connected; then the
    iterator raises :class:`TaskStoreError`, and the subscriber subscribes again and re-reads what
    it watches, after :meth:`subscribe` has returned (the subscription is confirmed by then). So a
    lost message costs latency, never a task or an answer.

    Once told who saves (:meth:`announce_saves_as`), the store's save script publishes the event
    itself, after the write and in the same round trip, so a change costs one round trip, not two.
    """

    def __init__(self, link: RedisLink, channel: str) -> None:
        super().__init__()
        self._link = link
        self.channel = channel

    async def publish(self, event: StoreEvent) -> None:
        if self.sent_by_save(event):
            return  # the save that made the change published it, in the same round trip
        async with self._link.talking() as client:
            await client.publish(self.channel, encode_event(event))  # pyright: ignore[reportUnknownMemberType]

    @asynccontextmanager
    async def subscribe(self) -> AsyncGenerator[AsyncIterator[StoreEvent]]:
        link = self._link
        pubsub: PubSub = link.client().pubsub()  # pyright: ignore[reportUnknownMemberType]
        try:
            try:
                await pubsub.subscribe(self.channel)  # pyright: ignore[reportUnknownMemberType]
                with anyio.fail_after(COMMAND_TIMEOUT_S):
                    while True:  # events published once this returns are delivered
                        reply = await _next_message(pubsub)
                        if reply is not None and reply.get("type") == "subscribe":
                            break
            except (RedisError, OSError, TimeoutError) as exc:
                raise await link.failed(exc) from None
            yield self._events(pubsub)
        finally:
            with suppress(RedisError, OSError):  # the connection may be gone already
                await pubsub.aclose()

    async def _events(self, pubsub: PubSub) -> AsyncIterator[StoreEvent]:
        while True:
            try:
                message = await _next_message(pubsub)
            except (RedisError, OSError) as exc:
                raise await self._link.failed(exc) from None
            if message is not None and message.get("type") == "message":
                event = decode_event(message.get("data"))
                if event is not None:
                    yield event
