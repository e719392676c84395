"""What a store keeps of a task: :class:`TaskState`, frozen and serialisable, and its JSON form.

The same state is read by every process that shares a store (a restarted server, another
replica), so it holds only values that mean the same there: the task, who owns it, its dialect
and tool, the input answers not yet picked up, **wall-clock** deadlines, which replica runs the
work, under which claim (a fencing token) and until when that replica's lease holds, and a version
for compare-and-set. Everything
that exists only in the process running the work (cancel scope, events, listeners) is the live
run (``records.TaskRecord``), never stored.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from types import MappingProxyType
from typing import Any, Final, cast

from ...core._model import (
    PROGRESS_META_KEY,
    JsonRpcError,
    Progress,
    Task,
    TaskStatus,
    format_timestamp,
    parse_timestamp,
)
from ...dialects import ALL_DIALECTS, Dialect, RunOn

__all__ = [
    "SCHEMA_VERSION",
    "RunOn",
    "TaskState",
    "WrittenStates",
    "dumps",
    "loads",
    "state_from_json",
    "state_to_json",
]

SCHEMA_VERSION: Final = 1
"""The version of :func:`state_to_json`'s shape; a durable store refuses data of a newer one."""

_EMPTY: Final[Mapping[str, Any]] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class TaskState:
    """One task as a store keeps it.

    ``version`` is the store's compare-and-set token: :meth:`~.contract.TaskStore.save` succeeds only
    when the stored version equals it, and returns the state with the next version.
    ``runner``/``lease_until``: the replica running the work and until when its claim holds; a
    non-terminal task whose lease ran out belongs to a replica that stopped, and is failed.
    ``claim``: the fencing token of the current run, one more at each claim (the first run, a
    re-run): a write of the run carries the token it was started under, and the store refuses it
    once a newer claim exists (:meth:`~.contract.TaskStore.save`'s ``fence``), so a replica that
    was paused past its lease never overwrites the run that replaced it (0: never claimed).
    ``expires_at``: when the store may drop the task (``None``: never), wall clock, UTC.
    ``rerun``: the tool opted in to be run again, rather than failed, when its replica stopped;
    ``arguments`` (kept only then) are the call's, for that run; ``attempt`` counts its runs from 1.
    ``run_on``: ``"workers"`` for a task whose runs are queued for worker processes (the server
    that created it runs nothing of it); while no worker claims it (``runner`` is ``None``) it is
    :attr:`queued`, and a store with a queue delivers it to one worker (:mod:`.queue`).
    ``trace_context``: the W3C trace context (``traceparent``, ``tracestate``) of the request that
    created the task, so its run, a re-run and a cancel on any replica join that trace (empty
    when nothing was traced; absent from records written before it existed).
    """

    task: Task
    dialect: Dialect
    owner: str | None
    tool_name: str
    expires_at: datetime | None = None
    input_responses: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: _EMPTY)
    input_serial: int = 0
    runner: str | None = None
    lease_until: datetime | None = None
    version: int = 0
    rerun: bool = False
    arguments: Mapping[str, Any] | None = None
    attempt: int = 1
    claim: int = 0
    trace_context: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    run_on: RunOn = "here"

    @property
    def queued(self) -> bool:
        """Waiting in the workers' queue: a task run by workers, not ended, that no one claims now."""
        return self.run_on == "workers" and self.runner is None and not self.task.is_terminal

    @property
    def task_id(self) -> str:
        return self.task.task_id

    @property
    def is_terminal(self) -> bool:
        return self.task.is_terminal

    def evolve(self, **changes: Any) -> TaskState:
        return replace(self, **changes)


def _time(value: datetime | None) -> str | None:
    return None if value is None else format_timestamp(value)


def _parse_time(value: object) -> datetime | None:
    return None if value is None else parse_timestamp(str(value))


def _task_to_json(task: Task) -> dict[str, Any]:
    return {
        "taskId": task.task_id,
        "status": task.status.value,
        "createdAt": format_timestamp(task.created_at),
        "lastUpdatedAt": format_timestamp(task.last_updated_at),
        "ttlMs": task.ttl_ms,
        "pollIntervalMs": task.poll_interval_ms,
        "statusMessage": task.status_message,
        "result": None if task.result is None else dict(task.result),
        "error": None if task.error is None else task.error.to_wire(),
        "inputRequests": {key: dict(value) for key, value in task.input_requests.items()},
        "progress": None if task.progress is None else task.progress.to_meta()[PROGRESS_META_KEY],
    }


def _task_from_json(data: Mapping[str, Any]) -> Task:
    error = data.get("error")
    result = data.get("result")
    requests = cast("Mapping[str, Mapping[str, Any]]", data.get("inputRequests") or {})
    return Task(
        task_id=str(data["taskId"]),
        status=TaskStatus(data["status"]),
        created_at=parse_timestamp(str(data["createdAt"])),
        last_updated_at=parse_timestamp(str(data["lastUpdatedAt"])),
        ttl_ms=data.get("ttlMs"),
        poll_interval_ms=data.get("pollIntervalMs"),
        status_message=data.get("statusMessage"),
        result=None if result is None else dict(cast("Mapping[str, Any]", result)),
        error=None
        if error is None
        else JsonRpcError(int(error["code"]), str(error["message"]), error.get("data")),
        input_requests=MappingProxyType({str(k): dict(v) for k, v in requests.items()}),
        progress=Progress.from_meta({PROGRESS_META_KEY: data.get("progress")}),
    )


