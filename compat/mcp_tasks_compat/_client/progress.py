"""Progress callbacks: the SDK's ``progress_callback`` fed by a plain call's progress and a task's statuses.

For callers that only know ``progress_callback`` (agent frameworks): :class:`ProgressRelay` makes
one callback of both, so progress handed on never goes back and never repeats itself.
"""

from __future__ import annotations

import inspect

from ..core.model import Task
from .protocols import OnProgress, OnStatus, ProgressSink

__all__ = ["ProgressRelay", "progress_sink", "statuses_as_progress"]


def progress_sink(on_progress: OnProgress | None) -> ProgressSink | None:
    """``on_progress`` (sync or async) as the async ``progress_callback`` the SDK calls."""
    if on_progress is None:
        return None

    async def sink(progress: float, total: float | None, message: str | None) -> None:
        outcome = on_progress(progress, total, message)
        if inspect.isawaitable(outcome):
            await outcome

    return sink


_Reported = tuple[float, "float | None", "str | None"]


class ProgressRelay:
    """One progress callback fed by a call's ``notifications/progress`` and its task's statuses.

    A status carrying the tool's own numbers (``Task.progress``, this library's ``_meta``) is
    handed on with them; one without counts on by one from the last value handed on (a plain
    call's progress before the call became a task included), so progress never goes back. The
    same (progress, total, message) is never handed on twice in a row (a task ending with the
    message of its last step adds no callback), nor a status without a message.
    """

    def __init__(self, on_progress: OnProgress) -> None:
        self._on_progress = on_progress
        self._last: dict[str | None, _Reported] = {}
        """What was last handed on, per task (``None``: the plain call's own notifications)."""

    async def report(self, progress: float, total: float | None, message: str | None) -> None:
        """A plain call's ``notifications/progress`` (the SDK's ``progress_callback``)."""
        await self._hand_on(None, (progress, total, message))

    async def on_status(self, task: Task) -> None:
        """A task's status, as ``on_status`` receives it."""
        last = self._last.get(task.task_id) or self._last.get(None)
        if task.status_message is not None:
            if task.progress is not None:
                reported = (task.progress.progress, task.progress.total, task.status_message)
            elif last is not None and last[2] == task.status_message:
                reported = last  # the same step again (e.g. the terminal status): not a new one
            else:
                reported = ((last[0] if last is not None else 0.0) + 1.0, None, task.status_message)
            await self._hand_on(task.task_id, reported)
        if task.is_terminal:
            self._last.pop(task.task_id, None)

    async def _hand_on(self, key: str | None, reported: _Reported) -> None:
        last = self._last.get(key) or (self._last.get(None) if key is not None else None)
        self._last[key] = reported
        if reported == last:
            return
        outcome = self._on_progress(*reported)
        if inspect.isawaitable(outcome):
            await outcome


def statuses_as_progress(on_status: OnStatus | None, on_progress: OnProgress) -> OnStatus:
    """The ``on_status`` a session's call uses: ``on_status`` when there is one, else the task's
    statuses handed to ``on_progress`` as ``(progress, total, message)`` (:class:`ProgressRelay`).

    For callers that only know the SDK's ``progress_callback`` (agent frameworks). With an
    ``on_status`` (the call's or the session's), statuses go there only, so none arrives twice
    (docs/client.md).
    """
    if on_status is not None:
        return on_status
    return ProgressRelay(on_progress).on_status
