"""``demo``: the example server in-process, and three task runs against it, narrated on stdout.

The runs are one per step below: a task run to its result, one cancelled once it reports progress,
and one whose tool asks a question (``input_required``). All three use the dialect negotiated once.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, TextIO

import anyio

from .._adapters import get_adapter
from .._client_api import call_tool, connect_in_memory, negotiate, start_tool
from .._detect import sdk_info
from ..core._model import Task, TaskStatus
from ..dialects import DIALECT_2025_11_25, DIALECT_2026_07_28, Dialect
from ..errors import TaskError
from .answers import DEMO_ANSWER, Answers, stdin_is_a_terminal
from .common import EXIT_OK, EXIT_TOOL_ERROR, CliError, result_text
from .failures import run_reporting
from .serve import build_example_server
from .status import StatusLine, StatusRecorder

__all__ = ["DIALECT_NAMES", "DemoOptions", "run_demo"]

DIALECT_NAMES: Final[Mapping[str, str]] = {
    DIALECT_2025_11_25: "experimental tasks, SEP-1686",
    DIALECT_2026_07_28: "the Tasks extension io.modelcontextprotocol/tasks, SEP-2663",
}


@dataclass(frozen=True)
class DemoOptions:
    dialect: Dialect | None
    seconds: float
    steps: int
    verbose: bool


def _say(out: TextIO, text: str = "") -> None:
    out.write(text + "\n")
    out.flush()


def _demo_answers(out: TextIO) -> Answers:
    """The third run's question is asked on the terminal; elsewhere it is answered for the reader."""
    interactive = stdin_is_a_terminal()
    answers = Answers(fixed=None if interactive else DEMO_ANSWER, interactive=interactive)

    def announce(line: str) -> None:
        text = f"{line} (not a terminal: answered automatically)"
        if answers.display is not None:
            answers.display.note(text)  # ends the status line that may be open on stdout
        else:
            _say(out, f"   {text}")

    answers.announce = announce
    return answers


@dataclass(frozen=True)
class _DemoSession:
    """What the three runs share: the open session, its negotiated dialect, where to write."""

    session: Any
    dialect: Dialect
    out: TextIO

    def say(self, text: str = "") -> None:
        _say(self.out, text)

    def status_line(self) -> StatusLine:
        return StatusLine.for_stream(self.out, indent="   ")


async def _opened(session: Any, *, out: TextIO) -> Dialect:
    """The task dialect the opener negotiated, after a line saying how the connection was opened."""
    negotiated = await negotiate(session)  # what the opener negotiated (cached)
    dialect = negotiated.dialect
    version = negotiated.protocol_version
    if dialect is None:
        raise CliError(f"the connection offers no tasks: {negotiated.reason}")
    handshake = "server/discover" if get_adapter().app.is_modern(version) else "initialize"
    _say(
        out, f"connected: protocol {version} ({handshake}); task dialect {dialect} ({DIALECT_NAMES[dialect]})"
    )
    _say(out)
    return dialect


async def _run_to_result(demo: _DemoSession, options: DemoOptions) -> None:
    """1) ``slow_echo`` as a task, its statuses shown as they change, to its result."""
    dialect = demo.dialect
    arguments = {"text": "hello from a task", "seconds": options.seconds, "steps": options.steps}
    demo.say(f"1) slow_echo as a task ({options.seconds:g} s, {options.steps} steps), dialect {dialect}")
    display = demo.status_line()
    recorder = StatusRecorder(display=display)
    started = time.monotonic()
    result: Any = None
    async with anyio.create_task_group() as ticker:
        ticker.start_soon(display.keep_ticking)
        result = await call_tool(
            demo.session, "slow_echo", arguments, mode="task", on_status=recorder.observe
        )
        ticker.cancel_scope.cancel()
    display.done()
    text = result_text(get_adapter().app.result_wire(result))
    demo.say(
        f"   result: {text!r} after {time.monotonic() - started:.1f} s "
        f"(task {recorder.task_id}, dialect {dialect})"
    )
    demo.say()


async def _run_and_cancel(demo: _DemoSession, options: DemoOptions) -> None:
    """2) a longer ``slow_echo``, cancelled once it reports progress; it must end ``cancelled``."""
    dialect = demo.dialect
    long_seconds = max(options.seconds * 4, 2.0)
    long_steps = max(options.steps * 4, 2)
    demo.say(
        f"2) slow_echo again ({long_seconds:g} s), cancelled once it reports progress, dialect {dialect}"
    )
    second_display = demo.status_line()
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
        run = await start_tool(demo.session, "slow_echo", arguments, on_status=on_status)
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
    demo.say(f"   cancel sent: task {run.task_id} is {state} (dialect {dialect}){why}")
    demo.say()
    if final is None or final.status is not TaskStatus.CANCELLED:
        raise CliError(f"the cancelled task ended {state}, not cancelled", EXIT_TOOL_ERROR)


async def _run_ask(demo: _DemoSession, answers: Answers) -> None:
    """3) ``ask`` as a task: the tool asks a question, answered through ``answers``."""
    dialect = demo.dialect
    demo.say(f"3) ask as a task: the tool asks a question (input_required), dialect {dialect}")
    third_display = demo.status_line()
    answers.display = third_display
    third = StatusRecorder(display=third_display)
    asked: Any = None
    async with anyio.create_task_group() as ticker:
        ticker.start_soon(third_display.keep_ticking)
        asked = await call_tool(
            demo.session, "ask", {"question": "What is your name?"}, mode="task", on_status=third.observe
        )
        ticker.cancel_scope.cancel()
    third_display.done()
    reply = result_text(get_adapter().app.result_wire(asked))
    if TaskStatus.INPUT_REQUIRED.value not in [seen["status"] for seen in third.statuses]:
        raise CliError("the ask task never reported input_required", EXIT_TOOL_ERROR)
    demo.say(f"   result: {reply!r} (task {third.task_id}, dialect {dialect})")
    demo.say()


async def _demo(options: DemoOptions, out: TextIO) -> int:
    info = sdk_info()
    answers = _demo_answers(out)
    callbacks = {"elicitation_callback": get_adapter().app.elicitation_callback(answers)}
    # The client's opener, as user code opens it; it refuses what this install cannot do before
    # anything is printed. 1.x always opens with initialize; 2.x does when 2025-11-25 is asked for
    # (else server/discover).
    server = build_example_server()
    opening = connect_in_memory(server, dialect=options.dialect, client_session_kwargs=callbacks)
    _say(out, f"mcp-tasks-compat demo on mcp {info.mcp_version} (major {info.major})")
    _say(out, "example server in-process; client over in-memory JSON-RPC streams")
    async with opening as session:
        dialect = await _opened(session, out=out)
        demo = _DemoSession(session, dialect, out)
        await _run_to_result(demo, options)
        await _run_and_cancel(demo, options)
        await _run_ask(demo, answers)
    _say(out, f"done: all three runs used the {dialect} dialect ({DIALECT_NAMES[dialect]}).")
    return EXIT_OK


def run_demo(options: DemoOptions) -> int:
    """``demo``: the example server in-process: a task run to its result, one cancelled, one that asks."""
    code, failed = run_reporting(lambda: _demo(options, sys.stdout), verbose=options.verbose)
    return failed if failed is not None else (code if code is not None else EXIT_OK)
