"""The server's task protocol, SDK-free: one service per dialect, the mirror of ``_client/``.

Rules of this layer (read before changing anything under ``_server/``):

* It imports no ``mcp``: it works on wire JSON with the codecs of ``core`` and asks the engine
  (``_engine``) for everything about tasks. What it needs from an SDK on each request is the
  :class:`~.caller.Caller` protocol (who is asking, how to send a request to the client on this
  request's stream), and for a 2026-07-28 tool's own input rounds two primitives (a result read
  as an ``input_required`` wire, the answers set as the retry's params); the adapters
  (``_adapters/v1``, ``_adapters/v2``) implement them, route the SDK's requests here and turn
  :class:`~mcp_tasks_compat.errors.PeerProtocolError` into the SDK's error type, in one place each.
* It does not know which SDK major runs it (h11's rule: one set of semantics, whoever plays it).
  So the owner of a task, the poll hint a read shows, how ``tasks/list`` pages and what a
  refusal says are decided here once, and are the same on mcp 1.x and 2.x.

One concern per module (``tests/server/test_rules_header.py`` checks each is named here):

* ``caller``: the :class:`Caller` protocol (what a service needs from the SDK on each request,
  its run primitive ``launch`` → :class:`Launch`), ``principal_id``, and the owner rules
  (``owner_2025``, ``owner_2026``);
* ``service_2025``: :class:`Tasks2025Service`, the 2025-11-25 experimental tasks: capabilities,
  a tool's ``execution``, ``tools/call`` from plan to answer (the refuse/plain/task decision),
  ``tasks/get|result|list|cancel``, the status notification, every refusal text;
* ``service_2026``: :class:`Tasks2026Service`, the Tasks extension: ``tools/call`` from plan to
  answer (plain, or undecided for the inline grace and answered inline or as a task),
  ``tasks/get|update|cancel``;
* ``rounds_2026``: its multi-round-trip input: rounds before any task, a tool's own rounds
  relayed through its task;
* ``listen_2026``: :class:`TaskListen2026`, ``subscriptions/listen`` with ``taskIds``: the streams
  allowed, the ids agreed, each agreed task pushed until it ends;
* ``handoff``: :class:`PlainHandoff`, the plain hand-off (``plain_handoff_s``): a plain call of a
  task-capable tool waited for up to a deadline, then answered with the task it goes on as, the
  owner rule of such tasks, and the serving of the task tools;
* ``task_tools``: the task tools themselves (``task_status|result|cancel|answer``): how they are
  listed and registered, the texts they answer with, the check of an answer to a form;
* ``tool_input``: ``ask``, where a question a tool body asks goes (through its task, the plain
  call's own request, a multi-round-trip round, or the cancel of a session that cannot answer).

Each dialect's service also gives the engine that dialect's result rule: the engine reads no codec.
"""

from __future__ import annotations

from .caller import Caller, Launch, owner_2025, owner_2026, principal_id
from .listen_2026 import ListenStream, TaskListen2026, asked_task_ids, asks_core_kinds
from .rounds_2026 import InputRequiredWire, RetryWith, RoundTrips, relay_rounds
from .service_2025 import (
    NO_SESSION,
    REQUIRED_TOOL_CALLED_PLAINLY,
    TASK_METHODS_2025,
    TOOL_FORBIDS_TASKS,
    TaskCall,
    Tasks2025Service,
    fails_task_2025,
    refuse_plain_call,
    task_not_found,
)
from .service_2026 import (
    CallMode,
    InvalidAnswer,
    ResponseCheck,
    Tasks2026Service,
    ToolCall2026,
    fails_task_2026,
    missing_extension,
    no_input_channel,
)
from .task_tools import register_task_tools
from .tool_input import ask

__all__ = [
    "NO_SESSION",
    "REQUIRED_TOOL_CALLED_PLAINLY",
    "TASK_METHODS_2025",
    "TOOL_FORBIDS_TASKS",
    "CallMode",
    "Caller",
    "InputRequiredWire",
    "InvalidAnswer",
    "Launch",
    "ListenStream",
    "ResponseCheck",
    "RetryWith",
    "RoundTrips",
    "TaskCall",
    "TaskListen2026",
    "Tasks2025Service",
    "Tasks2026Service",
    "ToolCall2026",
    "ask",
    "asked_task_ids",
    "asks_core_kinds",
    "fails_task_2025",
    "fails_task_2026",
    "missing_extension",
    "no_input_channel",
    "owner_2025",
    "owner_2026",
    "principal_id",
    "refuse_plain_call",
    "register_task_tools",
    "relay_rounds",
    "task_not_found",
]
