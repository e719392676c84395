"""The faults themselves: a TCP relay that partitions one replica from Redis, a clock skew and a
clock step through libfaketime, and a probe for a SQLite file's write lock (a paused process must
not hold it)."""

from __future__ import annotations

import glob
import shutil
import sqlite3
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import anyio.abc
from tools.redis_server import free_port

from .server import CLOCK_OFFSET_ENV, MONOTONIC_ANCHOR_ENV

__all__ = [
    "FAKETIME_MISSING",
    "Relay",
    "faketime_library",
    "redis_server_executable",
    "relay_to",
    "skewed_environment",
    "sqlite_write_lock_free",
    "step_clock",
    "stepped_environment",
]

FAKETIME_MISSING = "libfaketime not installed (apt-get install faketime)"
_FAKETIME_PLACES = (
    "/usr/lib/*/faketime/libfaketime.so.1",
    "/usr/lib/faketime/libfaketime.so.1",
    "/usr/local/lib/faketime/libfaketime.so.1",
)


_TRUE_MONOTONIC = {
    "FAKETIME_DONT_FAKE_MONOTONIC": "1",
    # libfaketime 0.9.10's "monotonic fix" of pthread_cond_timedwait held a threaded process's event
    # loop up to 0.8 s at a time (its SQLite calls run on worker threads): off, waits are true
    "FAKETIME_FORCE_MONOTONIC_FIX": "0",
}
"""What keeps a child's monotonic clock, and its timed waits, true under libfaketime."""


def faketime_library() -> str | None:
    """Where Debian's ``faketime`` package (or a local build) put ``libfaketime.so.1``, if anywhere."""
    for pattern in _FAKETIME_PLACES:
        found = sorted(glob.glob(pattern))
        if found:
            return found[0]
    return None


def skewed_environment(skew_s: float) -> dict[str, str]:
    """Environment variables that shift a child's wall clock by ``skew_s`` (its monotonic clock, the
    event loop's, stays true); the chaos server takes the skew back out of its marks."""
    library = faketime_library()
    if library is None:
        raise RuntimeError(FAKETIME_MISSING)
    return {
        "LD_PRELOAD": library,
        "FAKETIME": f"{skew_s:+g}s",
        **_TRUE_MONOTONIC,
        CLOCK_OFFSET_ENV: repr(skew_s),
        MONOTONIC_ANCHOR_ENV: repr(time.time() - time.monotonic()),
    }


def stepped_environment(clock_file: Path) -> dict[str, str]:
    """Environment variables that make a child's wall clock follow the offset in ``clock_file``
    (``+0s`` to start; :func:`step_clock` steps it, for every process reading the file: the host's
    clock stepped, as by NTP or a VM resumed). The monotonic clock stays true, and the chaos server
    takes its marks' times from it (:data:`~.server.MONOTONIC_ANCHOR_ENV`)."""
    library = faketime_library()
    if library is None:
        raise RuntimeError(FAKETIME_MISSING)
    if not clock_file.exists():
        step_clock(clock_file, 0.0)
    return {
        "LD_PRELOAD": library,
        "FAKETIME_TIMESTAMP_FILE": str(clock_file),
        "FAKETIME_CACHE_DURATION": "1",  # each process reads the file again at most a second later
        **_TRUE_MONOTONIC,
        MONOTONIC_ANCHOR_ENV: repr(time.time() - time.monotonic()),
    }


def step_clock(clock_file: Path, offset_s: float) -> None:
    """Step the clock of every process started with :func:`stepped_environment` on ``clock_file``
    to ``offset_s`` from the true one (written whole, then renamed: never read half-written)."""
    written = clock_file.with_suffix(".new")
    written.write_text(f"{offset_s:+g}s\n", encoding="utf-8")
    written.replace(clock_file)


def redis_server_executable() -> str | None:
    return shutil.which("redis-server")


class Relay:
    """A TCP relay from a port of its own to Redis: the partition between one replica and its store.

    :meth:`cut` closes every relayed connection and refuses new ones (accepted and closed at once:
    the replica's client sees the store gone, as across a partition that resets connections);
    :meth:`heal` relays again.
    """

    def __init__(self, backend_port: int) -> None:
        self.port = free_port()
        self.backend_port = backend_port
        self.is_cut = False
        self._open: set[anyio.CancelScope] = set()

    def url(self, database: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{database}"

    async def serve(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=self.port)
        task_status.started()
        async with listener:
            await listener.serve(self._relay)

    def cut(self) -> None:
        self.is_cut = True
        for scope in list(self._open):
            scope.cancel()

    def heal(self) -> None:
        self.is_cut = False

    async def _relay(self, client: anyio.abc.SocketStream) -> None:
        async with client:
            if self.is_cut:
                return
            try:
                server = await anyio.connect_tcp("127.0.0.1", self.backend_port)
            except OSError:
                return
            with anyio.CancelScope() as scope:
                self._open.add(scope)
                try:
                    async with server, anyio.create_task_group() as group:
                        group.start_soon(_pump, client, server, group.cancel_scope)
                        group.start_soon(_pump, server, client, group.cancel_scope)
                finally:
                    self._open.discard(scope)


async def _pump(
    source: anyio.abc.SocketStream, sink: anyio.abc.SocketStream, scope: anyio.CancelScope
) -> None:
    try:
        async for chunk in source:
            await sink.send(chunk)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass
    finally:
        scope.cancel()


@asynccontextmanager
async def relay_to(backend_port: int) -> AsyncIterator[Relay]:
    async with anyio.create_task_group() as group:
        relay = Relay(backend_port)
        await group.start(relay.serve)
        try:
            yield relay
        finally:
            group.cancel_scope.cancel()


def sqlite_write_lock_free(path: Path, *, wait_s: float = 0.5) -> bool:
    """Whether the file's write lock can be taken within ``wait_s`` (taken and given back at once).

    A process stopped while it holds the lock (mid-write) blocks every other writer for as long as
    it is stopped: no lease can help there, so the pause scenario stops its replica outside writes.
    """
    connection = sqlite3.connect(path, timeout=wait_s, isolation_level=None)
    try:
        connection.execute("BEGIN IMMEDIATE")
        connection.execute("ROLLBACK")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        connection.close()
