"""How a command fails: one line on stderr and an exit code, and Ctrl-C as a cancellation we control.

SDK and anyio errors often arrive wrapped in exception groups; :func:`leaves` unwraps them and
:func:`describe_failure` picks the member that explains the failure best.
"""

from __future__ import annotations

import contextvars
import signal
import sys
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

import anyio

from .._adapters import get_adapter
from .._client.lost import leaves
from ..errors import (
    CompatError,
    PeerProtocolError,
    TaskCancelledError,
    TaskFailedError,
    TaskNotFoundError,
    TaskTimeoutError,
    UnsupportedSdkError,
)
from .common import (
    CONNECTION_CLOSED,
    EXIT_CANCELLED,
    EXIT_OK,
    EXIT_TOOL_ERROR,
    EXIT_USAGE,
    CliError,
    one_line,
)

if TYPE_CHECKING:
    from .connect import ServerLog

__all__ = ["Interrupt", "current_interrupt", "describe_failure", "leaves", "run_reporting", "run_service"]

ResultT = TypeVar("ResultT")


def _is_transport_error(error: BaseException) -> bool:
    module = type(error).__module__
    return module.split(".")[0] in ("httpx", "httpx2", "httpcore", "httpcore2") or isinstance(
        error, (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream)
    )


def _rank(error: BaseException) -> int:
    """Which of several errors explains a failure best (lower is better)."""
    if isinstance(error, CliError):
        return 0
    if isinstance(error, CompatError):
        return 1
    if get_adapter().app.jsonrpc_error_of(error) is not None:
        return 2
    if get_adapter().app.connection_closed(error):
        return 3
    if _is_transport_error(error):
        return 4
    if isinstance(error, KeyboardInterrupt):
        return 5
    return 6


def describe_failure(
    error: BaseException, *, server_log: Callable[[], str | None] | None = None
) -> tuple[int, str]:
    """(exit code, one-line message) for anything a command raised."""
    candidates = leaves(error) or [error]
    try:
        candidates.sort(key=_rank)
    except UnsupportedSdkError as exc:  # ranking asks the SDK adapter; a broken SDK is the answer
        return EXIT_USAGE, one_line(exc.message)
    first = candidates[0]
    tail = server_log() if server_log is not None else None
    said = f" (server stderr: {tail})" if tail else ""
    if isinstance(first, CliError):
        return first.exit_code, one_line(first.message)
    if isinstance(first, (TaskCancelledError, TaskTimeoutError)):
        return EXIT_CANCELLED, one_line(first.message)
    if isinstance(first, (TaskFailedError, TaskNotFoundError)):
        return EXIT_TOOL_ERROR, one_line(first.message)
    if isinstance(first, PeerProtocolError) and first.jsonrpc_code == CONNECTION_CLOSED:
        return EXIT_USAGE, one_line(f"the server closed the connection: {first.message}{said}")
    if isinstance(first, CompatError):
        return EXIT_USAGE, one_line(first.message)
    answered = get_adapter().app.jsonrpc_error_of(first)
    if answered is not None:
        code, message = answered
        return EXIT_USAGE, one_line(f"the server answered an error: {message} (JSON-RPC {code})")
    if get_adapter().app.connection_closed(first):
        return EXIT_USAGE, f"the server closed the connection{said}"
    if isinstance(first, (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream)):
        return EXIT_USAGE, f"lost the connection to the server ({type(first).__name__}){said}"
    if isinstance(first, FileNotFoundError):
        return EXIT_USAGE, one_line(f"cannot start the server command: {first}")
    if _is_transport_error(first):
        detail = str(first) or type(first).__name__
        return EXIT_USAGE, one_line(f"cannot reach the server: {type(first).__name__}: {detail}{said}")
    if isinstance(first, KeyboardInterrupt):
        return EXIT_CANCELLED, "interrupted"
    return EXIT_USAGE, one_line(
        f"unexpected error: {type(first).__name__}: {first} (run with -v for details)"
    )


class _Interrupted(Exception):
    """Ctrl-C arrived and what was running was stopped."""


