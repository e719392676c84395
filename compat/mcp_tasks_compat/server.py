"""Task-capable tools on mcp 1.x and 2.x; one 2.x server serves both dialects.

Declare per-tool task support once, the same way on both majors::

    tasks = ServerTasks(tools={"build": "optional", "deploy": "required"})

then enable it on the server kind you have:

* mcp 1.x low-level ``Server`` or ``FastMCP``, mcp 2.x low-level ``Server``: ``tasks.install(server)``;
* mcp 2.x ``MCPServer`` (extensions are fixed at construction):
  ``MCPServer("name", **tasks.mcpserver_kwargs(lifespan=my_lifespan))``.

Or let :class:`TaskServer` build the server: the same code on both majors (``FastMCP`` on 1.x,
``MCPServer`` on 2.x, tasks installed)::

    app = TaskServer("builder", store="sqlite:///tasks.db")

    @app.tool(task="optional")
    async def build(target: str) -> str:
        await report_progress(1, 2, "compiling")
        return f"built {target}"

    app.run()  # stdio; app.run(transport="streamable-http", host=..., port=...)

Inside a tool body, :func:`report_status` and :func:`report_progress` tell the caller how far the
work is: in a task they set the task's status message (seen by ``on_status``); in a plain call
they send ``notifications/progress`` when the caller asked for progress (``on_progress``), so one
tool body serves both kinds of call. ``current_call().task`` tells whether the call runs as a task;
:func:`log` sends a log message on a plain call.

:func:`elicit`, :func:`create_message` and :func:`list_roots` ask the client for input from
inside a tool body. Run as a task, the task goes ``input_required`` until the client answers (in
2026-07-28 through ``inputRequests`` and ``tasks/update``, in 2025-11-25 through a request
delivered on the client's open ``tasks/result``); in a plain call they are the ordinary
server-to-client requests of the current ``tools/call``. They return the installed SDK's own
result types (``ElicitResult``, ``CreateMessageResult``, ``ListRootsResult``). With
``before_task=True`` a question asked on 2026-07-28 before the call is a task is a multi-round-trip
round instead ("ask first, then run long").

On 2026-07-28 a task-capable call waits ``inline_grace_s`` for its tool and is answered plainly if
the tool is done by then (a tool whose recent calls all outlived it is a task at once);
``current_call().task`` is ``None`` until the call is a task.
:func:`current_call` is the call's handle from its first line: its ``task_id`` once it is a task,
``await call.wait_for_task()`` and ``call.on_task(hook)`` for the moment it becomes one.

``Context`` and ``ToolError`` are the installed SDK's own (``FastMCP``'s on 1.x, ``MCPServer``'s on
2.x), re-exported here so a server written once imports them from one place. Raise ``ToolError``
for a failure the model should read: its message reaches the caller on every version, in a plain
call and in a task; any other exception is a crash whose text mcp 2.3 and later keep on the server.

This module imports no ``mcp``: the adapter for the installed major is imported on first use.
"""

from __future__ import annotations

import contextvars
import inspect
import logging
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from functools import partial
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias, TypeVar, cast, overload

import anyio

from . import _engine, errors
from ._adapters import get_adapter
from ._deprecated import Alias, answer
from ._detect import refuse_unsupported
from ._engine import (
    InMemoryTaskStore,
    PollPolicy,
    TaskPolicy,
    TaskRecord,
    TaskStore,
)
from ._engine.inline import run_task_hook
from ._engine.policy import SUPPORT_VALUES
from ._server import ask, register_task_tools
from ._worker import DEFAULT_CONCURRENCY, DEFAULT_GRACE_S, refuse_serving_on_import, serve_worker
from .core._model import Progress, Task
from .dialects import RunOn
from .dialects import TaskSupport as _TaskSupport

__all__ = [
    "CallHandle",
    "Context",
    "InMemoryTaskStore",
    "PollPolicy",
    "ServerTasks",
    "TaskServer",
    "TaskStore",
    "ToolError",
    "create_message",
    "current_call",
    "elicit",
    "list_roots",
    "log",
    "report_progress",
    "report_status",
]

FunctionT = TypeVar("FunctionT", bound=Callable[..., Any])
LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]

_tool_logger = logging.getLogger("mcp_tasks_compat.tool")

