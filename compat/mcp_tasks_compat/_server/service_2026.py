"""The Tasks extension (SEP-2663, 2026-07-28), served on wire JSON, SDK-free.

Only mcp 2.x speaks this dialect today, but its semantics live here beside the 2025-11-25
service so that both are read, tested and changed the same way: the refuse/plain/task decision of
``tools/call`` and ``tasks/get|update|cancel``. 2026-07-28 has no sessions: a task belongs to the
authenticated principal, else to nobody in particular (its unguessable id is the capability).
The adapter keeps what only the SDK can do: the inline grace of a call (starting the work before
it is known to be a task), the ``Mcp-Name`` header, and checking an answer against the SDK's result
type of the request it answers (``check_response``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, Literal

from .._engine import TaskPolicy, TaskRecord
from .._engine.limits import echoed_id
from .._engine.observed import joined, note_read
from ..core import codec_2026 as codec
from ..dialects import DIALECT_2026_07_28
from ..errors import INVALID_PARAMS, PeerProtocolError

__all__ = ["CallMode", "ResponseCheck", "Tasks2026Service", "missing_extension"]

CallMode = Literal["plain", "maybe_task", "task"]
"""How a ``tools/call`` runs: plainly, as a task if it outlives the inline grace, or as a task."""

ResponseCheck = Callable[[str, str, Mapping[str, Any]], None]
"""``check(key, method, response)``: raise ``PeerProtocolError`` when ``response`` is not a valid
answer to an input request of ``method``."""

TASK_NOT_FOUND: Final = "Failed to retrieve task: Task not found"


def missing_extension() -> PeerProtocolError:
    """-32021: the request does not declare the Tasks extension, which it needs."""
    error = codec.missing_capability_error()
    return PeerProtocolError(error.message, jsonrpc_code=error.code, data=error.data)


class Tasks2026Service:
    """The 2026-07-28 task protocol of one server."""

    def __init__(self, tasks: TaskPolicy) -> None:
        self.tasks = tasks
        self.engine = tasks.engine

    def plan_call(self, tool_name: str, *, declares_tasks: bool) -> CallMode:
        """A forbidden tool, or a request without the extension, runs plainly (a required tool
        without it is refused, -32021); a required tool is always a task; an optional one becomes
        a task if it outlives the inline grace (the adapter's; with the grace off, at once)."""
        support = self.tasks.support_for(tool_name)
        if support == "forbidden":
            return "plain"
        if not declares_tasks:
            if support == "required":
                raise missing_extension()
            return "plain"
        return "task" if support == "required" else "maybe_task"

    def ttl_ms(self) -> int | None:
        """2026-07-28 clients cannot ask for a TTL: the server's default."""
        return self.engine.effective_ttl(None, requested=False)

    @staticmethod
    def task_id(params: object, *, declares_tasks: bool) -> str:
        """``params.taskId`` of ``tasks/get|update|cancel`` (-32021 without the extension)."""
        if not declares_tasks:
            raise missing_extension()
        return codec.decode_task_id_params(params)

    async def record(self, task_id: str, principal: str | None) -> TaskRecord:
        """The caller's 2026-07-28 task, else -32602 naming the id (unknown, expired, another's)."""
        try:
            record = await self.engine.lookup(task_id, principal)
        except PeerProtocolError:
            record = None
        if record is None or record.dialect != DIALECT_2026_07_28:
            raise PeerProtocolError(
                TASK_NOT_FOUND, jsonrpc_code=INVALID_PARAMS, data={"taskId": echoed_id(task_id)}
            )
        return record

    async def get(self, task_id: str, principal: str | None) -> dict[str, Any]:
        """``tasks/get``: the task as read now, with its result or error inline once it ended."""
        record = await self.record(task_id, principal)
        note_read(record, poll=True)  # a flag check unless metering
        return codec.encode_get_task_result(self.engine.shown(record.task))

    async def cancel(self, task_id: str, principal: str | None) -> dict[str, Any]:
        """``tasks/cancel``: an acknowledgement; a task that already ended is left as it is."""
        await self.engine.cancel_record(await self.record(task_id, principal), strict=False)
        return {}

    @staticmethod
    def update_params(params: object, *, declares_tasks: bool) -> tuple[str, dict[str, Mapping[str, Any]]]:
        """``tasks/update`` params: the task id and its ``inputResponses`` (-32021 without the extension)."""
        if not declares_tasks:
            raise missing_extension()
        return codec.decode_update_params(params)

    async def update(
        self,
        task_id: str,
        responses: Mapping[str, Mapping[str, Any]],
        principal: str | None,
        check_response: ResponseCheck,
    ) -> dict[str, Any]:
        """``tasks/update``: answers to the task's outstanding input requests, each checked against
        the request it answers (an answer to no outstanding request is ignored)."""
        record = await self.record(task_id, principal)
        for key, response in responses.items():
            request = record.task.input_requests.get(key)
            if request is not None:
                check_response(key, str(request.get("method")), response)
        with joined(record, "tasks/update"):  # in the task's trace, whichever replica serves it
            await self.engine.inputs.deliver(record, responses)  # the record read above: one store read
        return {}
