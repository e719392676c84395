"""What the adapters provide, and the names and limits every module of this layer shares.

An adapter wraps one ``ClientSession`` as a :class:`ClientConnection` (one class per negotiated
dialect, and a plain one) and each dialect's ``tasks/*`` requests as that dialect's wire
(:class:`TaskWire2025`, :class:`TaskWire2026`, over what both share, :class:`TaskWire`), and
reports JSON-RPC error answers as :class:`RemoteError`; nothing above those depends on which SDK
major is installed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar, Final, Literal, Protocol, TypeAlias, TypeVar

from ..core._model import Task
from ..dialects import Dialect, TaskSupport
from ..errors import MISSING_REQUIRED_CLIENT_CAPABILITY, UnsupportedOptIn

__all__ = [
    "CANCEL_GRACE_SECONDS",
    "DEFAULT_POLL_SECONDS",
    "MAX_POLL_SECONDS",
    "MIN_POLL_SECONDS",
    "MISSING_CAPABILITY_BEFORE_AUGUST",
    "NO_SDK_OPTIONS",
    "RESULT_GRACE_SECONDS",
    "SAFETY_POLL_SECONDS",
    "AnyTaskWire",
    "ClientConnection",
    "Mode",
    "Negotiated",
    "OnProgress",
    "OnStatus",
    "ProgressSink",
    "RemoteError",
    "ResultT",
    "ResultT_co",
    "StatusListener",
    "TaskPush",
    "TaskWire",
    "TaskWire2025",
    "TaskWire2026",
    "ToolCall",
    "read_error_code",
]

MIN_POLL_SECONDS: Final = 0.005
"""The absolute floor of a poll pause (for a brand-new task; it grows with the age, see ``poller``)."""
MAX_POLL_SECONDS: Final = 30.0
DEFAULT_POLL_SECONDS: Final = 1.0
"""Used when the server gives no poll hint at all."""
CANCEL_GRACE_SECONDS: Final = 2.0
"""How long a best-effort ``tasks/cancel`` may take when the call ends early."""
RESULT_GRACE_SECONDS: Final = 1.0
"""How long the 2025-11-25 ``tasks/result`` wait may trail a terminal ``tasks/get`` before it is re-asked."""
SAFETY_POLL_SECONDS: Final = 4.0
"""The least pace of ``tasks/get`` for a task whose states are pushed (``push``): a state the
transport lost (a stream whose end never arrived, a server that missed a change) is seen within
this, not never. Each wait is 75-100 % of it, so the tasks of a burst do not poll in waves: a
pooled HTTP connection left idle for a common server keep-alive (uvicorn's 5 s) between two
waves is closed by the server as it is reused, and the SDK's transport does not retry that."""
NO_SDK_OPTIONS: Final[Mapping[str, Any]] = MappingProxyType({})
"""A call with none of the SDK's own keywords (shared and read-only: no dict made per call)."""

Mode = Literal["auto", "task", "plain"]
"""How :func:`~mcp_tasks_compat.client.call_tool` runs a call: ``"auto"`` a task where the server
offers one, ``"task"`` a task or a refusal before sending, ``"plain"`` never asks for a task.
Example: ``await call_tool(session, "build", {"target": "all"}, mode="task")``."""
OnStatus = Callable[[Task], "Awaitable[None] | None"]
"""``on_status(task)``, sync or async: each distinct ``(status, statusMessage)`` of a followed task.
Example: ``call_tool(session, "build", on_status=lambda task: print(task.status.value))``."""
StatusListener = Callable[[Task], None]
OnProgress = Callable[[float, "float | None", "str | None"], "Awaitable[None] | None"]
"""``on_progress(progress, total, message)``, sync or async: a plain call's ``notifications/progress``,
and a task's statuses when no ``on_status`` is given.
Example: ``call_tool(session, "build", on_progress=lambda done, total, message: print(done, total))``."""
ProgressSink = Callable[[float, "float | None", "str | None"], Awaitable[None]]
"""What the adapters hand the SDK as its ``progress_callback`` (always async)."""

ResultT = TypeVar("ResultT")
ResultT_co = TypeVar("ResultT_co", covariant=True)


MISSING_CAPABILITY_BEFORE_AUGUST: Final = -32003
"""What peers built on the July 2026 drafts answer for a missing required client capability,
which the 2026-07-28 specification numbers -32021."""


def read_error_code(code: int, message: str, data: Any = None) -> int:
    """``code`` as this library reads it: a missing-capability refusal answered with the pre-August
    -32003 (its ``data.requiredCapabilities``, or its message, says so) is -32021."""
    if code != MISSING_CAPABILITY_BEFORE_AUGUST:
        return code
    named = isinstance(data, Mapping) and "requiredCapabilities" in data
    if named or "capabilit" in message.lower():
        return MISSING_REQUIRED_CLIENT_CAPABILITY
    return code


class RemoteError(Exception):
    """A JSON-RPC error answer to a ``tasks/*`` request, as an adapter reports it.

    ``timed_out`` marks the SDK's own read timeout (the request may simply be retried). ``code``
    is read with :func:`read_error_code` (-32003 for a missing capability is -32021).
    """

    def __init__(self, code: int, message: str, data: Any = None, *, timed_out: bool = False) -> None:
        code = read_error_code(code, message, data)
        super().__init__(f"{message} (code {code})")
        self.code = code
        self.message = message
        self.data = data
        self.timed_out = timed_out


@dataclass(frozen=True)
class Negotiated:
    """What one connection offers: the protocol version and the task dialect in use on it.

    ``dialect`` is ``"2026-07-28"`` when ``server/discover`` declared the Tasks extension,
    ``"2025-11-25"`` when ``initialize`` declared ``capabilities.tasks.requests.tools.call``, and
    ``None`` when this connection cannot run tasks (``reason`` says why).
    ``tool_task_support`` maps tool names to their 2025-11-25 ``execution.taskSupport``; it is
    ``None`` where the dialect does not declare it (2026-07-28: the server decides per call).
    ``protocol_version`` is ``None`` only on mcp 1.x when the session was initialized by the
    caller before :func:`~mcp_tasks_compat.client.negotiate` (1.x does not keep it).

    Example::

        negotiated = await negotiate(session)
        if negotiated.dialect is None:
            print(negotiated.reason)  # why this connection runs no tasks
        elif negotiated.tool_task_support is not None:  # 2025-11-25: declared per tool
            print(negotiated.tool_task_support.get("build", "forbidden"))
    """

    protocol_version: str | None
    dialect: Dialect | None
    tool_task_support: dict[str, TaskSupport] | None = None
    server_offers_tasks: bool = False
    reason: str | None = None


@dataclass(frozen=True)
class ToolCall:
    """One ``tools/call`` as planned, before anything is sent: what a connection's ``call`` sends.

    ``as_task`` adds the 2025-11-25 ``params.task`` (with ``ttl_ms``); on 2026-07-28 the server
    decides, and ``as_task=False`` (``mode="plain"``) leaves the Tasks extension out of this
    request's per-request client capabilities, so the server answers plainly. ``progress`` becomes
    the SDK's ``progress_callback`` (it sets the progress token) and ``read_timeout`` its
    ``read_timeout_seconds``. ``sdk_options`` are keywords of the installed SDK's own
    ``ClientSession.call_tool`` (mcp 2.x: ``input_responses``, ``request_state``,
    ``allow_input_required``, ``allow_claimed``) that a caller passed; the adapter honours them
    as that ``call_tool`` does, and follows any task the call causes.
    """

    name: str
    arguments: dict[str, Any] | None
    as_task: bool
    ttl_ms: int | None = None
    meta: dict[str, Any] | None = None
    progress: ProgressSink | None = None
    read_timeout: float | None = None
    sdk_options: Mapping[str, Any] = field(default_factory=lambda: NO_SDK_OPTIONS)


class TaskPush(Protocol):
    """A connection's pushed task states (2026-07-28 ``notifications/tasks``; see ``push``)."""

    def follow(self, task_id: str, listener: StatusListener, wake: Callable[[], None]) -> Callable[[], None]:
        """Ask for ``task_id``'s states; ``wake`` is called when its coverage changes. Returns the undo."""
        ...

    def covers(self, task_id: str) -> bool:
        """Whether a healthy stream has acknowledged ``task_id``."""
        ...

    def pushes(self, task_id: str) -> bool:
        """Whether ``task_id`` is covered, or a stream asking for it is on its way."""
        ...


class TaskWire(Protocol[ResultT_co]):
    """What both dialects' ``tasks/*`` wires carry, on one session, as plain task models."""

    @property
    def dialect(self) -> Dialect: ...

    async def get(self, task_id: str, *, read_timeout: float | None = None) -> Task:
        """``tasks/get``; raises :class:`RemoteError` on a JSON-RPC error (``timed_out`` when
        unanswered within ``read_timeout`` seconds, the SDK's read timeout; ``None``: the session's)."""
        ...

    async def cancel(self, task_id: str) -> Task | None:
        """``tasks/cancel``: the task after cancel (2025-11-25), or ``None`` for the 2026-07-28 ack."""
        ...

    async def to_result(self, payload: Mapping[str, Any], *, tool: str | None) -> ResultT_co:
        """The installed SDK's ``CallToolResult`` for a tool result JSON.

        Its ``structuredContent`` is checked against ``tool``'s declared output schema the way the
        SDK's own ``ClientSession.call_tool`` checks a plain result (an ``isError`` result and a
        tool without an output schema never are; the SDK's error when it fails). ``tool=None``
        checks nothing: a resumed task, whose tool is unknown, or a caller that checks itself.
        """
        ...


class TaskWire2025(TaskWire[ResultT_co], Protocol[ResultT_co]):
    """The 2025-11-25 wire: ``tasks/result`` waits for the payload; statuses are pushed unasked."""

    @property
    def dialect(self) -> Literal["2025-11-25"]: ...

    async def result_payload(self, task_id: str) -> dict[str, Any]:
        """``tasks/result`` (waits until terminal): the tool result JSON, minus related-task."""
        ...

    def listen(self, task_id: str, listener: StatusListener) -> Callable[[], None]:
        """Register ``listener`` for ``notifications/tasks/status``; returns the unregister call."""
        ...


class TaskWire2026(TaskWire[ResultT_co], Protocol[ResultT_co]):
    """The 2026-07-28 wire: ``tasks/get`` carries the outcome inline, input goes back by ``tasks/update``."""

    @property
    def dialect(self) -> Literal["2026-07-28"]: ...

    @property
    def push(self) -> TaskPush | None:
        """The connection's push link, or ``None`` where states are only polled."""
        ...

    async def answer_input(self, key: str, request: Mapping[str, Any]) -> dict[str, Any]:
        """One input request through the session's own callback; the answer as wire JSON.

        Raises :class:`RemoteError` when the callback refuses (an ``ErrorData``; a session without
        the callback refuses every request of that kind) or the request cannot be read.
        """
        ...

    async def update(self, task_id: str, responses: Mapping[str, Mapping[str, Any]]) -> None:
        """``tasks/update`` with ``inputResponses``; raises :class:`RemoteError`."""
        ...


AnyTaskWire: TypeAlias = "TaskWire2025[ResultT] | TaskWire2026[ResultT]"
"""The wire of a negotiated dialect; ``wire.dialect`` tells which (the followers are picked by it)."""


class ClientConnection(Protocol[ResultT_co]):
    """One negotiated ``ClientSession`` as this layer sees it."""

    @property
    def negotiated(self) -> Negotiated: ...

    @property
    def installed(self) -> str:
        """``"mcp <version>"``, for refusal messages."""
        ...

    sends_task_at_once: ClassVar[bool]
    """Whether ``start_tool`` asks for a task at once (``dialects.TASK_AT_ONCE_META_KEY``), said
    once by the connection's class: where the server decides per call (2026-07-28)."""

    def wire(self) -> TaskWire2025[ResultT_co] | TaskWire2026[ResultT_co]:
        """The wire of the negotiated dialect (only asked once the plan runs a task on it)."""
        ...

    def task_readiness(self) -> UnsupportedOptIn | None:
        """Why this session cannot run tasks at all (e.g. built without ``session_kwargs()``)."""
        ...

    async def tool_support(self, name: str) -> TaskSupport:
        """2025-11-25 ``execution.taskSupport`` of ``name`` (tools listed once and cached)."""
        ...

    async def settle(self) -> None:
        """Return once no answer is owed to a request this session gave up (a cancelled or timed-out
        wait whose answer the server still sends); the caller bounds the wait.

        A call that ends early waits for this before it raises, so a caller that closes its
        session next (a session per call) closes it on a quiet stream: on mcp 1.x over stdio an
        answer read after the session closed kills the transport (``BrokenResourceError``).
        """
        ...

    async def call(self, call: ToolCall) -> Task | ResultT_co:
        """Send ``tools/call``: a :class:`Task` when the server created one, else its ``CallToolResult``.

        A 2026-07-28 ``input_required`` answer (multi-round trip) is answered and the call sent
        again inside (:func:`.rounds.answer_rounds`), so what comes back is the final round's answer.
        """
        ...