if TYPE_CHECKING:
    # What a type checker sees; at run time both are the installed SDK's own classes (below).
    Context: TypeAlias = Any
    """The SDK's tool ``Context``: ``FastMCP``'s (mcp 1.x) or ``MCPServer``'s (mcp 2.x)."""

    class ToolError(Exception):
        """The SDK's ``ToolError`` (``FastMCP``'s on 1.x, ``MCPServer``'s on 2.x)."""


_SDK_CLASSES: Final = frozenset({"Context", "ToolError"})


def _engine_name(name: str) -> Callable[[], Any]:
    return lambda: getattr(_engine, name)


_ALIASES: Final = {
    "current_task": Alias("current_call().task", lambda: _current_task),
    "ActiveLimitReached": Alias(
        "mcp_tasks_compat.errors.ActiveLimitReached", lambda: errors.ActiveLimitReached
    ),
    "StoreConflict": Alias("mcp_tasks_compat.errors.StoreConflict", lambda: errors.StoreConflict),
    "TaskSupport": Alias("mcp_tasks_compat.dialects.TaskSupport", lambda: _TaskSupport),
    "DEFAULT_INLINE_GRACE_S": Alias(
        "the inline_grace_s= default (docs/server.md)", _engine_name("DEFAULT_INLINE_GRACE_S")
    ),
    "DEFAULT_TTL_FLOOR_MS": Alias(
        "the ttl_floor_ms= default (an hour)", _engine_name("DEFAULT_TTL_FLOOR_MS")
    ),
}


def __getattr__(name: str) -> Any:
    """``Context`` and ``ToolError``: the installed SDK's own, imported on first use (not at import);
    the pre-1.0 names answer with a ``DeprecationWarning``."""
    if name in _SDK_CLASSES:
        return getattr(get_adapter().builder, name)
    return answer(__name__, name, _ALIASES)


class ServerTasks(TaskPolicy):
    """Task support for one server: which tools may run as tasks, and how tasks are kept.

    ``tools`` maps tool names to ``"optional" | "required" | "forbidden"``; tools not listed get
    ``default_support``. ``ttl_floor_ms`` is the least TTL a task gets (default one hour),
    ``poll_policy`` the adaptive poll hint, ``store`` where tasks live (in memory by default).
    ``inline_grace_s``: on 2026-07-28 a call that may be a task waits this long for its tool and
    is answered plainly if the tool is done by then (``0``: always a task; a required tool always
    gets one; a tool whose last three calls outlived it skips it until one is quick, see
    docs/server.md).
    ``dialects`` limits which task dialects are served; ``None`` serves every dialect the
    installed SDK can, and naming one it cannot is refused here, at construction. ``push``
    (default ``True``, mcp 2.x, 2026-07-28) sends ``notifications/tasks`` on a client's
    ``subscriptions/listen`` stream, so it need not poll. ``unauthenticated_2025_scope="task_id"``
    lets any session that knows an unauthenticated 2025-11-25 task's id read it (after a
    reconnect or a restart); the default ``"session"`` keeps it to the session that created it
    (docs/deploy.md says what each means).
    """

    def install(self, server: Any) -> None:
        """Enable tasks on an already-built server (1.x ``Server``/``FastMCP``, 2.x low-level ``Server``).

        An already-built 2.x ``MCPServer`` is refused with the form to use instead.
        """
        get_adapter().server.install(self, server)

    def mcpserver_kwargs(self, **user_kwargs: Any) -> dict[str, Any]:
        """Keyword arguments for ``MCPServer(...)`` on mcp 2.x, composed with the user's own.

        Pass your own ``lifespan``, ``extensions`` and ``middleware`` here rather than to
        ``MCPServer`` directly; they are composed with ours. Refused on mcp 1.x.
        """
        refuse_unsupported(["MCPServer"], side="server")
        return get_adapter().server.mcpserver_kwargs(self, **user_kwargs)


