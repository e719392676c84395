"""The command line's pieces in-process: the status display, failure reports, argument parsing."""

from __future__ import annotations

import builtins
import importlib
import io
from datetime import datetime, timezone
from typing import Any

import anyio
import pytest

from mcp_tasks_compat._cli import (
    EXIT_CANCELLED,
    EXIT_TOOL_ERROR,
    EXIT_USAGE,
    CliError,
    StatusLine,
    StatusRecorder,
    Target,
    describe_failure,
    parse_arguments,
    render_probe,
)
from mcp_tasks_compat.core._model import Task, TaskStatus
from mcp_tasks_compat.errors import (
    TaskFailedError,
    TaskTimeoutError,
    UnsupportedOptIn,
    UnsupportedOptInError,
)

# The builtin on Python 3.11+, the backport anyio depends on before that.
Group: Any = (
    getattr(builtins, "ExceptionGroup", None) or importlib.import_module("exceptiongroup").ExceptionGroup
)
NOW = datetime(2026, 7, 28, tzinfo=timezone.utc)


def task(status: TaskStatus, message: str | None = None, task_id: str = "t-1") -> Task:
    return Task(task_id=task_id, status=status, created_at=NOW, last_updated_at=NOW, status_message=message)


def test_status_line_on_a_terminal_updates_one_line_in_place() -> None:
    out = io.StringIO()
    line = StatusLine(out, live=True)
    line.show(task(TaskStatus.WORKING))
    line.show(task(TaskStatus.WORKING, "step 1/2"))
    line.show(task(TaskStatus.COMPLETED, "step 2/2"))
    text = out.getvalue()
    assert text.count("\r\x1b[2K") == 3
    assert text.count("\n") == 1  # only the terminal status ends the line
    assert text.endswith("\n")
    assert "[completed] step 2/2" in text


def test_status_line_ends_an_open_line_when_the_call_stops_early() -> None:
    out = io.StringIO()
    line = StatusLine(out, live=True)
    line.show(task(TaskStatus.WORKING, "step 1/2"))
    line.done()
    line.done()
    assert out.getvalue().count("\n") == 1


def test_status_line_elsewhere_prints_a_line_per_status() -> None:
    out = io.StringIO()
    line = StatusLine.for_stream(out)  # StringIO is not a terminal
    line.show(task(TaskStatus.WORKING))
    line.show(task(TaskStatus.CANCELLED, "cancelled by the client"))
    lines = out.getvalue().splitlines()
    assert [entry.split("  (")[0] for entry in lines] == ["[working]", "[cancelled] cancelled by the client"]
    assert "\r" not in out.getvalue()


def test_recorder_keeps_each_distinct_status_once_and_nothing_after_the_end() -> None:
    recorder = StatusRecorder()
    for observed in (
        task(TaskStatus.WORKING),
        task(TaskStatus.WORKING),  # the same status from a second reporter (resume + call)
        task(TaskStatus.WORKING, "step 1/2"),
        task(TaskStatus.WORKING, "other", task_id="t-2"),  # another task: ignored
        task(TaskStatus.CANCELLED, "cancelled by the client"),
        task(TaskStatus.COMPLETED, "late"),  # after a terminal status: ignored
    ):
        recorder.observe(observed)
    assert recorder.task_id == "t-1"
    assert recorder.statuses == [
        {"status": "working", "message": None},
        {"status": "working", "message": "step 1/2"},
        {"status": "cancelled", "message": "cancelled by the client"},
    ]
    assert recorder.terminal


def test_failures_inside_nested_exception_groups_are_unwrapped() -> None:
    refused = ConnectionRefusedError(111, "Connection refused")
    nested = Group("outer", [Group("inner", [refused])])
    code, message = describe_failure(nested)
    assert code == EXIT_USAGE
    assert message == "cannot reach the server: ConnectionRefusedError: [Errno 111] Connection refused"


def test_the_most_telling_failure_wins() -> None:
    timeout = TaskTimeoutError("tools/call 'x' did not finish within 1 s", task_id="t-1")
    group = Group("many", [RuntimeError("noise"), Group("inner", [timeout])])
    assert describe_failure(group) == (EXIT_CANCELLED, "tools/call 'x' did not finish within 1 s")
    failed = TaskFailedError(task_id="t-1", error_code=-32603, error_message="boom")
    assert describe_failure(Group("one", [failed]))[0] == EXIT_TOOL_ERROR


