"""Progress callbacks: ``on_progress`` / the SDK's ``progress_callback`` fed by a plain call's
progress and a task's statuses.

:class:`ProgressRelay` makes one callback of both, so progress handed on never goes back and never
repeats itself; :func:`call_progress` wires it for a call (every entry point goes through it).
"""

from __future__ import annotations

import inspect

from ..core._model import Task
from .protocols import OnProgress, OnStatus, ProgressSink

__all__ = ["ProgressRelay", "call_progress", "statuses_as_progress"]


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


def call_progress(
    on_status: OnStatus | None, on_progress: OnProgress | None
) -> tuple[OnStatus | None, ProgressSink | None]:
    """A call's ``on_status`` and the SDK ``progress_callback`` its request carries.

    ``on_progress`` hears the call's ``notifications/progress`` and, where no ``on_status`` is
    given, the statuses of the task it becomes, as ``(progress, total, message)``: one
    :class:`ProgressRelay` per call, so a call that starts plain and becomes a task (2026-07-28
    inline grace) hears both parts once each. With an ``on_status``, statuses go there only, so
    none arrives twice (docs/client.md).
    """
    if on_progress is None:
        return on_status, None
    relay = ProgressRelay(on_progress)
    return (on_status if on_status is not None else relay.on_status), relay.report


def statuses_as_progress(on_status: OnStatus | None, on_progress: OnProgress) -> OnStatus:
    """The ``on_status`` of a session whose calls carry no callback of their own (``mcp.Client``
    with ``tasks_extension(on_progress=...)``): ``on_status`` when there is one, else the task's
    statuses handed to ``on_progress`` (:func:`call_progress`)."""
    status, _progress = call_progress(on_status, on_progress)
    assert status is not None
    return status
