"""One raw 2025-11-25 conversation with ``mcp-tasks-compat example-server``, and how to compare two.

The conversation (issue 24, "Targets") is spoken as raw JSON-RPC over streamable HTTP to a real
server process on 127.0.0.1, so whatever the SDK under the server adds or changes is seen as a
client would see it. :func:`run_conversation` records every answer; :func:`normalise` masks what
differs between two runs of the same server (task ids, timestamps) and replaces each task's
``pollInterval`` by whether it follows the age rule (:class:`~mcp_tasks_compat.server.PollPolicy`)
for the age the task had when it was read, so a hint that ignores the task's age stays visible;
:func:`compare` puts two normalised transcripts side by side; :func:`wrong_answers` lists what
2025-11-25 itself requires of each step, so two servers that are wrong alike do not pass.

    python -m tests.interop.differential_2025 PYTHON [PYTHON]

prints the normalised transcript of the example server under each python (and the differences
between the first two), from the repository root.
"""

from __future__ import annotations

import difflib
import itertools
import json
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Final, cast

import httpx

from mcp_tasks_compat.core._model import parse_timestamp
from mcp_tasks_compat.server import PollPolicy
from mcp_tasks_compat.testing import HttpServerProcess

__all__ = [
    "AGREED_AS_THE_SDK_DOES",
    "CLIENT_CAPABILITIES",
    "EXPECTED",
    "FOLLOWS_AGE_RULE",
    "ServerSdk",
    "Step",
    "compare",
    "converse",
    "example_server_command",
    "normalise",
    "poll_hint_verdict",
    "render_transcript",
    "run_conversation",
    "server_sdk",
    "wrong_answers",
]

PROTOCOL: Final = "2025-11-25"
CLIENT_CAPABILITIES: Final[Mapping[str, Any]] = {
    "tasks": {
        "list": {},
        "cancel": {},
        "requests": {"elicitation": {"create": {}}, "sampling": {"createMessage": {}}},
    }
}
"""A client that hosts no tasks of its own but lists and cancels the server's (2025-11-25 schema)."""

ANSWER_BOUND_S: Final = 60.0
"""Longest one answer may take (``tasks/result`` waits for a 0.3 s tool; the rest is slack)."""

WATCH_AGES_S: Final = (0.1, 1.2)
"""The ages at which the long task is read: inside the hint's floor, and well past it."""

LONG_TOOL_S: Final = 120.0
"""The watched task's run: it is cancelled long before, so it is certainly running when read."""

UNKNOWN_TASK_ID: Final = "no-such-task"
BAD_CURSOR: Final = "not-a-cursor-this-server-issued"

TIMESTAMP_KEYS: Final = frozenset({"createdAt", "lastUpdatedAt"})
FOLLOWS_AGE_RULE: Final = "<follows the age rule>"
AGREED_AS_THE_SDK_DOES: Final = "<2025-11-25, or the newest version the server's SDK knows>"
RELATED_TASK_KEY: Final = "io.modelcontextprotocol/related-task"
TERMINAL: Final = frozenset({"completed", "failed", "cancelled"})
INVALID_PARAMS: Final = -32602
METHOD_NOT_FOUND: Final = -32601


_SDK_FACTS_CODE: Final = """
import importlib.metadata, json
version = importlib.metadata.version("mcp")
if version.startswith("1."):
    from mcp.types import LATEST_PROTOCOL_VERSION as latest
    agreed = min(latest, "2025-11-25")
else:
    agreed = "2025-11-25"
print(json.dumps([version, agreed]))
"""


@dataclass(frozen=True)
class ServerSdk:
    """The SDK a server python runs on, and the version its ``initialize`` agrees to for 2025-11-25.

    mcp 1.23.0 knows versions up to 2025-06-18 only (and still serves the 2025-11-25 task
    methods); every later SDK agrees to 2025-11-25. Which versions it knows is the SDK's, not ours.
    """

    python: str
    mcp_version: str
    agreed_version: str

    @property
    def label(self) -> str:
        return f"mcp {self.mcp_version} ({self.python})"


