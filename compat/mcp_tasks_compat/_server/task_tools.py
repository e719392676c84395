"""The plain hand-off's task tools (``task_status|result|cancel|answer``): what they are listed
as, how a ``TaskServer`` registers them, the texts and form check they answer with, and a
``tools/list`` page as the hand-off shows it (:func:`listed`). Served by
:class:`~.handoff.PlainHandoff` (docs/any-host.md).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Container, Mapping, Sequence
from typing import Any, Final, Protocol, cast

from .._engine import TaskPolicy, TaskRecord
from .._engine.inputs import InputRelay
from ..core._model import Task


class Handoff(Protocol):
    """What :func:`listed` reads of a :class:`~.handoff.PlainHandoff`."""

    tasks: TaskPolicy

    @property
    def deadline_s(self) -> float | None: ...

    def hands_off(self, tool_name: str, *, speaks_tasks: bool = False) -> bool: ...


__all__ = [
    "TASK_TOOLS",
    "TASK_TOOL_INPUTS",
    "Handoff",
    "answer_form",
    "form_problem",
    "listed",
    "question_text",
    "register_task_tools",
    "task_tool_definitions",
    "text_result",
]


def text_result(
    text: str, *, structured: Mapping[str, Any] | None = None, is_error: bool = False
) -> dict[str, Any]:
    """An ordinary tool result of one text block (what a model reads), with ``structuredContent``
    for programs."""
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if structured is not None:
        result["structuredContent"] = dict(structured)
    if is_error:
        result["isError"] = True
    return result


def listed(
    handoff: Handoff, tools: Sequence[Mapping[str, Any]], *, plain_client: bool
) -> list[Mapping[str, Any]]:
    """A ``tools/list`` page (wire JSON) as the hand-off shows it: to a plain client (one that
    may be handed off) without the ``outputSchema`` of a tool that may hand off, since a
    hand-off result would fail its client's output check; with the task tools a server did
    not register itself (the ``install`` forms) added. Unchanged with the option off."""
    if handoff.deadline_s is None:
        return list(tools)
    shown: list[Mapping[str, Any]] = [
        {key: value for key, value in tool.items() if key != "outputSchema"}
        if plain_client and "outputSchema" in tool and handoff.hands_off(str(tool.get("name")))
        else tool
        for tool in tools
    ]
    names = {tool.get("name") for tool in tools}
    shown.extend(task_tool_definitions(handoff.tasks.task_tool_names, missing_from=names))
    return shown


def question_text(task: Task, names: Mapping[str, str]) -> str:
    """What a model reads of the question a task waits for."""
    key, request = next(iter(task.input_requests.items()))
    params = cast(Mapping[str, Any], request.get("params") or {})
    if request.get("method") != "elicitation/create":
        return (
            f"Task {task.task_id} waits for input ({request.get('method')}, {key}) that only a "
            f"task-aware client can give; `{names['cancel']}` stops it."
        )
    schema = json.dumps(params.get("requestedSchema", {}), separators=(",", ":"))
    return (
        f"Task {task.task_id} asks: {params.get('message', '')} "
        f'Call `{names["answer"]}` with {{"task_id": "{task.task_id}", "answer": {{...}}}}, '
        f"the answer an object matching this JSON schema: {schema}"
    )


async def answer_form(
    inputs: InputRelay, record: TaskRecord, answer: object, names: Mapping[str, str]
) -> dict[str, Any]:
    """``task_answer``: the answer to the task's form, checked against its schema."""
    task = record.task
    forms = [
        (key, request)
        for key, request in task.input_requests.items()
        if request.get("method") == "elicitation/create"
    ]
    if not forms:
        return text_result(
            f"Task {task.task_id} is not waiting for an answer ({task.status.value}).", is_error=True
        )
    key, request = forms[0]
    schema = cast(
        Mapping[str, Any],
        cast(Mapping[str, Any], request.get("params") or {}).get("requestedSchema") or {},
    )
    problem = form_problem(answer, schema)
    if problem is not None:
        return text_result(
            f"The answer does not fit the question's schema: {problem}. Nothing was sent.", is_error=True
        )
    taken = await inputs.deliver(
        record, {key: {"action": "accept", "content": dict(cast(Mapping[str, Any], answer))}}
    )
    if not taken:
        return text_result(f"Task {task.task_id} no longer waits for that answer.", is_error=True)
    call = f'Call `{names["result"]}` with {{"task_id": "{task.task_id}"}}'
    return text_result(f"Answer given to task {task.task_id}. {call} to wait for its result.")