class TaskServer:
    """The installed major's documented server with tasks installed: ``FastMCP`` on mcp 1.x,
    ``MCPServer`` on mcp 2.x (both task dialects), written the same way on both.

    ``store`` and the other :class:`ServerTasks` keywords (``poll_policy``, ``dialects``,
    ``ttl_floor_ms``, ``lease_s``, ...) configure the tasks; every other keyword goes to the SDK's
    server (``instructions=``, ``lifespan=``, on 1.x ``host=``/``port=``...). Register tools with
    :meth:`tool`; :attr:`sdk_server` is the SDK's server for everything else (resources, prompts,
    custom routes). :attr:`tasks` is the :class:`ServerTasks` in use.
    """

    def __init__(self, name: str, *, store: TaskStore | str | None = None, **options: Any) -> None:
        accepted = set(inspect.signature(ServerTasks).parameters) - {"tools"}
        policy_options = {key: options.pop(key) for key in list(options) if key in accepted}
        self.name = name
        self._lifespan: Callable[[Any], AbstractAsyncContextManager[Any]] | None = options.get("lifespan")
        self.tasks = ServerTasks(store=store, **policy_options)
        self._builder = get_adapter().builder
        self.sdk_server: Any = self._builder.new_server(name, self.tasks, options)
        register_task_tools(self.tasks, partial(self._builder.add_tool, self.sdk_server))  # plain_handoff_s

    def __repr__(self) -> str:
        return f"<TaskServer {self.name!r} on {type(self.sdk_server).__name__}>"

    @overload
    def tool(self, function: FunctionT, /) -> FunctionT: ...

    @overload
    def tool(
        self,
        function: None = None,
        /,
        *,
        task: _TaskSupport = "forbidden",
        reruns: int = 0,
        run_on: RunOn | None = None,
        **sdk_tool_kwargs: Any,
    ) -> Callable[[FunctionT], FunctionT]: ...

    def tool(
        self,
        function: Any = None,
        /,
        *,
        task: _TaskSupport = "forbidden",
        reruns: int = 0,
        run_on: RunOn | None = None,
        **sdk_tool_kwargs: Any,
    ) -> Any:
        """Register a tool (sync or async) with the SDK's own decorator, and how it may run as a task.

        ``task``: ``"optional"`` (the client chooses), ``"required"`` (only as a task) or
        ``"forbidden"`` (never, the default). ``name``, ``title``, ``description``,
        ``annotations``, ``structured_output``... go to the SDK's ``tool()``, so the input schema
        comes from the type hints and structured output from the return type, as the SDK makes them.

        ``reruns``: for a tool that is safe to run again (idempotent), how many times a task's run
        lost to a crash or a stopped replica is started again, with the same arguments, instead
        of failed (needs a durable store; see docs/reliability.md).

        ``run_on``: where this tool's task runs happen, ``"here"`` or ``"workers"`` (default: the
        server's ``run_on``). A re-run and a worker's run have no request: the tool still gets the
        SDK's ``Context`` with the server's lifespan value (``ctx.request_context.lifespan_context``,
        or ``current_call().lifespan_context`` without a ``Context``), but what belongs to a client
        session (``ctx.session``'s roots, sampling, elicitation) is refused by name there: ask
        through the task with :func:`elicit`, :func:`create_message` or :func:`list_roots`.
        """
        if task not in SUPPORT_VALUES:
            raise ValueError(f"task must be one of {SUPPORT_VALUES}, not {task!r}")
        if reruns and task == "forbidden":
            raise ValueError("reruns= concerns task runs; a tool with task='forbidden' never runs as a task")
        self.tasks.check_reruns(
            str(sdk_tool_kwargs.get("name") or getattr(function, "__name__", "tool")), reruns
        )

        def register(tool_function: FunctionT) -> FunctionT:
            name = str(sdk_tool_kwargs.get("name") or tool_function.__name__)
            self.tasks.refuse_task_tool_names([name])
            self._builder.add_tool(self.sdk_server, tool_function, sdk_tool_kwargs)
            self.tasks.tools[name] = task
            self.tasks.allow_reruns(name, reruns)
            self.tasks.set_run_on(name, run_on)
            return tool_function

        return register(function) if function is not None else register

    def run(self, transport: str = "stdio", **options: Any) -> None:
        """Serve until stopped: ``"stdio"`` (default) or ``"streamable-http"`` with ``host=``, ``port=``.

        Blocking, like the SDK's own ``run``; other options (``json_response``, ``stateless_http``,
        ...) go to it. Refused (:class:`~._worker.ServesWhenImported`) while ``mcp-tasks-compat
        worker`` imports the module that calls it.
        """
        refuse_serving_on_import(f"{type(self).__name__}.run()")
        self._builder.run(self.sdk_server, transport, options)

    async def serve_worker(
        self,
        *,
        store: TaskStore | str | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        grace_s: float = DEFAULT_GRACE_S,
        stop: Any = None,
    ) -> None:
        """Run this server's queued task runs (``run_on="workers"``) as a worker, until ``stop``
        (an ``anyio.Event``) is set, or SIGTERM/SIGINT without one.

        ``store``: the store the servers queue in (default: this server's own); ``concurrency``
        runs at once; a stop lets the runs finish within ``grace_s`` and gives the rest back to
        the queue for other workers (docs/deploy.md). The server's ``lifespan=`` is entered once
        at start and left at stop: every run here sees its value.
        """
        await serve_worker(
            self.tasks,
            self.sdk_server,
            lifespan=self._lifespan,
            store=store,
            concurrency=concurrency,
            grace_s=grace_s,
            stop=stop,
        )

    def _hosted(self) -> AbstractAsyncContextManager[_engine.EngineHost]:
        """The whole process's host of this server's engine (the CLI serves inside it): the
        lifespan entered once, the store opened and recovered before anything listens; the SDK
        server's own lifespan (per session on mcp 1.x) joins it."""
        lifespan = None if self._lifespan is None else partial(self._lifespan, self.sdk_server)
        runner = self._builder.tool_runner(self.sdk_server)
        return self.tasks.engine.hosted(tools=runner, lifespan=lifespan, process=True)

    def run_worker(self, **options: Any) -> None:
        """:meth:`serve_worker`, blocking (as ``mcp-tasks-compat worker MODULE:ATTR`` runs it)."""
        refuse_serving_on_import(f"{type(self).__name__}.run_worker()")
        anyio.run(partial(self.serve_worker, **options))


