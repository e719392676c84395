"""The records this process holds: one per task that runs here or is waited on here.

A task's state lives in the store; a record exists in a process only while something of the task
lives there (its run, a waiter, a relay), so every waiter of the process shares one change event
and a newer state read from the store (written by another replica) reaches all of them.
"""

from __future__ import annotations

from .persisted import TaskState
from .state import TaskRecord

__all__ = ["LiveRecords", "adopt"]


def adopt(record: TaskRecord, state: TaskState) -> None:
    """Take a newer state read from the store, and wake whoever waits on the old one."""
    if state.version > record.state.version:
        record.state = state
        record.wake_waiters()
        if state.is_terminal and record.scope is not None:
            record.scope.cancel()  # ended elsewhere (cancelled on another replica): stop here


class LiveRecords:
    """Task id -> the record of this process, with how many waiters hold it."""

    def __init__(self) -> None:
        self._records: dict[str, TaskRecord] = {}
        self._watchers: dict[str, int] = {}

    def get(self, task_id: str) -> TaskRecord | None:
        return self._records.get(task_id)

    def add(self, record: TaskRecord) -> None:
        self._records[record.task.task_id] = record

    def all(self) -> list[TaskRecord]:
        return list(self._records.values())

    def running(self) -> list[TaskRecord]:
        """The records whose work runs in this process."""
        return [record for record in self._records.values() if record.scope is not None]

    def record_of(self, state: TaskState) -> TaskRecord:
        """This process's record for ``state`` (a fresh one if nothing of it lives here)."""
        record = self._records.get(state.task_id)
        if record is None:
            return TaskRecord(state)
        adopt(record, state)
        return record

    def drop(self, task_id: str) -> None:
        """The task is gone from the store: forget it here, and wake its waiters to find out."""
        record = self._records.pop(task_id, None)
        if record is not None:
            record.wake_waiters()

    def watch(self, record: TaskRecord) -> TaskRecord:
        """Register interest in a task's changes; the canonical record of this process for it."""
        canonical = self._records.setdefault(record.task.task_id, record)
        self._watchers[record.task.task_id] = self._watchers.get(record.task.task_id, 0) + 1
        return canonical

    def unwatch(self, record: TaskRecord) -> None:
        task_id = record.task.task_id
        left = self._watchers.get(task_id, 0) - 1
        if left > 0:
            self._watchers[task_id] = left
            return
        self._watchers.pop(task_id, None)
        self.release_if_idle(record)

    def release_if_idle(self, record: TaskRecord) -> None:
        """Forget a record nothing here uses any more (no run, no waiter): the store has the task."""
        task_id = record.task.task_id
        if record.scope is None and not self._watchers.get(task_id) and self._records.get(task_id) is record:
            del self._records[task_id]