_JSON_TYPES: Final[Mapping[str, tuple[type, ...]]] = {
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
}


def form_problem(answer: object, schema: Mapping[str, Any]) -> str | None:
    """Why ``answer`` is not a form answer to ``schema`` (an elicitation's flat object of primitive
    properties: their types, ``enum`` and ``required``), else ``None``."""
    if not isinstance(answer, Mapping):
        return "the answer must be a JSON object"
    fields = cast(Mapping[str, Any], answer)
    properties = cast(Mapping[str, Any], schema.get("properties") or {})
    missing = [name for name in cast(list[str], schema.get("required") or []) if name not in fields]
    if missing:
        return f"missing {', '.join(missing)}"
    for name, value in fields.items():
        spec = properties.get(name)
        if not isinstance(spec, Mapping):
            return f"{name!r} is not a field of the form"
        spec = cast(Mapping[str, Any], spec)
        kinds = _JSON_TYPES.get(str(spec.get("type")))
        wrong_bool = isinstance(value, bool) and spec.get("type") in ("number", "integer")
        if kinds is not None and (not isinstance(value, kinds) or wrong_bool):
            return f"{name!r} must be a {spec.get('type')}"
        enum = spec.get("enum")
        if isinstance(enum, list) and value not in enum:
            return f"{name!r} must be one of {enum}"
    return None


_NOT_HERE: Final = (
    "the task tools are served by the plain hand-off of a task-capable server (plain_handoff_s=); "
    "this connection reached the tool itself"
)


async def _task_status(task_id: str) -> str:
    raise RuntimeError(_NOT_HERE)


async def _task_result(task_id: str) -> str:
    raise RuntimeError(_NOT_HERE)


async def _task_cancel(task_id: str) -> str:
    raise RuntimeError(_NOT_HERE)


async def _task_answer(task_id: str, answer: dict[str, Any]) -> str:
    raise RuntimeError(_NOT_HERE)


TASK_TOOLS: Final[Mapping[str, tuple[Callable[..., Awaitable[str]], str]]] = {
    "status": (
        _task_status,
        "Check on a task that a tool handed off: its status, and its question if it asks one.",
    ),
    "result": (
        _task_result,
        "Wait for a handed-off task's result: the tool's own result once it is done, else where it stands.",
    ),
    "cancel": (_task_cancel, "Stop a handed-off task."),
    "answer": (
        _task_answer,
        "Answer the question a handed-off task asks (task_status or task_result shows it and its form).",
    ),
}
"""What a server registers as each task tool (listed only with the hand-off on): a body the hand-off
answers before it is reached (the SDK makes the input schema from it), and its description."""


TASK_TOOL_INPUTS: Final[Mapping[str, Mapping[str, Any]]] = {
    verb: {
        "type": "object",
        "properties": {
            "task_id": {"type": "string", "description": "the id the hand-off gave"},
            **(
                {"answer": {"type": "object", "description": "the answer, matching the question's form"}}
                if verb == "answer"
                else {}
            ),
        },
        "required": ["task_id", "answer"] if verb == "answer" else ["task_id"],
    }
    for verb in TASK_TOOLS
}
"""Each task tool's input schema, as listed where the server did not register the tools itself."""


def task_tool_definitions(
    names: Mapping[str, str], *, missing_from: Container[object]
) -> list[dict[str, Any]]:
    """The ``tools/list`` entries (wire JSON) of the task tools named ``names`` (verb to name)
    that are not in ``missing_from`` (a listing's names)."""
    return [
        {"name": name, "description": TASK_TOOLS[verb][1], "inputSchema": dict(TASK_TOOL_INPUTS[verb])}
        for verb, name in names.items()
        if name not in missing_from
    ]


def register_task_tools(tasks: TaskPolicy, add_tool: Callable[[Any, Mapping[str, Any]], object]) -> None:
    """Register the task tools (with the hand-off on) through the SDK's ``add_tool(body, kwargs)``:
    listed as any tool, never run as tasks themselves."""
    for verb, tool_name in tasks.task_tool_names.items():
        body, description = TASK_TOOLS[verb]
        add_tool(body, {"name": tool_name, "description": description, "structured_output": False})
        tasks.tools[tool_name] = "forbidden"
