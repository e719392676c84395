"""The status display: each task status as it changes, and the record of what was seen."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, TextIO

import anyio

from ..core._model import Task

__all__ = ["StatusLine", "StatusRecorder"]


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
