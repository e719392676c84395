"""Sessions a caller opens itself (``client.connect_http``, ``client.connect_stdio``, the testing
kit's openers): when the server dies, the caller gets the library's errors, not the transport's.

The SDKs' transports run a task group around the block they yield to; a failure in it (an
``httpx.ConnectError`` once the server is gone, a broken pipe) cancels that block, so the call in
flight sees a bare ``CancelledError`` and the block ends with an exception group. Here the
transport is entered in a task of its own (:func:`held_transport`): its failure ends that task
and closes the session's streams, so the call in flight gets what a closed connection answers
(-32000, a closed stream), which the follower turns into :class:`ServerConnectionLostError`
naming its task, as it always did over stdio. A session that never opened is
:class:`ServerUnreachableError`: none of the caller's requests was sent.

This module imports no SDK: the adapter's app facet is passed in (:class:`SessionPlumbing`).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
import anyio.abc

from ..errors import ServerConnectionLostError, ServerUnreachableError
from .auth import HttpCredentials, auth_error_in, credentialed
from .lost import connection_lost, leaves

__all__ = ["SessionPlumbing", "TransportEnd", "held_transport", "open_negotiated"]

Streams = tuple[Any, Any]
"""A client's (read, write) JSON-RPC streams, as the installed SDK's transports yield them."""


class SessionPlumbing(Protocol):
    """What opening a session needs of the installed SDK (the adapter's app facet has it)."""

    def open_session(
        self, streams: Streams, kwargs: Mapping[str, Any]
    ) -> AbstractAsyncContextManager[Any]: ...

    async def handshake(self, session: Any, *, dialect_2025: bool) -> str | None: ...


@dataclass
class TransportEnd:
    """How a held transport ended by itself: ``failure`` is what it raised (``None``: not yet, or cleanly)."""

    failure: Exception | None = None

    def cause(self) -> BaseException | None:
        """The transport failure inside ``failure`` (out of its exception groups), if it is one."""
        return None if self.failure is None else connection_lost(self.failure)


@asynccontextmanager
async def held_transport(
    transport: AbstractAsyncContextManager[Streams],
) -> AsyncGenerator[tuple[Streams, TransportEnd], None]:
    """``transport``'s streams, the transport entered in a task of its own so that its failure
    cannot cancel the caller's block; a failure to enter it is raised here."""
    end = TransportEnd()
    released = anyio.Event()

    async def hold(*, task_status: anyio.abc.TaskStatus[Streams]) -> None:
        entered = False
        try:
            async with transport as streams:
                entered = True
                task_status.started(streams)
                await released.wait()
        except Exception as error:
            if not entered:
                raise  # nothing was opened: start() raises it to the opener
            end.failure = error  # kept for the error the caller gets; the streams are closed now

    async with anyio.create_task_group() as group:
        streams: Streams = await group.start(hold)
        try:
            yield streams, end
        finally:
            released.set()


def _nothing() -> str:
    return ""


@asynccontextmanager
async def open_negotiated(
    plumbing: SessionPlumbing,
    transport: AbstractAsyncContextManager[Streams],
    *,
    server: str,
    session_kwargs: Mapping[str, Any],
    negotiate: Callable[[Any], Awaitable[object]],
    dialect_2025: bool,
    connect_timeout: float | None,
    detail: Callable[[], str] = _nothing,
    credentials: HttpCredentials | None = None,
) -> AsyncGenerator[Any, None]:
    """A ``ClientSession`` on ``transport`` (to ``server``, a URL or a command line), opened with
    the SDK's handshake and ``negotiate``-d within ``connect_timeout`` seconds.

    Opening fails with :class:`ServerUnreachableError` when the transport fails or the handshake
    goes unanswered (``detail()`` is added to its message, e.g. the server's stderr). Once open,
    the block ends with :class:`ServerConnectionLostError` when the connection was lost (naming the
    task a call was following), with the one exception it raised otherwise (out of the transport's
    task groups), or normally.
    """
    opened = False
    end = TransportEnd()
    failure: Exception | None = None
    try:
        async with (
            held_transport(transport) as (streams, end),
            plumbing.open_session(streams, session_kwargs) as session,
        ):
            with anyio.fail_after(connect_timeout):
                await plumbing.handshake(session, dialect_2025=dialect_2025)
                await negotiate(session)
            opened = True
            with credentialed(credentials is not None and credentials.given):
                yield session
    except Exception as error:
        failure = error
    # Raised here, past the except clause, so that an exception of the caller's own block keeps
    # the context it had (raising it inside would make the transport's group its context).
    if failure is not None:
        refused = auth_error_in(failure, server, credentials)
        if refused is not None:
            raise refused if refused is failure else _chained(refused, failure)
        if opened:
            raise _in_use_error(failure, end, server)
        raise _unopened_error(failure, end, server, detail, connect_timeout)


def _unopened_error(
    error: Exception, end: TransportEnd, server: str, detail: Callable[[], str], timeout: float | None
) -> BaseException:
    found = leaves(error)
    cause = end.cause()
    if cause is None and found and all(type(leaf) is TimeoutError for leaf in found):  # connect_timeout
        within = "" if timeout is None else f" within {timeout:g} s"
        cause = TimeoutError(f"no answer to the handshake{within}")
    cause = cause or connection_lost(error)
    if cause is not None:
        return _chained(ServerUnreachableError(server=server, cause=cause, detail=detail()), error)
    return found[0] if len(found) == 1 else error  # e.g. the library's own refusal, as it is


def _in_use_error(error: Exception, end: TransportEnd, server: str) -> BaseException:
    found = leaves(error)
    if connection_lost(error) is None:  # not (only) a lost connection: the block's own error
        return found[0] if len(found) == 1 else error
    transport_failure = end.cause()  # what the transport saw says more than what the session was told
    typed = next((leaf for leaf in found if isinstance(leaf, ServerConnectionLostError)), None)
    if typed is not None:  # a call of this library's, naming its task
        if transport_failure is None:
            return typed
        named = ServerConnectionLostError(
            task_id=typed.task_id, dialect=typed.dialect, cause=transport_failure
        )
        return _chained(named, typed)
    if transport_failure is None:
        # An OSError or TimeoutError of the block's own (connection_lost counts them): the
        # transport is fine, so it is not the connection's.
        return found[0] if len(found) == 1 else error
    lost = ServerConnectionLostError(
        task_id=None,
        dialect=None,
        cause=transport_failure,
        during=f"while the session to {server} was in use (no task was being followed by this library)",
    )
    return _chained(lost, error)


def _chained(error: BaseException, cause: BaseException) -> BaseException:
    """``error`` raised ``from cause``."""
    error.__cause__ = cause
    return error
