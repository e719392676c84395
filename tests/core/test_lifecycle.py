"""The lifecycle table: every (status, event) pair, and a state machine checked against a model.

Spec (2025-11-25 tasks.mdx, SEP-2663): working -> input_required | terminal; input_required ->
working | terminal; terminal is final. Receivers MUST reject ``tasks/cancel`` of a terminal task
with -32602, and a cancelled task stays cancelled even if its work finishes.
"""

from __future__ import annotations

import pytest
from hypothesis import given, note
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, invariant, rule

from mcp_tasks_compat.core._lifecycle import TRANSITIONS, TaskEvent, next_status
from mcp_tasks_compat.core._model import TaskStatus
from mcp_tasks_compat.errors import INVALID_PARAMS, TaskStateError

W, N = TaskStatus.WORKING, TaskStatus.INPUT_REQUIRED  # N: needs input
C, F, X = TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED

# The spec, written out by hand (not derived from TRANSITIONS): None means "illegal".
EXPECTED: dict[TaskStatus, dict[TaskEvent, TaskStatus | None]] = {
    W: {
        TaskEvent.NEED_INPUT: N,
        TaskEvent.INPUT_RECEIVED: None,  # nothing was asked
        TaskEvent.COMPLETE: C,
        TaskEvent.FAIL: F,
        TaskEvent.CANCEL: X,
    },
    N: {
        TaskEvent.NEED_INPUT: N,  # a further request while still waiting
        TaskEvent.INPUT_RECEIVED: W,
        TaskEvent.COMPLETE: C,
        TaskEvent.FAIL: F,
        TaskEvent.CANCEL: X,
    },
    C: dict.fromkeys(TaskEvent),
    F: dict.fromkeys(TaskEvent),
    X: dict.fromkeys(TaskEvent),
}

ALL_PAIRS = [(status, event) for status in TaskStatus for event in TaskEvent]


def test_the_expected_table_covers_every_pair() -> None:
    assert len(ALL_PAIRS) == len(TaskStatus) * len(TaskEvent) == 25
    assert {(s, e) for s, row in EXPECTED.items() for e in row} == set(ALL_PAIRS)


def test_transitions_table_is_exactly_the_legal_pairs() -> None:
    legal = {(s, e): target for s, row in EXPECTED.items() for e, target in row.items() if target is not None}
    assert dict(TRANSITIONS) == legal


@pytest.mark.parametrize(("status", "event"), ALL_PAIRS, ids=[f"{s.value}-{e.value}" for s, e in ALL_PAIRS])
def test_every_pair_is_a_table_hit_or_a_task_state_error(status: TaskStatus, event: TaskEvent) -> None:
    expected = EXPECTED[status][event]
    if expected is not None:
        assert next_status(status, event) is expected
        return
    with pytest.raises(TaskStateError) as caught:
        next_status(status, event)
    error = caught.value
    assert error.code == "task-state"
    if status.is_terminal and event is TaskEvent.CANCEL:
        assert error.jsonrpc_code == INVALID_PARAMS == -32602
        assert error.message == f"Cannot cancel task in terminal status '{status.value}'"
    else:
        assert error.message == f"illegal task transition: '{event.value}' in status '{status.value}'"


@given(st.sampled_from(list(TaskStatus)), st.sampled_from(list(TaskEvent)))
def test_terminal_statuses_accept_nothing_and_active_ones_stay_in_the_status_set(
    status: TaskStatus, event: TaskEvent
) -> None:
    try:
        after = next_status(status, event)
    except TaskStateError:
        assert status.is_terminal or (status, event) == (W, TaskEvent.INPUT_RECEIVED)
    else:
        assert not status.is_terminal
        assert isinstance(after, TaskStatus)


def test_the_table_is_read_only() -> None:
    with pytest.raises(TypeError):
        TRANSITIONS[(C, TaskEvent.CANCEL)] = X  # type: ignore[index]


# --- the machine against a simple model ---------------------------------------------------------

_ACTIVE = {"working", "input_required"}
_ENDS = {"complete": "completed", "fail": "failed", "cancel": "cancelled"}


def model_step(state: str, event: str) -> str | None:
    """A second, independent statement of the rules, on plain strings."""
    if state not in _ACTIVE:
        return None
    if event == "need_input":
        return "input_required"
    if event == "input_received":
        return "working" if state == "input_required" else None
    return _ENDS[event]


class LifecycleMachine(RuleBasedStateMachine):
    """Drives many tasks through random events; the implementation must agree with the model."""

    handles = Bundle("handles")

    def __init__(self) -> None:
        super().__init__()
        self.real: dict[int, TaskStatus] = {}
        self.model: dict[int, str] = {}
        self.ended: dict[int, TaskStatus] = {}

    @rule(target=handles)
    def create(self) -> int:
        handle = len(self.real)
        self.real[handle] = TaskStatus.WORKING
        self.model[handle] = "working"
        return handle

    @rule(handle=handles, event=st.sampled_from(list(TaskEvent)))
    def apply(self, handle: int, event: TaskEvent) -> None:
        before = self.real[handle]
        expected = model_step(self.model[handle], event.value)
        note(f"task {handle}: {before.value} --{event.value}--> {expected}")
        try:
            after = next_status(before, event)
        except TaskStateError as error:
            refusal = error
        else:
            refusal = None
        if refusal is not None:
            assert expected is None, f"rejected a legal {event.value} in {before.value}"
            if before.is_terminal and event is TaskEvent.CANCEL:
                assert refusal.jsonrpc_code == INVALID_PARAMS
            return
        assert expected is not None, f"accepted an illegal {event.value} in {before.value}"
        assert after.value == expected
        self.real[handle] = after
        self.model[handle] = expected
        if after.is_terminal:
            self.ended[handle] = after

    @rule(handle=consumes(handles))
    def forget(self, handle: int) -> None:
        # Retiring handles keeps the bundle small so long runs still reach fresh tasks.
        assert handle in self.real

    @invariant()
    def implementation_agrees_with_model(self) -> None:
        assert {h: s.value for h, s in self.real.items()} == self.model

    @invariant()
    def terminal_is_final(self) -> None:
        for handle, status in self.ended.items():
            assert self.real[handle] is status


TestLifecycleMachine = LifecycleMachine.TestCase