# --- a tool body's view of its call ---------------------------------------------------------------

_last_progress: contextvars.ContextVar[float] = contextvars.ContextVar(
    "mcp_tasks_compat_last_progress", default=0.0
)


async def _plain_progress(progress: float | None, total: float | None, message: str | None) -> bool:
    """The one place a plain call's ``notifications/progress`` is sent (``None``: the next step)."""
    value = _engine.next_progress(_last_progress.get(), progress)  # a hand-off's heartbeat counts too
    sent = await get_adapter().builder.send_progress(value, total, message)
    if sent:
        _last_progress.set(value)
        _engine.progress_sent(value)
    return sent


async def report_status(message: str) -> None:
    """Tell the caller how the work goes.

    In a task: the task's status message (rate-bounded), seen by the client's ``on_status``. In a
    plain call whose caller asked for progress: a ``notifications/progress`` carrying ``message``
    (its ``progress`` counts on by one from the last value sent in this call), seen by
    ``on_progress``. Otherwise nothing.
    """
    if await _engine.report_status(message):
        return
    await _plain_progress(None, None, message)


async def report_progress(progress: float, total: float | None = None, message: str | None = None) -> None:
    """Report progress: ``notifications/progress`` in a plain call whose caller asked for it.

    In a task (whose request was already answered) it sets the status message instead: ``message``,
    or ``"progress/total"`` without one, so ``on_status`` sees it; the numbers ride with that status
    (in its ``_meta``), so this library's client hands ``(progress, total, message)`` to a progress
    callback as they were sent, on either dialect. ``progress`` should increase from one report to
    the next, as the MCP specification requires.
    """
    if _engine.current_run() is not None:
        if message is None:
            message = f"{progress:g}/{total:g}" if total is not None else f"{progress:g}"
        numbers = Progress(float(progress), None if total is None else float(total))
        await _engine.report_status(message, numbers)
        return
    await _plain_progress(progress, total, message)


async def log(level: LogLevel, message: Any, *, logger: str | None = None) -> None:
    """A log message for the client (``notifications/message``) on a plain call.

    A task's request was answered when the task was created, so inside a task it goes to this
    server's Python logging (``mcp_tasks_compat.tool``) instead; use :func:`report_status` for
    what the client should see. On 2026-07-28 the SDK sends it only when the request opted in.
    """
    if _engine.current_run() is None and await get_adapter().builder.send_log(level, message, logger):
        return
    _tool_logger.log(
        _PYTHON_LEVELS.get(level, logging.INFO), "%s%s", f"{logger}: " if logger else "", message
    )