def server_sdk(python: str) -> ServerSdk:
    """Ask ``python`` (another virtual environment's, perhaps) which mcp it has and what it agrees to."""
    done = subprocess.run(
        [python, "-c", _SDK_FACTS_CODE], capture_output=True, text=True, timeout=60, check=True
    )
    mcp_version, agreed_version = json.loads(done.stdout)
    return ServerSdk(python, mcp_version, agreed_version)


def example_server_command(python: str) -> list[str]:
    """``mcp-tasks-compat example-server`` over streamable HTTP on a free port, run by ``python``."""
    return [python, "-m", "mcp_tasks_compat", "example-server", "--transport", "http", "--port", "0"]


@dataclass(frozen=True)
class Step:
    """One request of the conversation and its answer (``{"result": ...}`` or ``{"error": ...}``).

    ``sent`` and ``received`` bracket the moment the server answered (same host, same wall clock),
    so the age a task had when it was read lies between them.
    """

    name: str
    method: str
    params: Mapping[str, Any]
    answer: Mapping[str, Any]
    sent: datetime
    received: datetime


def _now() -> datetime:
    return datetime.now(timezone.utc)


class RawSession:
    """One MCP session over streamable HTTP, spoken as raw JSON-RPC (no SDK on this side)."""

    def __init__(self, client: httpx.Client, url: str, steps: list[Step]) -> None:
        self.client, self.url, self.steps = client, url, steps
        self.session_id: str | None = None
        self.protocol_version = PROTOCOL
        self._ids = itertools.count(1)

    def _headers(self) -> dict[str, str]:
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": self.protocol_version,
        }
        if self.session_id is not None:
            headers["mcp-session-id"] = self.session_id
        return headers

    def request(self, name: str, method: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        """Send one request, record it as the step ``name`` and return its answer."""
        request_id = next(self._ids)
        frame = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": dict(params)}
        sent = _now()
        response = self.client.post(self.url, json=frame, headers=self._headers(), timeout=ANSWER_BOUND_S)
        received = _now()
        self.session_id = response.headers.get("mcp-session-id", self.session_id)
        answer = _answer_in(response, request_id)
        self.steps.append(Step(name, method, params, answer, sent, received))
        return answer

    def notify(self, method: str) -> None:
        frame = {"jsonrpc": "2.0", "method": method}
        response = self.client.post(self.url, json=frame, headers=self._headers(), timeout=ANSWER_BOUND_S)
        assert response.status_code in (200, 202), f"{method}: HTTP {response.status_code} {response.text!r}"

    def initialize(self, name: str) -> Mapping[str, Any]:
        """``initialize`` asking for 2025-11-25 with the task capability, then ``initialized``."""
        answer = self.request(
            name,
            "initialize",
            {
                "protocolVersion": PROTOCOL,
                "capabilities": dict(CLIENT_CAPABILITIES),
                "clientInfo": {"name": "differential-2025", "version": "0"},
            },
        )
        result = answer.get("result")
        assert isinstance(result, Mapping), f"initialize was refused: {answer}"
        agreed = cast(Mapping[str, Any], result).get("protocolVersion")
        assert isinstance(agreed, str), f"initialize agreed on no version: {result}"
        self.protocol_version = agreed  # what later requests' header must carry
        self.notify("notifications/initialized")
        return answer


def _answer_in(response: httpx.Response, request_id: int) -> Mapping[str, Any]:
    """The JSON-RPC answer to ``request_id`` in a JSON body or an SSE stream (notifications skipped)."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        messages = [
            json.loads(line[5:].strip())
            for line in response.text.split("\n")  # not splitlines(): U+2028 may sit in the JSON
            if line.startswith("data:") and line[5:].strip()
        ]
    else:
        try:
            body = response.json()
        except ValueError:
            raise AssertionError(
                f"HTTP {response.status_code}, not JSON-RPC: {response.text[:500]!r}"
            ) from None
        messages = body if isinstance(body, list) else [body]
    for message in messages:
        if isinstance(message, dict) and message.get("id") == request_id:
            answer = cast(dict[str, Any], message)
            return {key: answer[key] for key in ("result", "error") if key in answer}
    raise AssertionError(f"HTTP {response.status_code}: no answer to request {request_id} in {messages!r}")


def _task_id(answer: Mapping[str, Any], step: str) -> str:
    try:
        return str(answer["result"]["task"]["taskId"])
    except (KeyError, TypeError):
        raise AssertionError(f"{step}: no task was created: {answer}") from None


def _wait_until_age(answer: Mapping[str, Any], age_s: float) -> None:
    """Let the clock reach the task's age ``age_s``: the hint to be checked is a function of it."""
    created = parse_timestamp(answer["result"]["task"]["createdAt"])
    time.sleep(max(0.0, (created + timedelta(seconds=age_s) - _now()).total_seconds()))


def _call(name: str, arguments: object, task: object = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if task is not None:
        params["task"] = task
    return params


def converse(url: str) -> list[Step]:
    """The conversation of issue 24 against the server at ``url``; every answer, in order."""
    steps: list[Step] = []
    with httpx.Client() as client:
        first = RawSession(client, url, steps)
        first.initialize("initialize")
        first.request("tools/list", "tools/list", {})

        watched = first.request(
            "tools/call slow_echo as a task (the watched task)",
            "tools/call",
            _call("slow_echo", {"text": "watched", "seconds": LONG_TOOL_S, "steps": 1}, {"ttl": 60_000}),
        )
        watched_id = _task_id(watched, "the watched task")
        for age_s in WATCH_AGES_S:
            _wait_until_age(watched, age_s)
            first.request(f"tasks/get the watched task at {age_s:g} s", "tasks/get", {"taskId": watched_id})

        quick = first.request(
            "tools/call slow_echo as a task (the quick task)",
            "tools/call",
            _call("slow_echo", {"text": "quick", "seconds": 0.3, "steps": 2}, {"ttl": 60_000}),
        )
        quick_id = _task_id(quick, "the quick task")
        first.request("tasks/result of the quick task", "tasks/result", {"taskId": quick_id})
        first.request("tasks/get the quick task, completed", "tasks/get", {"taskId": quick_id})
        first.request("tasks/cancel the finished quick task", "tasks/cancel", {"taskId": quick_id})
        first.request("tasks/cancel the running watched task", "tasks/cancel", {"taskId": watched_id})
        first.request("tasks/get the watched task, cancelled", "tasks/get", {"taskId": watched_id})
        first.request("tasks/result of the cancelled task", "tasks/result", {"taskId": watched_id})
        first.request("tasks/list", "tasks/list", {})
        first.request("tasks/list with a bad cursor", "tasks/list", {"cursor": BAD_CURSOR})
        first.request("tasks/get an unknown id", "tasks/get", {"taskId": UNKNOWN_TASK_ID})
        first.request(
            "tools/call with task.ttl -1", "tools/call", _call("slow_echo", {"text": "x"}, {"ttl": -1})
        )
        first.request(
            "tools/call with malformed arguments and params.task",
            "tools/call",
            _call("slow_echo", "not an object", {"ttl": 60_000}),
        )
        first.request("tools/call the required tool plainly", "tools/call", _call("must_task", {"text": "x"}))

        second = RawSession(client, url, steps)
        second.initialize("initialize another session")
        second.request("tasks/get the quick task from another session", "tasks/get", {"taskId": quick_id})
        second.request("tasks/list from another session", "tasks/list", {})
    return steps


def run_conversation(python: str) -> list[Step]:
    """Start the example server under ``python`` and hold the conversation with it."""
    with HttpServerProcess(example_server_command(python)) as url:
        return converse(url)


# --- normalising ---------------------------------------------------------------------------------


def _walk(value: object, visit: Callable[[Mapping[str, Any]], None]) -> None:
    if isinstance(value, Mapping):
        mapping = cast(Mapping[str, Any], value)
        visit(mapping)
        for item in mapping.values():
            _walk(item, visit)
    elif isinstance(value, list):
        for item in cast(list[Any], value):
            _walk(item, visit)


def _is_task(value: Mapping[str, Any]) -> bool:
    return isinstance(value.get("taskId"), str) and isinstance(value.get("status"), str)


def task_ids_in_order(steps: Sequence[Step]) -> list[str]:
    """Every task id the server handed out, in order of first appearance."""
    seen: list[str] = []

    def note(mapping: Mapping[str, Any]) -> None:
        if _is_task(mapping) and mapping["taskId"] not in seen:
            seen.append(mapping["taskId"])

    for step in steps:
        _walk(step.answer, note)
    return seen


def poll_hint_verdict(task: Mapping[str, Any], sent: datetime, received: datetime) -> str:
    """:data:`FOLLOWS_AGE_RULE`, or what the hint is and what the rule gives for the task's age.

    A running task's hint is computed when it is read, from the age it has then (between ``sent``
    and ``received``); an ended task keeps the hint of its last change, at ``lastUpdatedAt``.
    """
    policy = PollPolicy()
    hint = task.get("pollInterval")
    try:
        created = parse_timestamp(task["createdAt"])
        if task["status"] in TERMINAL:
            youngest = oldest = parse_timestamp(task["lastUpdatedAt"]) - created
        else:
            youngest, oldest = sent - created, received - created
    except (KeyError, TypeError, ValueError):
        return f"{hint!r} (no usable createdAt/lastUpdatedAt to check it against)"
    low_ms, high_ms = (max(0.0, age / timedelta(milliseconds=1)) for age in (youngest, oldest))
    wanted = range(policy.hint_ms(low_ms), policy.hint_ms(high_ms) + 1)
    if isinstance(hint, int) and not isinstance(hint, bool) and hint in wanted:
        return FOLLOWS_AGE_RULE
    return (
        f"{hint!r}, but the age rule gives {wanted.start}..{wanted.stop - 1} ms "
        f"at the task's age of {low_ms:.0f}..{high_ms:.0f} ms"
    )


def normalise(steps: Sequence[Step], sdk: ServerSdk) -> list[tuple[str, Any]]:
    """Each step as ``(name, answer)`` with task ids (``TASK1``...), timestamps and poll hints masked.

    Ids are numbered by first appearance, so the same conversation numbers them alike; an id is
    masked inside a message too. A poll hint becomes :data:`FOLLOWS_AGE_RULE` when it is what the
    rule gives for the task's age, else a sentence saying both. Two things the SDK owns are
    masked too: the agreed ``protocolVersion`` (:data:`AGREED_AS_THE_SDK_DOES` when it is the one
    ``sdk`` agrees to) and an empty ``capabilities.experimental`` (mcp 1.x always sends one; it
    declares nothing).
    """
    masks = {task_id: f"TASK{number}" for number, task_id in enumerate(task_ids_in_order(steps), start=1)}

    def mask_text(text: str) -> str:
        for task_id, mask in masks.items():
            text = text.replace(task_id, mask)
        return text

    def rewrite(value: object, step: Step) -> object:
        if isinstance(value, Mapping):
            mapping = cast(Mapping[str, Any], value)
            out: dict[str, Any] = {}
            for key, item in mapping.items():
                if key in TIMESTAMP_KEYS and isinstance(item, str):
                    out[key] = "<timestamp>"
                elif key == "protocolVersion" and step.method == "initialize":
                    out[key] = (
                        AGREED_AS_THE_SDK_DOES
                        if item == sdk.agreed_version
                        else (f"{item!r}, but mcp {sdk.mcp_version} agrees to {sdk.agreed_version!r}")
                    )
                elif key == "experimental" and item == {} and step.method == "initialize":
                    continue
                elif key == "pollInterval" and _is_task(mapping):
                    out[key] = poll_hint_verdict(mapping, step.sent, step.received)
                else:
                    out[key] = rewrite(item, step)
            return out
        if isinstance(value, list):
            return [rewrite(item, step) for item in cast(list[Any], value)]
        if isinstance(value, str):
            return mask_text(value)
        return value

    return [(step.name, rewrite(step.answer, step)) for step in steps]


# --- comparing -----------------------------------------------------------------------------------


COLUMN: Final = 72


def _side_by_side(left: object, right: object) -> str:
    """Both answers as indented JSON in two columns, aligned by :mod:`difflib`; ``|`` marks a
    line that differs, ``<`` or ``>`` one that only the left or the right answer has."""
    left_lines = json.dumps(left, indent=2, sort_keys=True).splitlines()
    right_lines = json.dumps(right, indent=2, sort_keys=True).splitlines()
    rows: list[str] = []
    cut: list[str] = []

    def row(one: str, mark: str, other: str) -> None:
        rows.append(f"  {one[:COLUMN]:<{COLUMN}} {mark} {other[:COLUMN]}")
        if mark != " ":
            cut.extend(
                f"  {side} in full: {line.strip()}"
                for side, line in (("left", one), ("right", other))
                if len(line) > COLUMN
            )

    matcher = difflib.SequenceMatcher(a=left_lines, b=right_lines, autojunk=False)
    for tag, a_start, a_end, b_start, b_end in matcher.get_opcodes():
        ones, others = left_lines[a_start:a_end], right_lines[b_start:b_end]
        if tag == "equal":
            for one, other in zip(ones, others, strict=True):
                row(one, " ", other)
            continue
        for one, other in itertools.zip_longest(ones, others):
            mark = "|" if one is not None and other is not None else "<" if other is None else ">"
            row(one or "", mark, other or "")
    rows.extend(cut)  # a cut line in full, so a message that differs at its end shows it
    return "\n".join(rows)


def compare(
    left: Sequence[tuple[str, Any]], right: Sequence[tuple[str, Any]], left_label: str, right_label: str
) -> list[str]:
    """Every step answered differently, each with both answers side by side (empty: identical)."""
    differences: list[str] = []
    names = [name for name, _ in left]
    if names != [name for name, _ in right]:
        return [f"the conversations took different steps:\n  {names}\n  {[name for name, _ in right]}"]
    for (name, one), (_, other) in zip(left, right, strict=True):
        if one != other:
            header = f"  {left_label:<{COLUMN}}   {right_label}"
            differences.append(f"step {name!r}:\n{header}\n{_side_by_side(one, other)}")
    return differences


def render_transcript(normalised: Sequence[tuple[str, Any]]) -> str:
    return "\n".join(
        f"{name}:\n{json.dumps(answer, indent=2, sort_keys=True)}" for name, answer in normalised
    )


# --- what 2025-11-25 requires --------------------------------------------------------------------


def _error_code(answer: Any) -> object:
    error = answer.get("error") if isinstance(answer, Mapping) else None
    return cast(Mapping[str, Any], error).get("code") if isinstance(error, Mapping) else None


def _result(answer: Any) -> Mapping[str, Any]:
    result = answer.get("result") if isinstance(answer, Mapping) else None
    return cast(Mapping[str, Any], result) if isinstance(result, Mapping) else {}


def _status(answer: Any) -> object:
    result = _result(answer)
    task = result.get("task", result)
    return task.get("status") if isinstance(task, Mapping) else None


def _tool_support(answer: Any) -> dict[str, object]:
    tools = _result(answer).get("tools")
    support: dict[str, object] = {}
    for tool in cast(list[Any], tools) if isinstance(tools, list) else []:
        if isinstance(tool, Mapping):
            entry = cast(Mapping[str, Any], tool)
            execution = entry.get("execution")
            support[str(entry.get("name"))] = (
                cast(Mapping[str, Any], execution).get("taskSupport")
                if isinstance(execution, Mapping)
                else None
            )
    return support


SERVER_TASKS: Final[Mapping[str, Any]] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}


def _agreed_version(answer: Any) -> object:
    return _result(answer).get("protocolVersion")


def _tasks_capability(answer: Any) -> object:
    capabilities = _result(answer).get("capabilities")
    return cast(Mapping[str, Any], capabilities).get("tasks") if isinstance(capabilities, Mapping) else None


def _related_task(answer: Any) -> object:
    meta = _result(answer).get("_meta")
    related = cast(Mapping[str, Any], meta).get(RELATED_TASK_KEY) if isinstance(meta, Mapping) else None
    return cast(Mapping[str, Any], related).get("taskId") if isinstance(related, Mapping) else None


def _text(answer: Any) -> object:
    content = _result(answer).get("content")
    if isinstance(content, list) and content and isinstance(content[0], Mapping):
        return cast(Mapping[str, Any], content[0]).get("text")
    return None


def _listed(answer: Any) -> object:
    tasks = _result(answer).get("tasks")
    if not isinstance(tasks, list):
        return None
    return [
        (cast(Mapping[str, Any], task).get("taskId"), cast(Mapping[str, Any], task).get("status"))
        for task in cast(list[Any], tasks)
        if isinstance(task, Mapping)
    ]


EXPECTED: Final[Sequence[tuple[str, str, Callable[[Any], object], object]]] = (
    ("initialize", "agrees to 2025-11-25 (as far as the SDK knows)", _agreed_version, AGREED_AS_THE_SDK_DOES),
    ("initialize", "advertises tasks (list, cancel, tools/call)", _tasks_capability, SERVER_TASKS),
    (
        "tools/list",
        "declares each tool's execution.taskSupport",
        _tool_support,
        {"slow_echo": "optional", "fail": "optional", "must_task": "required", "ask": "optional"},
    ),
    ("tools/call slow_echo as a task (the watched task)", "creates a working task", _status, "working"),
    ("tasks/get the watched task at 0.1 s", "reads working", _status, "working"),
    ("tasks/get the watched task at 1.2 s", "reads working", _status, "working"),
    ("tools/call slow_echo as a task (the quick task)", "creates a working task", _status, "working"),
    ("tasks/result of the quick task", "is the tool's result", _text, "quick"),
    ("tasks/result of the quick task", "names its task in _meta", _related_task, "TASK2"),
    ("tasks/get the quick task, completed", "reads completed", _status, "completed"),
    ("tasks/cancel the finished quick task", "is refused with -32602", _error_code, INVALID_PARAMS),
    ("tasks/cancel the running watched task", "answers the cancelled task", _status, "cancelled"),
    ("tasks/get the watched task, cancelled", "reads cancelled", _status, "cancelled"),
    (
        "tasks/list",
        "lists both tasks in creation order",
        _listed,
        [("TASK1", "cancelled"), ("TASK2", "completed")],
    ),
    ("tasks/list with a bad cursor", "is refused with -32602", _error_code, INVALID_PARAMS),
    ("tasks/get an unknown id", "is refused with -32602", _error_code, INVALID_PARAMS),
    ("tools/call with task.ttl -1", "is refused with -32602", _error_code, INVALID_PARAMS),
    (
        "tools/call with malformed arguments and params.task",
        "is refused with -32602",
        _error_code,
        INVALID_PARAMS,
    ),
    ("tools/call the required tool plainly", "is refused with -32601", _error_code, METHOD_NOT_FOUND),
    (
        "tasks/get the quick task from another session",
        "is refused with -32602 (a task belongs to its session)",
        _error_code,
        INVALID_PARAMS,
    ),
    ("initialize another session", "advertises tasks", _tasks_capability, SERVER_TASKS),
    ("tasks/list from another session", "lists no task", _listed, []),
)
"""Per step: what 2025-11-25 (and this library's documented rules) require, and how to read it."""


def wrong_answers(normalised: Sequence[tuple[str, Any]]) -> list[str]:
    """Each step whose answer breaks :data:`EXPECTED`, and each poll hint off the age rule."""
    wrong: list[str] = []
    answers = dict(normalised)
    for name, requirement, read, wanted in EXPECTED:
        seen = read(answers.get(name))
        if seen != wanted:
            wrong.append(f"{name}: {requirement}; saw {seen!r} in {json.dumps(answers.get(name))}")
    for name, answer in normalised:

        def off_rule(mapping: Mapping[str, Any], name: str = name) -> None:
            verdict = mapping.get("pollInterval", FOLLOWS_AGE_RULE)
            if _is_task(mapping) and verdict != FOLLOWS_AGE_RULE:
                wrong.append(f"{name}: {mapping['taskId']} pollInterval {verdict}")

        _walk(answer, off_rule)
    return wrong


def main(argv: Sequence[str]) -> int:
    if not 1 <= len(argv) <= 2:
        print("usage: python -m tests.interop.differential_2025 PYTHON [PYTHON]", file=sys.stderr)
        return 2
    sdks = [server_sdk(python) for python in argv]
    transcripts = [normalise(run_conversation(sdk.python), sdk) for sdk in sdks]
    for sdk, transcript in zip(sdks, transcripts, strict=True):
        print(f"=== {sdk.label}\n{render_transcript(transcript)}")
        print("\n".join(f"WRONG {line}" for line in wrong_answers(transcript)))
    if len(transcripts) == 2:
        differences = compare(transcripts[0], transcripts[1], sdks[0].label, sdks[1].label)
        print("=== differences\n" + ("\n".join(differences) or "none"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
