"""The task lifecycle as one table of truth.

working ⇄ input_required → completed | failed | cancelled; terminal is final.  Anything not in
:data:`TRANSITIONS` raises :class:`~mcp_tasks_compat.errors.TaskStateError`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from ..errors import INVALID_PARAMS, TaskStateError
from ._model import TaskStatus

__all__ = ["TRANSITIONS", "TaskEvent", "next_status"]


class TaskEvent(str, enum.Enum):
    """What can happen to a task."""

    NEED_INPUT = "need_input"
    INPUT_RECEIVED = "input_received"
    COMPLETE = "complete"
    FAIL = "fail"
    CANCEL = "cancel"


_W, _I = TaskStatus.WORKING, TaskStatus.INPUT_REQUIRED
_C, _F, _X = TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED

TRANSITIONS: Final[Mapping[tuple[TaskStatus, TaskEvent], TaskStatus]] = MappingProxyType(
    {
        (_W, TaskEvent.NEED_INPUT): _I,
        (_W, TaskEvent.COMPLETE): _C,
        (_W, TaskEvent.FAIL): _F,
        (_W, TaskEvent.CANCEL): _X,
        (_I, TaskEvent.INPUT_RECEIVED): _W,
        (_I, TaskEvent.NEED_INPUT): _I,  # another request while still waiting
        (_I, TaskEvent.COMPLETE): _C,
        (_I, TaskEvent.FAIL): _F,
        (_I, TaskEvent.CANCEL): _X,
    }
)


def next_status(current: TaskStatus, event: TaskEvent) -> TaskStatus:
    """The status after ``event``; raises ``TaskStateError`` for anything not in the table.

    Cancelling a terminal task carries JSON-RPC -32602, as 2025-11-25 requires of ``tasks/cancel``.
    """
    try:
        return TRANSITIONS[(current, event)]
    except KeyError:
        if current.is_terminal and event is TaskEvent.CANCEL:
            raise TaskStateError(
                f"Cannot cancel task in terminal status '{current.value}'", jsonrpc_code=INVALID_PARAMS
            ) from None
        raise TaskStateError(
            f"illegal task transition: {event.value!r} in status '{current.value}'"
        ) from None