def test_refusals_are_reported_in_one_line() -> None:
    refusal = UnsupportedOptInError(
        [
            UnsupportedOptIn(
                asked="dialect='2026-07-28'", supported_by="mcp>=2,<3", fix="pip install 'mcp>=2,<3'"
            )
        ],
        installed="mcp 1.30.0",
    )
    code, message = describe_failure(refusal)
    assert code == EXIT_USAGE
    assert "\n" not in message
    assert "dialect='2026-07-28'" in message
    assert "pip install 'mcp>=2,<3'" in message


def test_unexpected_errors_still_get_one_line() -> None:
    code, message = describe_failure(Group("g", [ValueError("odd\nvalue")]))
    assert code == EXIT_USAGE
    assert message == "unexpected error: ValueError: odd value (run with -v for details)"


@pytest.mark.parametrize(
    ("text", "expected"),
    [(None, None), ("{}", {}), ('{"text": "hi", "n": 2}', {"text": "hi", "n": 2})],
)
def test_args_json_accepts_an_object(text: str | None, expected: object) -> None:
    assert parse_arguments(text) == expected


@pytest.mark.parametrize(("text", "why"), [("[1]", "not list"), ("1", "not int"), ("{", "not valid JSON")])
def test_args_json_refuses_anything_else(text: str, why: str) -> None:
    with pytest.raises(CliError, match=why):
        parse_arguments(text)


def test_target_is_a_url_or_a_command() -> None:
    assert Target.of("http://127.0.0.1:1/mcp", []).describe() == "http://127.0.0.1:1/mcp"
    assert Target.of(None, ["server", "--flag"]).describe() == "server --flag"
    for url, command, why in [
        (None, [], "no server given"),
        ("http://x/mcp", ["server"], "not both"),
        ("ftp://x", [], "http:// or https://"),
    ]:
        with pytest.raises(CliError, match=why):
            Target.of(url, command)


def test_probe_table_for_a_server_that_decides_per_call() -> None:
    found = {
        "target": "http://127.0.0.1:1/mcp",
        "protocol_version": "2026-07-28",
        "server": {"name": "srv", "version": "1.0"},
        "dialects": ["2026-07-28"],
        "checked_dialects": ["2025-11-25", "2026-07-28"],
        "connections": [
            {
                "protocol_version": "2026-07-28",
                "handshake": "server/discover",
                "dialect": "2026-07-28",
                "reason": None,
            },
            {"protocol_version": None, "handshake": "initialize", "dialect": None, "reason": "refused"},
        ],
        "tools": [{"name": "long", "task_support": None}],
    }
    table = render_probe(found).splitlines()
    assert "server         srv 1.0" in table
    assert "task dialects  2026-07-28" in table
    assert "note           initialize: refused" in table
    assert table[-2:] == ["tools", "  long  not declared (the server decides per call)"]


class Redraws(io.StringIO):
    """A terminal's stream that says when the status line was drawn ``count`` times."""

    def __init__(self, count: int) -> None:
        super().__init__()
        self.count = count
        self.drawn = anyio.Event()

    def write(self, text: str) -> int:
        written = super().write(text)
        if self.getvalue().count("\r\x1b[2K") >= self.count:
            self.drawn.set()
        return written


@pytest.mark.anyio
async def test_status_line_on_a_terminal_keeps_the_clock_running_between_statuses() -> None:
    out = Redraws(3)  # the status itself, then two ticks, however late a busy machine runs them
    line = StatusLine(out, live=True)
    line.show(task(TaskStatus.WORKING, "step 1/2"))
    async with anyio.create_task_group() as group:
        group.start_soon(line.keep_ticking)
        with anyio.fail_after(60):
            await out.drawn.wait()
        group.cancel_scope.cancel()
    redraws = out.getvalue().split("\r\x1b[2K")[1:]
    assert len(redraws) >= 3  # the status itself, then at least two ticks
    assert all("[working] step 1/2" in redraw for redraw in redraws)
    assert len({redraw[:4] for redraw in redraws}) > 1  # the spinner turns


@pytest.mark.anyio
async def test_status_line_elsewhere_does_not_tick() -> None:
    out = io.StringIO()
    line = StatusLine(out, live=False)
    with anyio.fail_after(1):
        await line.keep_ticking()  # returns at once
    assert out.getvalue() == ""