_PYTHON_LEVELS: Final[Mapping[str, int]] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


def _current_task() -> Task | None:
    """The task this tool call runs as (its state now), or ``None`` for a plain call.

    Each call reads the task's latest state, so inside the tool's cancel handler (a ``finally`` or
    an ``except`` for the cancellation) it says ``cancelled``; the returned ``Task`` itself is a
    frozen value that does not change afterwards.
    """
    run = _engine.current_run()
    if run is None:
        return None
    _engine_of_run, record = run
    return record.task


class CallHandle:
    """The tool call running here, from the tool's first line (see :func:`current_call`).

    On 2026-07-28 a task-capable call runs undecided for the inline grace and may become a task
    halfway, unrestarted; until then :attr:`task_id` is ``None`` and :attr:`may_become_task` is
    ``True``. On 2025-11-25, and with ``inline_grace_s=0``, a task call is a task from the start.

    Example::

        call = current_call()  # in a tool body
        if call.task_id is None and not call.may_become_task:
            return await quick_build(target)  # a plain call, and it stays one
        call.on_task(lambda task: logger.info("build runs as task %s", task.task_id))  # now or later
    """

    __slots__ = ("_call", "_record")

    def __init__(self, record: TaskRecord | None, call: _engine.InlineCall | None) -> None:
        self._record = record
        self._call = call

    def __repr__(self) -> str:
        state = "task " + self.task_id if self.task_id else "undecided" if self.may_become_task else "plain"
        return f"<CallHandle {state}>"

    def _task_record(self) -> TaskRecord | None:
        if self._record is not None:
            return self._record
        return self._call.record if self._call is not None else None

    @property
    def task(self) -> Task | None:
        """The task this call runs as (its state now), or ``None`` while it is not one."""
        record = self._task_record()
        return record.task if record is not None else None

    @property
    def task_id(self) -> str | None:
        """The task's id once the call is a task; ``None`` before, and for a plain call."""
        task = self.task
        return task.task_id if task is not None else None

    @property
    def lifespan_context(self) -> Any:
        """The server lifespan's value (what your ``lifespan=`` yielded: a database pool, a
        client, a model loaded once), the same in every case: a plain call, a task, a re-run after
        a crash, and a worker's run (whose process entered the same lifespan once at start).
        ``ctx.request_context.lifespan_context`` gives the same value where the SDK gives a
        ``Context``; this works in a tool that takes none. ``None`` outside a tool call.

        Example::

            @app.tool(task="optional", reruns=1, run_on="workers")
            async def report(day: str) -> str:
                pool = current_call().lifespan_context["db"]
                return await pool.fetch_report(day)
        """
        found, value = get_adapter().builder.request_lifespan_context()
        if found:
            return value
        run = _engine.current_run()
        host = run[0].host if run is not None else None
        return host.lifespan_context if host is not None else None

    @property
    def may_become_task(self) -> bool:
        """Not a task yet, but it may be one later (a 2026-07-28 call inside its inline grace)."""
        return self._task_record() is None and self._call is not None and self._call.is_open

    async def wait_for_task(self) -> Task | None:
        """The task, once the call is one; ``None`` at once for a call that will never be one.

        Waiting decides nothing: the inline grace runs out while the tool waits, so a waiting tool
        sees its task a grace later. Use :meth:`on_task` to be told without waiting.
        """
        record = self._task_record()
        if record is None and self._call is not None:
            record = await self._call.attached()
        return record.task if record is not None else None

    def on_task(self, hook: Callable[[Task], None]) -> None:
        """Call ``hook(task)`` when the call becomes a task (at once if it is one; never for a
        plain call). The hook runs in the server's decision: keep it quick (a log line, a metric);
        an exception it raises is logged."""

        def on_record(record: TaskRecord) -> None:
            hook(record.task)

        record = self._task_record()
        if record is not None:
            run_task_hook(on_record, record)
        elif self._call is not None:
            self._call.on_attach(on_record)


