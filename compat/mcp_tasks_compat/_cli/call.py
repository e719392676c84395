"""``call``: one tool call, a task where the server offers one, with ``--cancel-after`` and a report.

The call goes through the public :func:`..client.call_tool`; a cancel goes out on the same session
through :func:`..client.resume`, so the call ends the way the server reports it.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import anyio

from .._adapters import get_adapter
from .._client.journal import JournalEntry
from .._client.lost import lost_connection_error
from .._client_api import call_tool, resume
from .._journal import TaskJournal
from ..client import Mode
from ..dialects import Dialect
from ..errors import (
    PeerProtocolError,
    ServerConnectionLostError,
    TaskCancelledError,
    TaskError,
    TaskFailedError,
    TaskNotFoundError,
    TaskTimeoutError,
    UnsupportedOptInError,
)
from .answers import NO_ANSWER_HINT, Answers, stdin_is_a_terminal
from .common import (
    CONNECTION_CLOSED,
    EXIT_CANCELLED,
    EXIT_OK,
    EXIT_TOOL_ERROR,
    EXIT_USAGE,
    CliError,
    content_blocks,
    json_object,
    one_line,
    result_text,
)
from .connect import Connected, ServerLog, Target, connect
from .failures import current_interrupt, run_reporting
from .status import StatusLine, StatusRecorder

__all__ = ["CallOptions", "CallReport", "parse_arguments", "run_call"]

CANCEL_WAIT_SECONDS: Final = 5.0
"""How long a cancel waits for the task to report a terminal status."""
FOLLOW_UP_SECONDS: Final = 3.0
"""Bound on the best-effort look at a task's final state after a timeout."""


def parse_arguments(text: str | None) -> dict[str, Any] | None:
    """ARGS_JSON: a JSON object (or nothing)."""
    return json_object(text, "ARGS_JSON", "")


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
    resume: str | None = None
    """Follow this existing task instead of calling ``tool``."""
    journal: TaskJournal | None = None
    """``--journal PATH``: the call's task is recorded there (and ended there once read)."""
    entry: JournalEntry | None = None
    """``resume --journal``: the journal entry ``resume`` names, followed through the journal."""


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
                if options.journal is not None and options.entry is not None:
                    result = await options.journal.follow(
                        options.entry, connected.session, on_status=recorder.observe, timeout=options.timeout
                    )
                elif options.resume is not None:
                    run = await resume(connected.session, options.resume, on_status=recorder.observe)
                    result = await run.result(timeout=options.timeout)
                else:
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
    display = None if options.as_json else StatusLine.for_stream(sys.stderr)
    recorder = StatusRecorder(display=display)
    answers = Answers(
        fixed=options.answer, interactive=options.answer is None and stdin_is_a_terminal(), display=display
    )
    callbacks = {"elicitation_callback": get_adapter().app.elicitation_callback(answers)}
    try:
        return await _call_connected(options, report, log, recorder, answers, callbacks)
    except Exception as error:
        if report.protocol_version is None:
            raise  # never connected: "cannot reach the server", said by run_reporting
        lost = lost_connection_error(error, task_id=recorder.task_id, dialect=report.dialect)
        if lost is None:
            raise
        return _connection_lost(lost, report, recorder)


def _connection_lost(lost: ServerConnectionLostError, report: CallReport, recorder: StatusRecorder) -> int:
    """The server went away: the report still says which task, and how to carry on with it."""
    if recorder.display is not None:
        recorder.display.done()
    report.task_id = recorder.task_id
    report.statuses = recorder.statuses
    hint = f"; carry on with: mcp-tasks-compat call --resume {lost.task_id}" if lost.task_id else ""
    report.error = _error_json("connection-lost", lost.message + hint)
    return EXIT_USAGE


async def _call_connected(
    options: CallOptions,
    report: CallReport,
    log: ServerLog,
    recorder: StatusRecorder,
    answers: Answers,
    callbacks: Mapping[str, Any],
) -> int:
    """The call on a session opened for it: ``--mode plain`` opens it without the library's task
    settings (no Tasks extension declared), any other mode with them and ``callbacks`` added."""
    display = recorder.display
    async with connect(
        options.target,
        session_options=callbacks,
        bare=options.mode == "plain",
        log=log,
        connect_timeout=options.connect_timeout,
        journal=options.journal,
        dialect=options.entry.dialect if options.entry is not None else None,
    ) as connected:
        report.protocol_version = connected.protocol_version
        report.dialect = connected.negotiated.dialect
        recorder.heading = f"task {{task_id}} (dialect {connected.negotiated.dialect})"
        if options.resume is None:
            await _check_tool(connected, options.tool)
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
        refused = connected.auth_refused() if failure is not None else None
        if refused is not None:  # mcp 2.x answers a refused request with -32603: say what it was
            raise refused from failure
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
                "tool-error", result_text(report.result) or "the tool returned isError"
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


async def _check_tool(connected: Connected, tool: str) -> None:
    """Refuse a tool the server does not offer, naming the ones it does."""
    names = [str(item.get("name")) for item in await get_adapter().app.list_tools(connected.session)]
    if tool not in names:
        offered = ", ".join(names) or "no tools"
        raise CliError(f"unknown tool {tool!r}; the server offers: {offered}")


def _is_error_result(result: Any) -> bool:
    return get_adapter().app.result_wire(result).get("isError") is True


def _classify_call_failure(failure: BaseException, report: CallReport) -> int:
    if isinstance(failure, ServerConnectionLostError):
        raise failure  # reported by _call, with the task's statuses
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


def _print_result(result: Mapping[str, Any]) -> None:
    """Text blocks as text, any other block as its JSON; structured content when there is nothing else."""
    blocks = content_blocks(result)
    for item in blocks:
        print(item.get("text", "") if item.get("type") == "text" else json.dumps(item))
    if not blocks and "structuredContent" in result:
        print(json.dumps(result["structuredContent"]))


def run_call(options: CallOptions) -> int:
    """``call``: one tool call, a task where the server offers one."""
    report = CallReport(tool=options.tool)
    log = ServerLog(verbose=options.verbose)

    def failed_as_json(code: int, message: str) -> None:
        """``--json`` prints its one document whatever happened."""
        if options.as_json:
            report.error = _error_json("failed", message)
            print(json.dumps(report.to_json()))

    code, failed = run_reporting(
        lambda: _call(options, report, log), verbose=options.verbose, log=log, on_failure=failed_as_json
    )
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
