"""How often a client should poll a task: the ``pollInterval(Ms)`` hint, one rule for every read.

The engine stamps the hint when it writes a task and computes it again when a task is read
(:meth:`~.reader.TaskReader.shown`), so a quiet task's hint grows with its age on every dialect
and major; no adapter stamps it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PollPolicy"]


@dataclass(frozen=True)
class PollPolicy:
    """The ``pollInterval(Ms)`` hint a task carries: short while it is young, growing with its age.

    hint = clamp(age * ratio, minimum_ms, maximum_ms). The default polls every 10 ms for the
    first 200 ms (a quick tool's result is picked up within a few milliseconds of its end), then
    at a twentieth of the task's age (65 ms at 1.3 s, 500 ms at 10 s), up to 5 s, so a long task
    is never polled in a busy loop. :meth:`proportional` is the schedule before (the benchmark's
    "off" switch).

    Example::

        app = TaskServer("builder", poll_policy=PollPolicy(maximum_ms=2_000))  # never above 2 s
        tasks = ServerTasks(tools={"build": "optional"}, poll_policy=PollPolicy.proportional())
    """

    minimum_ms: int = 10
    maximum_ms: int = 5_000
    ratio: float = 0.05

    @classmethod
    def proportional(cls) -> PollPolicy:
        """The earlier default: clamp(age * 0.1, 100 ms, 5 s)."""
        return cls(minimum_ms=100, maximum_ms=5_000, ratio=0.1)

    def hint_ms(self, age_ms: float) -> int:
        return int(min(self.maximum_ms, max(self.minimum_ms, age_ms * self.ratio)))