def current_call() -> CallHandle:
    """The handle of the tool call running here: its task id now or later (see :class:`CallHandle`).

    Unlike a task, it is there before a 2026-07-28 call becomes a task, so a tool can
    log its task id the moment there is one::

        current_call().on_task(lambda task: logger.info("running as task %s", task.task_id))

    Outside a task-capable call (a plain call, or no tool call at all) it is a handle whose
    ``task_id`` stays ``None``.
    """
    run = _engine.current_run()
    if run is not None:
        return CallHandle(run[1], None)
    return CallHandle(None, _engine.pending_call())


# --- input from the client -----------------------------------------------------------------------


def _wire(value: Any) -> Any:
    """SDK models (``SamplingMessage``, ``ModelPreferences``, ...) as wire JSON; JSON values as they are."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(by_alias=True, mode="json", exclude_none=True)
    if isinstance(value, Mapping):
        return {str(key): _wire(item) for key, item in cast("Mapping[object, Any]", value).items()}
    if isinstance(value, (list, tuple)):
        return [_wire(item) for item in cast("Sequence[Any]", value)]
    return value


async def _ask(method: str, params: dict[str, Any], *, before_task: bool = False) -> Any:
    """One input request (where it goes: :func:`._server.ask`), answered as the SDK's result type."""
    adapter = get_adapter().server
    answer = await ask(
        method,
        params,
        before_task=before_task,
        plain=adapter.plain_input,
        undeclared=adapter.undeclared_capability,
    )
    return adapter.input_result(method, answer)


async def elicit(message: str, requested_schema: Mapping[str, Any], *, before_task: bool = False) -> Any:
    """Ask the user for input (form-mode elicitation): the SDK's ``ElicitResult``.

    ``requested_schema`` is the JSON schema of the form (an object of primitive properties), as
    ``ServerSession.elicit_form`` takes it. Check ``result.action`` (``"accept"``, ``"decline"``,
    ``"cancel"``) before reading ``result.content``. A JSON-RPC error answer raises the SDK's
    error in a plain call; in a task, a client that cannot answer ends the task ``cancelled``.

    ``before_task=True``: "ask first, then run long". On 2026-07-28, while the call is not a task
    yet, the question is a multi-round-trip round (SEP-2322): the call is answered
    ``input_required`` without a task, and the tool runs again from its start with the answer,
    which this call then returns; only a call that then outlives the grace becomes a task. The
    tool must therefore do nothing it cannot repeat before asking. Once the call is a task (and
    always on 2025-11-25) the question is relayed through the task, as without the keyword.
    """
    params = {"mode": "form", "message": message, "requestedSchema": _wire(dict(requested_schema))}
    return await _ask("elicitation/create", params, before_task=before_task)


async def create_message(
    messages: Sequence[Any],
    *,
    max_tokens: int,
    system_prompt: str | None = None,
    include_context: str | None = None,
    temperature: float | None = None,
    stop_sequences: Sequence[str] | None = None,
    metadata: Mapping[str, Any] | None = None,
    model_preferences: Any = None,
    before_task: bool = False,
) -> Any:
    """Ask the client's model for a completion (sampling): the SDK's ``CreateMessageResult``.

    The keywords are ``ServerSession.create_message``'s. ``messages`` and ``model_preferences``
    may be the SDK's models (``SamplingMessage``, ``ModelPreferences``) or their wire JSON.
    ``before_task`` is :func:`elicit`'s.
    """
    params: dict[str, Any] = {"messages": _wire(list(messages)), "maxTokens": max_tokens}
    optional = {
        "systemPrompt": system_prompt,
        "includeContext": include_context,
        "temperature": temperature,
        "stopSequences": list(stop_sequences) if stop_sequences is not None else None,
        "metadata": _wire(metadata) if metadata is not None else None,
        "modelPreferences": _wire(model_preferences) if model_preferences is not None else None,
    }
    params.update({key: value for key, value in optional.items() if value is not None})
    return await _ask("sampling/createMessage", params, before_task=before_task)


async def list_roots(*, before_task: bool = False) -> Any:
    """The client's roots: the SDK's ``ListRootsResult`` (``before_task`` is :func:`elicit`'s)."""
    return await _ask("roots/list", {}, before_task=before_task)
