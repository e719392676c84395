"""The canonical task model: statuses, timestamps, TTL arithmetic, immutability."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_tasks_compat.core._model import (
    TERMINAL_STATUSES,
    UNLIMITED_TTL,
    JsonRpcError,
    Task,
    TaskStatus,
    format_timestamp,
    parse_timestamp,
)

from .strategies import tasks, timestamps

UTC = timezone.utc
T0 = datetime(2025, 11, 25, 10, 30, tzinfo=UTC)


def test_the_five_statuses_are_the_wire_strings_of_both_dialects() -> None:
    assert [status.value for status in TaskStatus] == [
        "working",
        "input_required",
        "completed",
        "failed",
        "cancelled",
    ]
    assert {TaskStatus("completed"), TaskStatus("failed"), TaskStatus("cancelled")} == TERMINAL_STATUSES


@pytest.mark.parametrize("status", list(TaskStatus))
def test_terminal_flag_matches_the_terminal_set(status: TaskStatus) -> None:
    task = Task(task_id="t", status=status, created_at=T0, last_updated_at=T0)
    assert status.is_terminal is (status in TERMINAL_STATUSES)
    assert task.is_terminal is status.is_terminal


def test_unlimited_ttl_is_none() -> None:
    assert UNLIMITED_TTL is None
    task = Task(
        task_id="t", status=TaskStatus.WORKING, created_at=T0, last_updated_at=T0, ttl_ms=UNLIMITED_TTL
    )
    assert task.expires_at() is None


@given(created=timestamps, ttl_ms=st.integers(min_value=0, max_value=10**12))
def test_expiry_counts_from_creation(created: datetime, ttl_ms: int) -> None:
    task = Task(
        task_id="t", status=TaskStatus.WORKING, created_at=created, last_updated_at=created, ttl_ms=ttl_ms
    )
    assert task.expires_at() == created + timedelta(milliseconds=ttl_ms)


@given(tasks())
def test_task_is_frozen_and_evolve_copies(task: Task) -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        task.status = TaskStatus.CANCELLED  # type: ignore[misc]
    before = task.status_message
    changed = task.evolve(status_message="elsewhere")
    assert changed.status_message == "elsewhere"
    assert changed.task_id == task.task_id
    assert task.status_message == before


def test_json_rpc_error_wire_drops_absent_data_only() -> None:
    assert JsonRpcError(-32603, "boom").to_wire() == {"code": -32603, "message": "boom"}
    assert JsonRpcError(-32000, "x", data=0).to_wire() == {"code": -32000, "message": "x", "data": 0}
    assert JsonRpcError(-32000, "x", data={"a": [1]}).to_wire()["data"] == {"a": [1]}


# --- timestamps --------------------------------------------------------------------------------


@given(timestamps)
def test_timestamps_round_trip_exactly_to_the_microsecond(value: datetime) -> None:
    text = format_timestamp(value)
    assert text.endswith("Z")
    parsed = parse_timestamp(text)
    assert parsed == value
    assert parsed.tzinfo is not None
    assert parsed.utcoffset() == timedelta(0)


def test_timestamp_formats() -> None:
    assert format_timestamp(T0) == "2025-11-25T10:30:00Z"
    assert format_timestamp(T0.replace(microsecond=5)) == "2025-11-25T10:30:00.000005Z"
    # A naive datetime is taken as UTC rather than as local time.
    assert format_timestamp(datetime(2025, 11, 25, 10, 30)) == "2025-11-25T10:30:00Z"
    plus_two = timezone(timedelta(hours=2))
    assert format_timestamp(datetime(2025, 11, 25, 12, 30, tzinfo=plus_two)) == "2025-11-25T10:30:00Z"


@pytest.mark.parametrize(
    "text",
    [
        "2025-11-25T10:30:00Z",
        "2025-11-25T10:30:00z",
        "2025-11-25T10:30:00+00:00",
        "2025-11-25T12:30:00+02:00",
        "2025-11-25T10:30:00",
        " 2025-11-25T10:30:00.000Z ",
    ],
)
def test_parse_accepts_what_peers_send(text: str) -> None:
    assert parse_timestamp(text) == T0


@pytest.mark.parametrize("text", ["", "yesterday", "2025-13-01T00:00:00Z", "2025-11-25T25:00:00Z", "Z"])
def test_parse_rejects_non_timestamps_with_value_error(text: str) -> None:
    with pytest.raises(ValueError, match=r"."):
        parse_timestamp(text)
