"""Which calls wait out the inline grace: a tool whose recent calls outlived it is a task at once.

The grace (:mod:`.inline`) lets a quick 2026-07-28 call be answered plainly. A long tool pays it
on every call for nothing: a batch submitter creating tasks of a 300 s tool waits 50 ms for each.
So the server remembers, per tool, whether its calls outlive the grace:

* after :data:`LONG_STREAK` calls in a row outlived it, the tool's next calls skip it (their task
  is created at once, the run started as its work);
* any call of the tool that ends within the grace, waited or not, gives the tool its grace back;
* a caller that asked for a task (our client's ``mode="task"`` hint) skips it once the tool is
  known, except for a tool seen asking for input first: its question stays a round before the
  task (multi-round-trip input), which only the grace can catch. A tool never seen waits it once.

A skipped call that turns out quick costs what ``inline_grace_s=0`` costs (a task, already
ended, instead of a plain answer) and restores the grace for the next one. Tools are remembered
up to :data:`MAX_TOOLS` (least recently called forgotten), so unknown names a client sends cannot
grow it. Per process: each replica learns on its own.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Final

__all__ = ["LONG_STREAK", "MAX_TOOLS", "QUICK_STREAK", "GraceMemory", "GraceTicket"]

LONG_STREAK: Final = 3
"""Calls in a row that outlived the grace before a tool's calls skip it."""

QUICK_STREAK: Final = 3
"""Calls in a row that ended within the grace before a tool's calls count as likely quick: they
start without detaching their request (:attr:`GraceTicket.likely_quick`)."""

MAX_TOOLS: Final = 1024
"""Tools remembered at most."""


class GraceTicket:
    """One call's grace: how long it waits, and what it tells the memory about its tool."""

    __slots__ = ("_memory", "_started", "_tool", "base_s", "likely_quick", "seconds")

    def __init__(
        self,
        memory: GraceMemory | None,
        tool: str,
        base_s: float,
        seconds: float,
        *,
        likely_quick: bool = False,
    ) -> None:
        self._memory = memory
        self._tool = tool
        self._started = time.monotonic()
        self.base_s = base_s
        self.seconds = seconds
        """How long this call waits (``0``: its task is created at once)."""
        self.likely_quick = likely_quick
        """The tool's last :data:`QUICK_STREAK` calls ended within the grace: this one most likely
        will too, so it need not pay for a run that outlives its request (a detached request)."""

    @classmethod
    def fixed(cls, seconds: float) -> GraceTicket:
        """A grace of ``seconds`` that teaches nothing (no tool behind it)."""
        return cls(None, "", seconds, seconds)

    @property
    def skipped(self) -> bool:
        return self.seconds <= 0 < self.base_s

    def outlived(self) -> None:
        """The call waited out its grace and became a task."""
        if self._memory is not None:
            self._memory.outlived(self._tool)

    def ended(self, *, asked_first: bool = False) -> None:
        """The call's work ended (plainly or as a task): quick ones give the tool its grace back.

        ``asked_first``: it ended by asking for input as a round before any task."""
        if self._memory is not None:
            quick = time.monotonic() - self._started < self.base_s
            self._memory.ended(self._tool, quick=quick, asked_first=asked_first)


class _Tool:
    __slots__ = ("asks_first", "quick", "streak")

    def __init__(self) -> None:
        self.streak = 0  # calls in a row that outlived the grace
        self.quick = 0  # calls in a row that ended within it
        self.asks_first = False


class GraceMemory:
    """Per tool, how its recent calls went against the grace (see the module docstring)."""

    def __init__(self, grace_s: float, *, long_streak: int = LONG_STREAK, max_tools: int = MAX_TOOLS) -> None:
        self.grace_s = grace_s
        self._long_streak = long_streak
        self._max_tools = max_tools
        self._tools: OrderedDict[str, _Tool] = OrderedDict()

    def ticket(self, tool: str, *, at_once: bool = False) -> GraceTicket:
        """The grace of a call of ``tool`` starting now; ``at_once``: the caller asked for a task."""
        if self.grace_s <= 0:
            return GraceTicket.fixed(0.0)
        known = self._tools.get(tool)
        if known is not None:
            self._tools.move_to_end(tool)
        skip = known is not None and not known.asks_first and (at_once or known.streak >= self._long_streak)
        quick = not skip and known is not None and known.quick >= QUICK_STREAK
        return GraceTicket(self, tool, self.grace_s, 0.0 if skip else self.grace_s, likely_quick=quick)

    def is_long(self, tool: str) -> bool:
        """Whether ``tool``'s calls now skip the grace."""
        known = self._tools.get(tool)
        return known is not None and not known.asks_first and known.streak >= self._long_streak

    def outlived(self, tool: str) -> None:
        known = self._known(tool)
        known.streak += 1
        known.quick = 0

    def ended(self, tool: str, *, quick: bool, asked_first: bool) -> None:
        known = self._known(tool)
        if asked_first:
            known.asks_first = True
        if quick or asked_first:
            known.streak = 0
        known.quick = known.quick + 1 if quick and not asked_first else 0

    def _known(self, tool: str) -> _Tool:
        known = self._tools.get(tool)
        if known is None:
            known = self._tools[tool] = _Tool()
            while len(self._tools) > self._max_tools:
                self._tools.popitem(last=False)
        else:
            self._tools.move_to_end(tool)
        return known
