"""Hypothesis strategies for the canonical task model and for arbitrary JSON."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from hypothesis import strategies as st

from mcp_tasks_compat.core import _codec_2025 as codec_2025
from mcp_tasks_compat.core._model import JsonRpcError, Task, TaskStatus

__all__ = [
    "detailed_tasks",
    "input_requests",
    "json_objects",
    "json_rpc_errors",
    "json_values",
    "millis",
    "mutated",
    "tasks",
    "timestamps",
    "tool_results",
]

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
json_values: st.SearchStrategy[Any] = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=8,
)
json_objects: st.SearchStrategy[dict[str, Any]] = st.dictionaries(
    st.text(max_size=6), json_values, max_size=3
)

_offsets = st.integers(min_value=-23 * 60, max_value=23 * 60).map(lambda m: timezone(timedelta(minutes=m)))
timestamps = st.datetimes(
    min_value=datetime(1970, 1, 2), max_value=datetime(2200, 1, 1), timezones=st.just(timezone.utc) | _offsets
)
"""Aware datetimes in any fixed offset; the codecs normalise to UTC and equality is by instant."""

millis = st.integers(min_value=0, max_value=2**53)

_ANY_STATUS = st.sampled_from(list(TaskStatus))


@st.composite
def tasks(draw: st.DrawFn, statuses: st.SearchStrategy[TaskStatus] = _ANY_STATUS) -> Task:
    """A task with only the fields both dialects share (no result, error or input requests)."""
    return Task(
        task_id=draw(st.text(max_size=40)),
        status=draw(statuses),
        created_at=draw(timestamps),
        last_updated_at=draw(timestamps),
        ttl_ms=draw(st.none() | millis),
        poll_interval_ms=draw(st.none() | millis),
        status_message=draw(st.none() | st.text(max_size=40)),
    )


_meta_without_related = st.dictionaries(
    st.text(max_size=8).filter(lambda key: key != codec_2025.RELATED_TASK_KEY),
    json_values,
    min_size=1,
    max_size=3,
)

tool_results: st.SearchStrategy[dict[str, Any]] = st.fixed_dictionaries(
    {
        "content": st.lists(
            st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=20)}), max_size=3
        )
    },
    optional={"isError": st.booleans(), "structuredContent": json_objects, "_meta": _meta_without_related},
)
"""``CallToolResult``-shaped dicts. A ``_meta``, when present, is non-empty and has no related-task key
(2025-11-25 adds and strips that key, so an empty or pre-tagged ``_meta`` cannot survive a round trip)."""

json_rpc_errors = st.builds(
    JsonRpcError,
    code=st.integers(min_value=-(2**31), max_value=2**31),
    message=st.text(max_size=30),
    data=st.none() | json_values.filter(lambda value: value is not None),
)

input_requests: st.SearchStrategy[dict[str, dict[str, Any]]] = st.dictionaries(
    st.text(max_size=8),
    st.fixed_dictionaries(
        {"method": st.sampled_from(["elicitation/create", "sampling/createMessage", "roots/list"])},
        optional={"params": json_objects},
    ),
    max_size=3,
)


@st.composite
def detailed_tasks(draw: st.DrawFn) -> Task:
    """A 2026-07-28 DetailedTask: the status-specific payload present exactly when its status allows."""
    task = draw(tasks())
    if task.status is TaskStatus.COMPLETED:
        return task.evolve(result=draw(st.none() | tool_results))
    if task.status is TaskStatus.FAILED:
        return task.evolve(error=draw(json_rpc_errors))
    if task.status is TaskStatus.INPUT_REQUIRED:
        return task.evolve(input_requests=draw(input_requests))
    return task


@st.composite
def mutated(draw: st.DrawFn, valid: st.SearchStrategy[Any]) -> Any:
    """A valid wire value with one nested key deleted or replaced by arbitrary JSON.

    Random JSON rarely gets past the first check of a decoder; near-valid input reaches the deep ones.
    """
    value = draw(valid)
    if not isinstance(value, dict) or not value:
        return value
    root: dict[str, Any] = value
    node = root
    while True:
        key = draw(st.sampled_from(sorted(node)))
        child = node[key]
        if isinstance(child, dict) and child and draw(st.booleans()):
            node = child
            continue
        if draw(st.booleans()):
            del node[key]
        else:
            node[key] = draw(json_values)
        return root