@dataclass
class Interrupt:
    """Ctrl-C, as the running command wants it handled.

    A command that can stop gracefully registers the scope to cancel in ``soft_targets`` (``call``
    registers the tool call, so the session and its transport stay up while the library sends
    ``tasks/cancel``, and the command still reports what happened). Without one, or on a second
    Ctrl-C, everything is cancelled.
    """

    requested: bool = False
    soft_targets: list[anyio.CancelScope] = field(default_factory=lambda: list[anyio.CancelScope]())
    stopped_softly: bool = False


_INTERRUPT: contextvars.ContextVar[Interrupt] = contextvars.ContextVar("mcp_tasks_compat_cli_interrupt")


def current_interrupt() -> Interrupt:
    """The running command's :class:`Interrupt` (a fresh, unwatched one outside :func:`run_reporting`)."""
    try:
        return _INTERRUPT.get()
    except LookupError:
        return Interrupt()


async def _interruptible(main: Callable[[], Awaitable[ResultT]]) -> ResultT:
    """Run ``main`` with Ctrl-C turned into a cancellation we control (see :class:`Interrupt`).

    Left to asyncio, Ctrl-C cancels everything at once, the transport included, so no
    ``tasks/cancel`` could go out, and clean-up errors would hide that the user asked to stop.
    """
    interrupt = Interrupt()
    _INTERRUPT.set(interrupt)
    value: list[ResultT] = []
    async with anyio.create_task_group() as group:

        async def watch() -> None:
            try:
                with anyio.open_signal_receiver(signal.SIGINT) as signals:
                    async for _signal in signals:
                        if not interrupt.requested and interrupt.soft_targets:
                            interrupt.requested = interrupt.stopped_softly = True
                            for scope in interrupt.soft_targets:
                                scope.cancel()
                            continue
                        interrupt.requested = True
                        interrupt.stopped_softly = False
                        group.cancel_scope.cancel()
                        return
            except (NotImplementedError, RuntimeError, ValueError):
                return  # no signal handling here (Windows, or not the main thread): Ctrl-C as usual

        group.start_soon(watch)
        try:
            value.append(await main())
        except BaseException as error:
            if interrupt.requested:
                raise _Interrupted() from error
            raise
        group.cancel_scope.cancel()
    if not value or (interrupt.requested and not interrupt.stopped_softly):
        raise _Interrupted()
    return value[0]


def run_reporting(
    main: Callable[[], Awaitable[ResultT]],
    *,
    verbose: bool,
    log: ServerLog | None = None,
    on_failure: Callable[[int, str], None] | None = None,
) -> tuple[ResultT | None, int | None]:
    """Run ``main`` on an event loop: (its value, None), or (None, exit code) after one line on stderr
    (``on_failure(code, message)`` hears it too, e.g. for a ``--json`` document)."""
    try:
        return anyio.run(_interruptible, main), None
    except (SystemExit, GeneratorExit):
        raise
    except BaseException as error:
        if verbose:
            traceback.print_exception(error)
        if any(isinstance(leaf, (_Interrupted, KeyboardInterrupt)) for leaf in leaves(error) or [error]):
            code, message = EXIT_CANCELLED, "interrupted"
        else:
            code, message = describe_failure(error, server_log=log.last_line if log is not None else None)
        print(f"mcp-tasks-compat: {message}", file=sys.stderr)
        if on_failure is not None:
            on_failure(code, message)
        return None, code
    finally:
        if log is not None:
            log.close()


def run_service(
    main: Callable[[], Awaitable[None]], *, refusal: Callable[[BaseException], str | None], prefix: str = ""
) -> int:
    """Run a command that serves until stopped (a server, a worker): exit 0 when it ends or on
    SIGINT; a failure whose first leaf ``refusal`` words is that one line on stderr, exit 2; any
    other failure one line as :func:`describe_failure` says it, with its exit code."""
    try:
        anyio.run(main)
    except KeyboardInterrupt:
        return EXIT_OK
    except BaseException as error:
        if isinstance(error, (SystemExit, GeneratorExit)):
            raise
        inner = leaves(error)
        if inner and all(isinstance(leaf, KeyboardInterrupt) for leaf in inner):
            return EXIT_OK
        said = refusal(inner[0]) if inner else None
        if said is not None:
            print(f"mcp-tasks-compat: {prefix}{said}", file=sys.stderr)
            return EXIT_USAGE
        code, message = describe_failure(error)
        print(f"mcp-tasks-compat: {prefix}{message}", file=sys.stderr)
        return code
    return EXIT_OK
