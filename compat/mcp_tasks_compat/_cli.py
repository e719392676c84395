"""What the ``mcp-tasks-compat`` commands do; :mod:`.__main__` parses the command line.

This module imports no ``mcp``: the task work goes through the public :mod:`.client` API, and
the SDK-specific plumbing (transports, the example server) through the adapter registry's app
facet (``_adapters.get_adapter().app``).

Every failure ends as one line on stderr and an exit code (:func:`describe_failure`); SDK and
anyio errors often arrive wrapped in exception groups, which are unwrapped here.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Final, TextIO, TypeVar, cast

import anyio

from ._detect import sdk_info
from .client import Mode, Negotiated, call_tool, negotiate, resume, session_kwargs, start_tool
from .core.model import Task, TaskStatus
from .dialects import DIALECT_2025_11_25, DIALECT_2026_07_28, Dialect
from .errors import (
    CompatError,
    PeerProtocolError,
    TaskCancelledError,
    TaskError,
    TaskFailedError,
    TaskNotFoundError,
    TaskTimeoutError,
    UnsupportedOptInError,
    UnsupportedSdkError,
)

__all__ = [
    "EXIT_CANCELLED",
    "EXIT_OK",
    "EXIT_TOOL_ERROR",
    "EXIT_USAGE",
    "CliError",
    "StatusLine",
    "Target",
    "describe_failure",
    "parse_arguments",
    "render_probe",
    "run_call",
    "run_demo",
    "run_example_server",
    "run_probe",
]

EXIT_OK: Final = 0
EXIT_TOOL_ERROR: Final = 1
"""The tool answered an error result (``isError``), or its task failed."""
EXIT_USAGE: Final = 2
"""Bad command line, a refusal (ours or the server's), or a target that cannot be reached or died."""
EXIT_CANCELLED: Final = 3
"""The call was cancelled (``--cancel-after``, Ctrl-C, or by the server) or timed out."""

DIALECT_NAMES: Final[Mapping[str, str]] = {
    DIALECT_2025_11_25: "experimental tasks, SEP-1686",
    DIALECT_2026_07_28: "the Tasks extension io.modelcontextprotocol/tasks, SEP-2663",
}
CANCEL_WAIT_SECONDS: Final = 5.0
"""How long a cancel waits for the task to report a terminal status."""
CONNECTION_CLOSED: Final = -32000
"""The JSON-RPC code both SDKs use for "Connection closed" under a pending request."""
FOLLOW_UP_SECONDS: Final = 3.0
"""Bound on the best-effort look at a task's final state after a timeout."""
EXAMPLE_SERVER_NAME: Final = "mcp-tasks-compat-example"


ResultT = TypeVar("ResultT")


class CliError(Exception):
    """A failure the command line reports as one line with a chosen exit code."""

    def __init__(self, message: str, exit_code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


def one_line(text: str) -> str:
    """Multi-line messages (refusals list every opt-in) folded into one line."""
    return " ".join(part.strip() for part in text.splitlines() if part.strip())


# --- failures -------------------------------------------------------------------------------------


def _group_members(error: BaseException) -> tuple[BaseException, ...] | None:
    """The members of an exception group (the builtin, or the backport on Python 3.10), else ``None``."""
    if not any(cls.__name__ == "BaseExceptionGroup" for cls in type(error).__mro__):
        return None
    inner: object = getattr(error, "exceptions", None)
    if not isinstance(inner, tuple):
        return None
    return tuple(item for item in inner if isinstance(item, BaseException))  # pyright: ignore[reportUnknownVariableType]


def _leaves(error: BaseException) -> list[BaseException]:
    """The exceptions inside (possibly nested) exception groups, cancellations left out."""
    members = _group_members(error)
    if members is not None:
        found: list[BaseException] = []
        for item in members:
            found.extend(_leaves(item))
        return found
    if isinstance(error, asyncio.CancelledError):  # anyio.run's backend is asyncio
        return []
    return [error]


def _is_transport_error(error: BaseException) -> bool:
    module = type(error).__module__
    return module.split(".")[0] in ("httpx", "httpx2", "httpcore", "httpcore2") or isinstance(
        error, (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream)
    )


def _rank(error: BaseException) -> int:
    """Which of several errors explains a failure best (lower is better)."""
    from ._adapters import get_adapter

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
    leaves = _leaves(error) or [error]
    try:
        leaves.sort(key=_rank)
    except UnsupportedSdkError as exc:  # ranking asks the SDK adapter; a broken SDK is the answer
        return EXIT_USAGE, one_line(exc.message)
    first = leaves[0]
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
    from ._adapters import get_adapter

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
    """The running command's :class:`Interrupt` (a fresh, unwatched one outside :func:`_run_reporting`)."""
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


def _run_reporting(
    main: Callable[[], Awaitable[ResultT]], *, verbose: bool, log: ServerLog | None = None
) -> tuple[ResultT | None, int | None]:
    """Run ``main`` on an event loop: (its value, None), or (None, exit code) after one line on stderr."""
    try:
        return anyio.run(_interruptible, main), None
    except (SystemExit, GeneratorExit):
        raise
    except BaseException as error:
        if verbose:
            traceback.print_exception(error)
        if any(isinstance(leaf, (_Interrupted, KeyboardInterrupt)) for leaf in _leaves(error) or [error]):
            print("mcp-tasks-compat: interrupted", file=sys.stderr)
            return None, EXIT_CANCELLED
        code, message = describe_failure(error, server_log=log.last_line if log is not None else None)
        print(f"mcp-tasks-compat: {message}", file=sys.stderr)
        return None, code
    finally:
        if log is not None:
            log.close()


# --- targets and connections ----------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """Where the server is: a streamable HTTP URL, or a command to spawn and talk to over stdio."""

    url: str | None = None
    command: tuple[str, ...] = ()

    @classmethod
    def of(cls, url: str | None, command: Sequence[str]) -> Target:
        if url is not None and command:
            raise CliError("give either --url URL or -- COMMAND ARGS..., not both")
        if url is None and not command:
            raise CliError("no server given: use --url URL or -- COMMAND ARGS...")
        if url is not None and not url.startswith(("http://", "https://")):
            raise CliError(f"--url must be an http:// or https:// URL, not {url!r}")
        return cls(url=url, command=tuple(command))

    def describe(self) -> str:
        return self.url if self.url is not None else " ".join(self.command)


@dataclass
class Connected:
    """One open, negotiated client session."""

    session: Any
    negotiated: Negotiated
    protocol_version: str | None
    server_name: str | None
    server_version: str | None


@dataclass
class ServerLog:
    """Where a stdio server's stderr goes: ours with ``-v``, else a file whose last line explains a death."""

    verbose: bool
    _file: TextIO | None = None

    def stream(self) -> TextIO:
        if self.verbose:
            return sys.stderr
        if self._file is None:
            self._file = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        return self._file

    def last_line(self) -> str | None:
        if self._file is None:
            return None
        try:
            self._file.flush()
            self._file.seek(0)
            lines = [line.strip() for line in self._file.read().splitlines() if line.strip()]
        except (OSError, ValueError):
            return None
        return lines[-1][:300] if lines else None

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


@asynccontextmanager
async def connect(
    target: Target, *, kwargs: Mapping[str, Any], legacy: bool, log: ServerLog, connect_timeout: float
) -> AsyncGenerator[Connected, None]:
    """Open a session to ``target`` and negotiate it within ``connect_timeout`` seconds."""
    from ._adapters import get_adapter

    async with AsyncExitStack() as stack:
        if target.url is not None:
            streams = await stack.enter_async_context(get_adapter().app.http_streams(target.url))
        else:
            command, *args = target.command
            streams = await stack.enter_async_context(
                get_adapter().app.stdio_streams(command, args, errlog=log.stream())
            )
        session = await stack.enter_async_context(get_adapter().app.open_session(streams, kwargs))
        try:
            with anyio.fail_after(connect_timeout):
                opened = await get_adapter().app.handshake(session, dialect_2025=legacy)
                negotiated = await negotiate(session)
        except TimeoutError:
            raise CliError(
                f"no answer from {target.describe()} within {connect_timeout:g} s (--connect-timeout)"
            ) from None
        name, version = get_adapter().app.server_identity(session)
        yield Connected(session, negotiated, negotiated.protocol_version or opened, name, version)


# --- status display -------------------------------------------------------------------------------


class StatusLine:
    """Shows each task status as it changes: one line updated in place on a terminal, else a line each.

    On a terminal, :meth:`keep_ticking` (run next to the call) also redraws the open line a few
    times a second, so the clock and the spinner show the call is alive between status changes.
    """

    SPINNER: Final = "|/-\\"
    TICK_SECONDS: Final = 0.2

    def __init__(self, stream: TextIO, *, live: bool, indent: str = "") -> None:
        self.stream = stream
        self.live = live
        self.indent = indent
        self.started = time.monotonic()
        self._open = False
        self._current: Task | None = None
        self._ticks = 0
        self._held = False

    @classmethod
    def for_stream(cls, stream: TextIO, *, indent: str = "") -> StatusLine:
        isatty: Callable[[], bool] | None = getattr(stream, "isatty", None)
        return cls(stream, live=bool(isatty and isatty()), indent=indent)

    def restart(self) -> None:
        """Count elapsed time from now (the call starts after connecting)."""
        self.started = time.monotonic()

    def _text(self, task: Task) -> str:
        elapsed = time.monotonic() - self.started
        message = f" {task.status_message}" if task.status_message else ""
        spin = (
            f"{self.SPINNER[self._ticks % len(self.SPINNER)]} " if self.live and not task.is_terminal else ""
        )
        return f"{self.indent}{spin}[{task.status.value}]{message}  ({elapsed:.1f} s)"

    def show(self, task: Task) -> None:
        self._current = task
        if self._held:
            return  # a question is being asked on this terminal; the status waits
        if self.live:
            self.stream.write("\r\x1b[2K" + self._text(task))
            self._open = not task.is_terminal
            if task.is_terminal:
                self.stream.write("\n")
        else:
            self.stream.write(self._text(task) + "\n")
        self.stream.flush()

    async def keep_ticking(self) -> None:
        """Redraw the open line until cancelled (a terminal only; elsewhere returns at once)."""
        if not self.live:
            return
        while True:
            await anyio.sleep(self.TICK_SECONDS)
            if self._open and self._current is not None and not self._held:
                self._ticks += 1
                self.stream.write("\r\x1b[2K" + self._text(self._current))
                self.stream.flush()

    def note(self, text: str) -> None:
        """A line of its own (ends an open in-place line first)."""
        self.done()
        self.stream.write(self.indent + text + "\n")
        self.stream.flush()

    def hold(self) -> None:
        """Stop drawing (a question is asked on the same terminal); :meth:`release` resumes."""
        self.done()
        self._held = True

    def release(self) -> None:
        self._held = False
        if self._current is not None:
            self.show(self._current)

    def done(self) -> None:
        """End an in-place line that is still open (the call ended without a terminal status)."""
        if self._open:
            self.stream.write("\n")
            self.stream.flush()
            self._open = False


@dataclass
class StatusRecorder:
    """Collects each distinct (status, statusMessage) once, from every reporter of one task."""

    display: StatusLine | None = None
    task_id: str | None = None
    statuses: list[dict[str, Any]] = field(default_factory=lambda: list[dict[str, Any]]())
    last: Task | None = None
    heading: str | None = None
    """Written on a line of its own before the first status, ``{task_id}`` filled in (human output)."""

    @property
    def terminal(self) -> bool:
        return self.last is not None and self.last.is_terminal

    def observe(self, task: Task) -> None:
        if self.task_id is None:
            self.task_id = task.task_id
            if self.display is not None and self.heading is not None:
                self.display.note(self.heading.format(task_id=task.task_id))
        if task.task_id != self.task_id or self.terminal:
            return
        if self.last is not None and (self.last.status, self.last.status_message) == (
            task.status,
            task.status_message,
        ):
            return
        self.last = task
        self.statuses.append({"status": task.status.value, "message": task.status_message})
        if self.display is not None:
            self.display.show(task)


# --- answering the tool's questions (elicitation) -----------------------------------------------

DEMO_ANSWER: Final[Mapping[str, Any]] = {"answer": "Ada"}
"""What ``demo`` answers the ``ask`` tool with when stdin is not a terminal."""
NO_ANSWER_HINT: Final = (
    'pass --answer JSON (the form\'s content, e.g. \'{"answer": "Ada"}\'), or run on a terminal'
)


def _read_line(prompt: str) -> str | None:
    """One line from stdin after ``prompt`` on stderr; ``None`` at end of input."""
    sys.stderr.write(prompt)
    sys.stderr.flush()
    line = sys.stdin.readline()
    return None if line == "" else line.rstrip("\r\n")


def _field_value(text: str, kind: object) -> object:
    """A typed form value from what was typed (ValueError when it does not fit the field's type)."""
    if kind == "integer":
        return int(text)
    if kind == "number":
        return float(text)
    if kind == "boolean":
        lowered = text.strip().lower()
        if lowered in ("y", "yes", "true", "1"):
            return True
        if lowered in ("n", "no", "false", "0"):
            return False
        raise ValueError("answer yes or no")
    return text


@dataclass
class Answers:
    """How ``call`` and ``demo`` answer a tool's questions: a fixed answer, the terminal, or not at all.

    A question that gets no answer is refused (the SDK's session then answers the server with an
    error and the task is cancelled); ``refused`` keeps the questions, so the command can say why.
    """

    fixed: Mapping[str, Any] | None = None
    interactive: bool = False
    display: StatusLine | None = None
    announce: Callable[[str], None] | None = None
    asked: list[str] = field(default_factory=lambda: list[str]())
    refused: list[str] = field(default_factory=lambda: list[str]())
    _lock: anyio.Lock = field(default_factory=anyio.Lock)

    async def __call__(self, message: str, schema: Mapping[str, Any]) -> Mapping[str, Any] | str:
        self.asked.append(message)
        if self.fixed is not None:
            if self.announce is not None:
                self.announce(f"the tool asks {message!r}; answering {json.dumps(dict(self.fixed))}")
            return dict(self.fixed)
        if self.interactive:
            async with self._lock:  # one question at a time on the terminal
                return await self._prompt(message, schema)
        self.refused.append(message)
        return f"no answer to {message!r}: {NO_ANSWER_HINT}"

    async def _prompt(self, message: str, schema: Mapping[str, Any]) -> Mapping[str, Any] | str:
        if self.display is not None:
            self.display.hold()
        try:
            sys.stderr.write(f"the tool asks: {message}\n")
            properties: object = schema.get("properties")
            empty: Mapping[str, Any] = {}
            fields = cast("Mapping[str, Any]", properties) if isinstance(properties, Mapping) else empty
            required: object = schema.get("required")
            needed = set(cast("list[str]", required)) if isinstance(required, list) else set[str]()
            content: dict[str, Any] = {}
            for name, spec in fields.items():
                info = cast("Mapping[str, Any]", spec) if isinstance(spec, Mapping) else empty
                kind: object = info.get("type", "string")
                label = str(info.get("title") or name)
                while True:
                    text = await anyio.to_thread.run_sync(_read_line, f"  {label} ({kind}): ")
                    if text is None:
                        self.refused.append(message)
                        return f"no answer to {message!r}: the terminal's input ended"
                    if text == "" and name not in needed:
                        break
                    try:
                        content[name] = _field_value(text, kind)
                    except ValueError as error:
                        sys.stderr.write(f"  not a valid {kind}: {error}\n")
                        continue
                    break
            return content
        finally:
            if self.display is not None:
                self.display.release()


def parse_answer(text: str | None) -> dict[str, Any] | None:
    """``--answer JSON``: the elicitation result's content, a JSON object."""
    return _json_object(text, "--answer", " (the form's content)")


def _stdin_is_a_terminal() -> bool:
    isatty: Callable[[], bool] | None = getattr(sys.stdin, "isatty", None)
    return bool(isatty and isatty())


# --- call -----------------------------------------------------------------------------------------


def parse_arguments(text: str | None) -> dict[str, Any] | None:
    """ARGS_JSON: a JSON object (or nothing)."""
    return _json_object(text, "ARGS_JSON", "")


def _json_object(text: str | None, name: str, shape: str) -> dict[str, Any] | None:
    """Parse a command-line JSON object; a one-line ``CliError`` names ``name`` otherwise."""
    if text is None:
        return None
    try:
        value: object = json.loads(text)
    except json.JSONDecodeError as exc:
        where = f"{exc.msg} at line {exc.lineno} column {exc.colno}"
        raise CliError(f"{name} is not valid JSON ({where})") from None
    if not isinstance(value, dict):
        raise CliError(f"{name} must be a JSON object{shape}, not {type(value).__name__}: {text!r}")
    return cast("dict[str, Any]", value)  # JSON object keys are always strings


@dataclass
class CallReport:
    """What ``call --json`` prints."""

    tool: str
    protocol_version: str | None = None
    dialect: Dialect | None = None
    task_id: str | None = None
    statuses: list[dict[str, Any]] = field(default_factory=lambda: list[dict[str, Any]]())
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    elapsed_s: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "protocol_version": self.protocol_version,
            "dialect": self.dialect,
            "task_id": self.task_id,
            "statuses": self.statuses,
            "result": self.result,
            "error": self.error,
            "elapsed_s": round(self.elapsed_s, 3),
        }


@dataclass(frozen=True)
class CallOptions:
    target: Target
    tool: str
    arguments: dict[str, Any] | None
    mode: Mode
    timeout: float | None
    cancel_after: float | None
    as_json: bool
    connect_timeout: float
    verbose: bool
    answer: dict[str, Any] | None = None


def _error_json(kind: str, message: str, code: int | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {"kind": kind, "message": one_line(message)}
    if code is not None:
        error["code"] = code
    return error


async def _final_state(connected: Connected, recorder: StatusRecorder) -> None:
    """After a timeout or cancel, read the task's final status (best effort, bounded)."""
    if recorder.task_id is None or recorder.terminal:
        return
    with anyio.move_on_after(FOLLOW_UP_SECONDS):
        try:
            run = await resume(connected.session, recorder.task_id, on_status=recorder.observe)
            await run.cancel(wait=FOLLOW_UP_SECONDS)
        except Exception:  # the session may be gone; the outcome is already decided
            return


async def _call_once(
    connected: Connected, options: CallOptions, recorder: StatusRecorder
) -> tuple[Any, BaseException | None, bool]:
    """Run the call; (result, error, cancelled_by_us). ``--cancel-after`` cancels the remote task itself.

    The cancel goes out on the same session through :func:`resume` while the call keeps waiting,
    so the call ends the way the server reports it, and no in-flight request is abandoned.
    """
    call_scope = anyio.CancelScope()
    cancel_sent = False
    result: Any = None
    failure: BaseException | None = None

    async def cancel_later(delay: float) -> None:
        nonlocal cancel_sent
        await anyio.sleep(delay)
        cancel_sent = True
        if recorder.task_id is None:
            call_scope.cancel()  # a plain call, or no task yet: stop waiting
            return
        try:
            run = await resume(connected.session, recorder.task_id, on_status=recorder.observe)
            await run.cancel(wait=CANCEL_WAIT_SECONDS)
        except Exception as error:  # the call itself reports what happened
            if options.verbose:
                print(f"mcp-tasks-compat: cancel failed: {error!r}", file=sys.stderr)

    interrupt = current_interrupt()
    async with anyio.create_task_group() as group:
        if options.cancel_after is not None:
            group.start_soon(cancel_later, options.cancel_after)
        interrupt.soft_targets.append(call_scope)  # Ctrl-C stops the call, not the session
        try:
            with call_scope:
                result = await call_tool(
                    connected.session,
                    options.tool,
                    options.arguments,
                    mode=options.mode,
                    on_status=recorder.observe,
                    timeout=options.timeout,
                )
        except Exception as error:
            failure = error
        finally:
            interrupt.soft_targets.remove(call_scope)
        if not cancel_sent:
            group.cancel_scope.cancel()
    return result, failure, cancel_sent or call_scope.cancelled_caught


async def _call(options: CallOptions, report: CallReport, log: ServerLog) -> int:
    from ._adapters import get_adapter

    display = None if options.as_json else StatusLine.for_stream(sys.stderr)
    recorder = StatusRecorder(display=display)
    answers = Answers(
        fixed=options.answer, interactive=options.answer is None and _stdin_is_a_terminal(), display=display
    )
    kwargs: dict[str, Any] = {} if options.mode == "plain" else session_kwargs()
    kwargs["elicitation_callback"] = get_adapter().app.elicitation_callback(answers)
    async with connect(
        options.target, kwargs=kwargs, legacy=False, log=log, connect_timeout=options.connect_timeout
    ) as connected:
        report.protocol_version = connected.protocol_version
        recorder.heading = f"task {{task_id}} (dialect {connected.negotiated.dialect})"
        names = [str(tool.get("name")) for tool in await get_adapter().app.list_tools(connected.session)]
        if options.tool not in names:
            offered = ", ".join(names) or "no tools"
            raise CliError(f"unknown tool {options.tool!r}; the server offers: {offered}")
        started = time.monotonic()
        result: Any = None
        failure: BaseException | None = None
        cancelled = False
        async with anyio.create_task_group() as ticker:
            if display is not None:
                display.restart()
                ticker.start_soon(display.keep_ticking)
            result, failure, cancelled = await _call_once(connected, options, recorder)
            ticker.cancel_scope.cancel()
        if cancelled or isinstance(failure, (TaskTimeoutError, TaskCancelledError)):
            await _final_state(connected, recorder)
        report.elapsed_s = time.monotonic() - started
    if display is not None:
        display.done()
    report.task_id = recorder.task_id
    report.statuses = recorder.statuses
    report.dialect = connected.negotiated.dialect if recorder.task_id is not None else None
    if answers.refused and not (failure is None and result is not None and not _is_error_result(result)):
        # The tool asked and nobody could answer: a usage problem, whatever the server made of it.
        last = recorder.last
        ended = (
            f"; task {recorder.task_id} ended {last.status.value}"
            if last is not None and last.is_terminal
            else ""
        )
        report.error = _error_json(
            "no-answer",
            f"the tool asked {answers.refused[0]!r} and there is no answer{ended}: {NO_ANSWER_HINT}",
        )
        return EXIT_USAGE
    if failure is None and result is not None:
        # Completed, even if a --cancel-after went out too late to stop it.
        report.result = get_adapter().app.result_wire(result)
        if report.result.get("isError") is True:
            report.error = _error_json(
                "tool-error", _result_text(report.result) or "the tool returned isError"
            )
            return EXIT_TOOL_ERROR
        return EXIT_OK
    if cancelled and (failure is None or isinstance(failure, TaskCancelledError)):
        what = f"task {recorder.task_id}" if recorder.task_id else "the call (no task to cancel)"
        if current_interrupt().stopped_softly:
            why = "by Ctrl-C"
        else:
            why = f"after {options.cancel_after or 0.0:g} s (--cancel-after)"
        report.error = _error_json("cancelled", f"{what} cancelled {why}")
        return EXIT_CANCELLED
    if failure is None:
        raise CliError("the call ended without a result or an error", EXIT_USAGE)
    return _classify_call_failure(failure, report)


def _is_error_result(result: Any) -> bool:
    from ._adapters import get_adapter

    return get_adapter().app.result_wire(result).get("isError") is True


def _classify_call_failure(failure: BaseException, report: CallReport) -> int:
    from ._adapters import get_adapter

    if isinstance(failure, TaskTimeoutError):
        report.error = _error_json("timeout", failure.message)
        return EXIT_CANCELLED
    if isinstance(failure, TaskCancelledError):
        report.error = _error_json("cancelled", failure.message)
        return EXIT_CANCELLED
    if isinstance(failure, TaskFailedError):
        report.error = _error_json("task-failed", failure.message, failure.error_code)
        return EXIT_TOOL_ERROR
    if isinstance(failure, TaskNotFoundError):
        report.error = _error_json(failure.code, failure.message)
        return EXIT_TOOL_ERROR
    if isinstance(failure, UnsupportedOptInError):
        raise failure  # refused before anything was sent: no report
    if isinstance(failure, PeerProtocolError) and failure.jsonrpc_code == CONNECTION_CLOSED:
        raise failure  # the connection is gone: one line, no report
    if isinstance(failure, PeerProtocolError):
        report.error = _error_json("peer-protocol", failure.message, failure.jsonrpc_code)
        return EXIT_USAGE
    answered = get_adapter().app.jsonrpc_error_of(failure)
    if answered is not None:
        code, message = answered
        report.error = _error_json(
            "refused", f"the server refused tools/call {report.tool!r}: {message}", code
        )
        return EXIT_USAGE
    if isinstance(failure, TaskError):
        report.error = _error_json(failure.code, failure.message)
        return EXIT_TOOL_ERROR
    raise failure  # a connection failure and the like: one line, no report


def _content(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The result's content blocks (wire JSON)."""
    content: object = result.get("content")
    if not isinstance(content, list):
        return []
    return [cast("dict[str, Any]", item) for item in cast("list[object]", content) if isinstance(item, dict)]


def _result_text(result: Mapping[str, Any]) -> str:
    return "\n".join(str(item.get("text", "")) for item in _content(result) if item.get("type") == "text")


def _print_result(result: Mapping[str, Any]) -> None:
    """Text blocks as text, any other block as its JSON; structured content when there is nothing else."""
    blocks = _content(result)
    for item in blocks:
        print(item.get("text", "") if item.get("type") == "text" else json.dumps(item))
    if not blocks and "structuredContent" in result:
        print(json.dumps(result["structuredContent"]))


def run_call(options: CallOptions) -> int:
    """``call``: one tool call, a task where the server offers one."""
    report = CallReport(tool=options.tool)
    log = ServerLog(verbose=options.verbose)
    code, failed = _run_reporting(lambda: _call(options, report, log), verbose=options.verbose, log=log)
    if failed is not None:
        return failed
    assert code is not None
    if options.as_json:
        print(json.dumps(report.to_json()))
    elif report.result is not None:
        _print_result(report.result)
    if report.error is not None:
        print(f"mcp-tasks-compat: {report.error['message']}", file=sys.stderr)
    elif not options.as_json:
        how = f"task {report.task_id}, dialect {report.dialect}" if report.task_id else "a plain call"
        print(f"done in {report.elapsed_s:.1f} s ({how})", file=sys.stderr)
    return code


# --- probe ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProbeOptions:
    target: Target
    as_json: bool
    connect_timeout: float
    verbose: bool


def _task_support(tool: Mapping[str, Any]) -> str | None:
    execution: object = tool.get("execution")
    if isinstance(execution, dict):
        support: object = cast("dict[str, Any]", execution).get("taskSupport")
        if isinstance(support, str):
            return support
    return None


async def _probe(options: ProbeOptions, log: ServerLog) -> dict[str, Any]:
    from ._adapters import get_adapter

    connections: list[dict[str, Any]] = []
    tools: dict[str, str | None] = {}
    identity: dict[str, Any] = {"name": None, "version": None}
    protocol_version: str | None = None

    async def look(legacy: bool) -> bool:
        nonlocal protocol_version
        async with connect(
            options.target,
            kwargs=session_kwargs(),
            legacy=legacy,
            log=log,
            connect_timeout=options.connect_timeout,
        ) as connected:
            negotiated = connected.negotiated
            connections.append(
                {
                    "protocol_version": connected.protocol_version,
                    "handshake": "server/discover"
                    if get_adapter().app.is_modern(connected.protocol_version)
                    else "initialize",
                    "dialect": negotiated.dialect,
                    "reason": negotiated.reason,
                }
            )
            if protocol_version is None:
                protocol_version = connected.protocol_version
                identity.update(name=connected.server_name, version=connected.server_version)
            for tool in await get_adapter().app.list_tools(connected.session):
                name = str(tool.get("name"))
                support = _task_support(tool)
                if tools.get(name) is None:
                    tools[name] = support
            return get_adapter().app.is_modern(connected.protocol_version)

    modern = await look(legacy=False)
    if modern:
        # A 2.x client can also open a handshake-era connection: does the server speak 2025-11-25 too?
        try:
            await look(legacy=True)
        except Exception as error:
            code, message = describe_failure(error)
            del code
            connections.append(
                {"protocol_version": None, "handshake": "initialize", "dialect": None, "reason": message}
            )
    dialects = sorted({c["dialect"] for c in connections if c["dialect"] is not None}, reverse=True)
    checked = list(sdk_info().client_dialects)
    return {
        "target": options.target.describe(),
        "protocol_version": protocol_version,
        "server": identity,
        "dialects": dialects,
        "checked_dialects": checked,
        "connections": connections,
        "tools": [{"name": name, "task_support": support} for name, support in tools.items()],
    }


def run_probe(options: ProbeOptions) -> int:
    """``probe``: what the server offers, as seen from this install's client."""
    log = ServerLog(verbose=options.verbose)
    found, failed = _run_reporting(lambda: _probe(options, log), verbose=options.verbose, log=log)
    if failed is not None:
        return failed
    assert found is not None
    print(json.dumps(found, indent=2) if options.as_json else render_probe(found))
    return EXIT_OK


def render_probe(found: Mapping[str, Any]) -> str:
    """``probe``'s table for people: the server, its task dialects, each tool's task support."""
    server = found["server"]
    rows: list[tuple[str, str]] = [
        ("target", str(found["target"])),
        ("server", f"{server['name'] or '?'} {server['version'] or ''}".strip()),
        ("protocol", str(found["protocol_version"] or "?")),
        ("task dialects", ", ".join(found["dialects"]) or "none"),
    ]
    unchecked = [d for d in (DIALECT_2025_11_25, DIALECT_2026_07_28) if d not in found["checked_dialects"]]
    if unchecked:
        rows.append(("not checked", f"{', '.join(unchecked)} (this install's mcp client cannot speak it)"))
    for connection in found["connections"]:
        if connection["dialect"] is None and connection["reason"]:
            rows.append(("note", f"{connection['handshake']}: {connection['reason']}"))
    width = max(len(key) for key, _ in rows)
    lines = [f"{key:<{width}}  {value}" for key, value in rows]
    lines.append("tools")
    name_width = max((len(tool["name"]) for tool in found["tools"]), default=0)
    for tool in found["tools"]:
        support = tool["task_support"] or "not declared (the server decides per call)"
        lines.append(f"  {tool['name']:<{name_width}}  {support}")
    return "\n".join(lines)


# --- demo -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DemoOptions:
    dialect: Dialect | None
    seconds: float
    steps: int
    verbose: bool


async def _demo(options: DemoOptions, out: TextIO) -> int:
    from ._adapters import get_adapter

    info = sdk_info()
    kwargs = session_kwargs(dialect=options.dialect)  # refuses what this install cannot do, first
    legacy = options.dialect == DIALECT_2025_11_25  # 1.x always initializes; 2.x when asked

    def say(text: str = "") -> None:
        out.write(text + "\n")
        out.flush()

    # The third run's question is asked on the terminal; elsewhere it is answered for the reader.
    interactive = _stdin_is_a_terminal()
    answers = Answers(fixed=None if interactive else DEMO_ANSWER, interactive=interactive)

    def announce(line: str) -> None:
        text = f"{line} (not a terminal: answered automatically)"
        if answers.display is not None:
            answers.display.note(text)  # ends the status line that may be open on stdout
        else:
            say(f"   {text}")

    answers.announce = announce
    kwargs["elicitation_callback"] = get_adapter().app.elicitation_callback(answers)

    server = build_example_server()
    say(f"mcp-tasks-compat demo on mcp {info.mcp_version} (major {info.major})")
    say("example server in-process; client over in-memory JSON-RPC streams")
    async with (
        get_adapter().app.in_memory_streams(server) as streams,
        get_adapter().app.open_session(streams, kwargs) as session,
    ):
        opened = await get_adapter().app.handshake(session, dialect_2025=legacy)
        negotiated = await negotiate(session)
        dialect = negotiated.dialect
        version = negotiated.protocol_version or opened
        if dialect is None:
            raise CliError(f"the connection offers no tasks: {negotiated.reason}")
        handshake = "server/discover" if get_adapter().app.is_modern(version) else "initialize"
        say(f"connected: protocol {version} ({handshake}); task dialect {dialect} ({DIALECT_NAMES[dialect]})")
        say()

        arguments = {"text": "hello from a task", "seconds": options.seconds, "steps": options.steps}
        say(f"1) slow_echo as a task ({options.seconds:g} s, {options.steps} steps), dialect {dialect}")
        display = StatusLine.for_stream(out, indent="   ")
        recorder = StatusRecorder(display=display)
        started = time.monotonic()
        result: Any = None
        async with anyio.create_task_group() as ticker:
            ticker.start_soon(display.keep_ticking)
            result = await call_tool(session, "slow_echo", arguments, mode="task", on_status=recorder.observe)
            ticker.cancel_scope.cancel()
        display.done()
        text = _result_text(get_adapter().app.result_wire(result))
        say(
            f"   result: {text!r} after {time.monotonic() - started:.1f} s "
            f"(task {recorder.task_id}, dialect {dialect})"
        )
        say()

        long_seconds = max(options.seconds * 4, 2.0)
        long_steps = max(options.steps * 4, 2)
        say(f"2) slow_echo again ({long_seconds:g} s), cancelled once it reports progress, dialect {dialect}")
        second_display = StatusLine.for_stream(out, indent="   ")
        second = StatusRecorder(display=second_display)
        progressed = anyio.Event()

        def on_status(task: Task) -> None:
            second.observe(task)
            if task.status_message:
                progressed.set()

        arguments = {"text": "never returned", "seconds": long_seconds, "steps": long_steps}
        ended: TaskError | None = None
        final: Task | None = None
        with anyio.fail_after(long_seconds):
            run = await start_tool(session, "slow_echo", arguments, on_status=on_status)
            followed = anyio.Event()
            async with anyio.create_task_group() as group:

                async def follow() -> None:
                    nonlocal ended
                    try:
                        await run.result()
                    except TaskError as error:
                        ended = error
                    finally:
                        followed.set()

                group.start_soon(second_display.keep_ticking)
                group.start_soon(follow)
                await progressed.wait()
                final = await run.cancel()
                await followed.wait()  # the waiting call ends the way the server reports it
                group.cancel_scope.cancel()
        second_display.done()
        state = final.status.value if final is not None else "unknown"
        why = f"; the waiting call ended with {type(ended).__name__}" if ended is not None else ""
        say(f"   cancel sent: task {run.task_id} is {state} (dialect {dialect}){why}")
        say()
        if final is None or final.status is not TaskStatus.CANCELLED:
            raise CliError(f"the cancelled task ended {state}, not cancelled", EXIT_TOOL_ERROR)

        say(f"3) ask as a task: the tool asks a question (input_required), dialect {dialect}")
        third_display = StatusLine.for_stream(out, indent="   ")
        answers.display = third_display
        third = StatusRecorder(display=third_display)
        asked: Any = None
        async with anyio.create_task_group() as ticker:
            ticker.start_soon(third_display.keep_ticking)
            asked = await call_tool(
                session, "ask", {"question": "What is your name?"}, mode="task", on_status=third.observe
            )
            ticker.cancel_scope.cancel()
        third_display.done()
        reply = _result_text(get_adapter().app.result_wire(asked))
        if TaskStatus.INPUT_REQUIRED.value not in [seen["status"] for seen in third.statuses]:
            raise CliError("the ask task never reported input_required", EXIT_TOOL_ERROR)
        say(f"   result: {reply!r} (task {third.task_id}, dialect {dialect})")
        say()
    say(f"done: all three runs used the {dialect} dialect ({DIALECT_NAMES[dialect]}).")
    return EXIT_OK


def run_demo(options: DemoOptions) -> int:
    """``demo``: the example server in-process: a task run to its result, one cancelled, one that asks."""
    code, failed = _run_reporting(lambda: _demo(options, sys.stdout), verbose=options.verbose)
    return failed if failed is not None else (code if code is not None else EXIT_OK)


# --- example-server -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ServeOptions:
    transport: str
    host: str
    port: int


def build_example_server(*, host: str = "127.0.0.1") -> Any:
    """The example server: the example tools on this major's documented server, tasks enabled."""
    from ._adapters import get_adapter
    from ._version import __version__
    from .examples import EXAMPLE_TASK_SUPPORT, EXAMPLE_TOOLS
    from .server import ServerTasks

    policy = ServerTasks(tools=dict(EXAMPLE_TASK_SUPPORT))
    return get_adapter().app.build_server(
        EXAMPLE_SERVER_NAME, EXAMPLE_TOOLS, policy, host=host, version=__version__
    )


def run_example_server(options: ServeOptions) -> int:
    """``example-server``: serve the example tools until stdin closes (stdio) or SIGINT/SIGTERM (http)."""
    from ._adapters import get_adapter

    def listening(url: str) -> None:
        print(f"listening on {url}", file=sys.stderr, flush=True)

    async def serve() -> None:
        server = build_example_server(host=options.host)
        if options.transport == "stdio":
            await get_adapter().app.serve_stdio(server)
        else:
            await get_adapter().app.serve_http(
                server, host=options.host, port=options.port, on_listening=listening
            )

    try:
        anyio.run(serve)
    except KeyboardInterrupt:
        return EXIT_OK
    except BaseException as error:
        if isinstance(error, (SystemExit, GeneratorExit)):
            raise
        leaves = _leaves(error)
        if leaves and all(isinstance(leaf, KeyboardInterrupt) for leaf in leaves):
            return EXIT_OK
        if leaves and isinstance(leaves[0], OSError) and not isinstance(leaves[0], FileNotFoundError):
            print(
                f"mcp-tasks-compat: cannot listen on {options.host}:{options.port}: {leaves[0]}",
                file=sys.stderr,
            )
            return EXIT_USAGE
        code, message = describe_failure(error)
        print(f"mcp-tasks-compat: {message}", file=sys.stderr)
        return code
    return EXIT_OK