def _arguments(value: object) -> Mapping[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise TypeError(f"arguments must be an object, not {type(value).__name__}")
    return dict(cast("Mapping[str, Any]", value))


def _trace_context(value: object) -> Mapping[str, str]:
    if not value:
        return _EMPTY
    if not isinstance(value, Mapping):
        raise TypeError(f"traceContext must be an object, not {type(value).__name__}")
    return MappingProxyType({str(k): str(v) for k, v in cast("Mapping[str, Any]", value).items()})


def _run_on(value: object) -> RunOn:
    if value is None or value == "here":
        return "here"
    if value == "workers":
        return "workers"
    raise TypeError(f"runOn must be 'here' or 'workers', not {value!r}")


def state_to_json(state: TaskState) -> dict[str, Any]:
    """The state as JSON-compatible values (what a durable store writes); ``traceContext`` and
    ``runOn`` only when set, so a task without them is written as before."""
    data: dict[str, Any] = {
        "schema": SCHEMA_VERSION,
        "task": _task_to_json(state.task),
        "dialect": state.dialect,
        "owner": state.owner,
        "toolName": state.tool_name,
        "expiresAt": _time(state.expires_at),
        "inputResponses": {key: dict(value) for key, value in state.input_responses.items()},
        "inputSerial": state.input_serial,
        "runner": state.runner,
        "leaseUntil": _time(state.lease_until),
        "version": state.version,
        "rerun": state.rerun,
        "arguments": None if state.arguments is None else dict(state.arguments),
        "attempt": state.attempt,
        "claim": state.claim,
    }
    if state.trace_context:
        data["traceContext"] = dict(state.trace_context)
    if state.run_on != "here":
        data["runOn"] = state.run_on
    return data


def state_from_json(data: Mapping[str, Any]) -> TaskState:
    """The inverse of :func:`state_to_json`; ``ValueError`` for data this version cannot read."""
    schema = data.get("schema")
    if schema != SCHEMA_VERSION:
        raise ValueError(f"task state of schema {schema!r}; this mcp-tasks-compat reads {SCHEMA_VERSION}")
    dialect = data.get("dialect")
    if dialect not in ALL_DIALECTS:
        raise ValueError(f"task state of unknown dialect {dialect!r}")
    try:
        responses = cast("Mapping[str, Mapping[str, Any]]", data.get("inputResponses") or {})
        return TaskState(
            task=_task_from_json(cast("Mapping[str, Any]", data["task"])),
            dialect=dialect,
            owner=cast("str | None", data.get("owner")),
            tool_name=str(data.get("toolName") or ""),
            expires_at=_parse_time(data.get("expiresAt")),
            input_responses=MappingProxyType({str(k): dict(v) for k, v in responses.items()}),
            input_serial=int(data.get("inputSerial") or 0),
            runner=cast("str | None", data.get("runner")),
            lease_until=_parse_time(data.get("leaseUntil")),
            version=int(data.get("version") or 0),
            rerun=bool(data.get("rerun")),
            arguments=_arguments(data.get("arguments")),
            attempt=int(data.get("attempt") or 1),
            claim=int(data.get("claim") or 0),
            trace_context=_trace_context(data.get("traceContext")),
            run_on=_run_on(data.get("runOn")),
        )
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"malformed task state: {exc!r}") from None


def dumps(state: TaskState) -> str:
    """Compact JSON text of :func:`state_to_json` (keys sorted, so equal states give equal text)."""
    return json.dumps(state_to_json(state), separators=(",", ":"), sort_keys=True)


def loads(text: str | bytes) -> TaskState:
    data: object = json.loads(text)
    if not isinstance(data, Mapping):
        raise ValueError("task state is not a JSON object")
    return state_from_json(cast("Mapping[str, Any]", data))


class WrittenStates:
    """The states a durable store wrote last, by their text: a read that finds the very text
    written returns that state without parsing it again.

    Most reads of a store are of tasks this process just wrote (a status read while its run ends
    here); parsing the JSON back was a visible share of a task's CPU. Only text equal to a text
    written here is answered from here (a state's text is all of it, and states are frozen, so
    sharing one is safe); anything else (a write of another process) is parsed as before. A text
    remembered for a write that then lost its compare-and-set is harmless: what is stored is
    another text. Bounded: the oldest entries are forgotten.
    """

    __slots__ = ("_limit", "_states")

    def __init__(self, limit: int = 1024) -> None:
        self._limit = limit
        self._states: dict[str, TaskState] = {}

    def dumps(self, state: TaskState) -> str:
        """:func:`dumps`, the text remembered with its state."""
        text = dumps(state)
        states = self._states
        states[text] = state
        if len(states) > self._limit:
            del states[next(iter(states))]
        return text

    def recall(self, text: object) -> TaskState | None:
        """The state written here as ``text``, if it is remembered."""
        return self._states.get(text) if isinstance(text, str) else None
