"""Spans of a task's life, and its trace context as a W3C carrier kept with the task.

The carrier (``traceparent``, ``tracestate``) is what a store keeps of the trace that created a
task, so whatever happens to the task later, on any replica, joins that trace: the run (a child
of the creating ``tools/call``), a re-run after a crash, a ``tasks/cancel`` or ``tasks/update``
(a span in the task's trace, linked to the request's own). Every function here is a flag check
and returns a shared no-op when no tracer provider is set (:func:`.otel.tracing`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Final

from .otel import INSTRUMENTATION_NAME, trace_api, tracing

__all__ = [
    "ATTR_DIALECT",
    "ATTR_STATUS",
    "ATTR_TASK_ID",
    "ATTR_TOOL",
    "NO_SPAN",
    "CallSpan",
    "NoSpan",
    "RunSpan",
    "client_call",
    "current_carrier",
    "forget",
    "joined_span",
    "server_request",
    "start_run",
    "status_event",
    "with_trace_context",
]

ATTR_TOOL: Final = "gen_ai.tool.name"
"""OpenTelemetry's GenAI/MCP semantic conventions name a tool so."""
ATTR_DIALECT: Final = "mcp_tasks.dialect"
ATTR_STATUS: Final = "mcp_tasks.task.status"
ATTR_TASK_ID: Final = "mcp_tasks.task.id"
"""On spans only, never on a metric (unbounded)."""
STATUS_EVENT: Final = "mcp_tasks.task.status"


_tracers: dict[int, Any] = {}


def _tracer() -> Any:
    """The library's tracer from the global provider (made once per provider: an SDK makes a new
    tracer object on every ``get_tracer``)."""
    api = trace_api()
    assert api is not None  # only called once tracing() said yes
    provider = api.get_tracer_provider()
    tracer = _tracers.get(id(provider))
    if tracer is None:
        from .._version import __version__

        _tracers.clear()  # one provider at a time (a test may replace it)
        tracer = _tracers[id(provider)] = provider.get_tracer(INSTRUMENTATION_NAME, __version__)
    return tracer


def forget() -> None:
    """Forget the tracer made (the tracer provider was replaced)."""
    _tracers.clear()


def _propagate() -> Any:
    import opentelemetry.propagate

    return opentelemetry.propagate


def current_carrier() -> dict[str, str]:
    """The current trace context as W3C headers (empty when not tracing or outside any span)."""
    if not tracing():
        return {}
    carrier: dict[str, str] = {}
    _propagate().inject(carrier)
    return carrier


def with_trace_context(meta: dict[str, Any] | None) -> dict[str, Any] | None:
    """``meta`` (a request's ``_meta``) with the current trace context added (a new dict: the
    caller's is never changed); ``meta`` itself when not tracing. mcp 2.x injects its own
    request span's context over it; mcp 1.x sends this one."""
    if not tracing():
        return meta
    carrier = current_carrier()
    if not carrier:
        return meta
    return {**(meta or {}), **carrier}


def _context_of(carrier: Mapping[str, Any] | None) -> Any:
    """The context a carrier names, or ``None`` (absent, malformed, no valid span)."""
    if not carrier:
        return None
    try:
        context = _propagate().extract(dict(carrier))
    except (ValueError, TypeError):
        return None
    api = trace_api()
    assert api is not None
    if not api.get_current_span(context).get_span_context().is_valid:
        return None
    return context


class NoSpan:
    """What every hook returns when not tracing: does nothing, allocates nothing."""

    __slots__ = ()

    def __enter__(self) -> NoSpan:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def task(self, task_id: str) -> None:
        return None

    def current(self) -> NoSpan:
        return self

    def close(self, error: BaseException | None = None) -> None:
        return None


NO_SPAN: Final = NoSpan()


class CallSpan:
    """A span made current for a ``with`` block; an exception escaping it sets the error status."""

    __slots__ = ("_span", "_token")

    def __init__(self, span: Any) -> None:
        self._span = span
        self._token: object = None

    def __enter__(self) -> CallSpan:
        import opentelemetry.context

        api = trace_api()
        assert api is not None
        self._token = opentelemetry.context.attach(api.set_span_in_context(self._span))
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        import opentelemetry.context

        opentelemetry.context.detach(self._token)  # pyright: ignore[reportArgumentType]
        self.close(error)

    def task(self, task_id: str) -> None:
        """The call became a task: name it on the span."""
        self._span.set_attribute(ATTR_TASK_ID, task_id)

    def current(self) -> CallSpan:
        """The span as the current one for a ``with`` block that does not end it (a started
        task's span lives from its creation to its outcome, across calls of its handle)."""
        return _Current(self._span)

    def close(self, error: BaseException | None = None) -> None:
        """End the span (once); ``error``: the call failed so."""
        if not self._span.is_recording():
            return
        if error is not None:
            _set_error(self._span, error)
        self._span.end()


def _set_error(span: Any, error: BaseException) -> None:
    api = trace_api()
    assert api is not None
    span.set_attribute("error.type", getattr(error, "code", None) or type(error).__qualname__)
    span.set_status(api.Status(api.StatusCode.ERROR, str(error) or type(error).__qualname__))


def client_call(tool: str, dialect: str | None, *, kind: str = "execute_tool") -> CallSpan | NoSpan:
    """The span of one ``call_tool``/``start_tool``: the whole follow (creation, polls or push,
    input rounds, result), ``execute_tool {tool}`` as the GenAI conventions name a tool call."""
    if not tracing():
        return NO_SPAN
    attributes: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", ATTR_TOOL: tool}
    if dialect is not None:
        attributes[ATTR_DIALECT] = dialect
    api = trace_api()
    assert api is not None
    return CallSpan(_tracer().start_span(f"{kind} {tool}", kind=api.SpanKind.INTERNAL, attributes=attributes))


def server_request(
    method: str, tool: str | None, meta: Mapping[str, Any] | None, *, protocol_version: str | None
) -> CallSpan | NoSpan:
    """A ``SERVER`` span for a request, parented by the trace context of its ``_meta``: what
    mcp 2.x opens for every request itself (``mcp.server._otel``), for mcp 1.x."""
    if not tracing():
        return NO_SPAN
    attributes: dict[str, Any] = {"mcp.method.name": method}
    if protocol_version is not None:
        attributes["mcp.protocol.version"] = protocol_version
    if method == "tools/call" and tool is not None:
        attributes["gen_ai.operation.name"] = "execute_tool"
        attributes[ATTR_TOOL] = tool
    api = trace_api()
    assert api is not None
    name = f"{method} {tool}" if tool else method
    span = _tracer().start_span(
        name, kind=api.SpanKind.SERVER, attributes=attributes, context=_context_of(meta)
    )
    return CallSpan(span)


class RunSpan:
    """The span of a task's run: a child of the ``tools/call`` that created the task (whose trace
    context the task keeps), ended when the task's outcome is saved."""

    __slots__ = ("_span", "started")

    def __init__(self, span: Any) -> None:
        self._span = span
        self.started = time.monotonic()

    def current(self) -> CallSpan:
        """The run span as the current one for the work (its own spans nest under it); leaving
        the block does not end it: :meth:`end` does, once the outcome is saved."""
        return _Current(self._span)

    def status(self, status: str, message: str | None) -> None:
        status_event(self._span, status, message)

    def task(self, task_id: str) -> None:
        """The call became this task (a run started before its task existed)."""
        self._span.set_attribute(ATTR_TASK_ID, task_id)

    def end(self, status: str, error: str | None) -> None:
        """The task ended ``status`` (``error``: why it failed)."""
        if not self._span.is_recording():
            return
        self._span.set_attribute(ATTR_STATUS, status)
        if error is not None:
            api = trace_api()
            assert api is not None
            self._span.set_status(api.Status(api.StatusCode.ERROR, error))
        self._span.end()


class _Current(CallSpan):
    __slots__ = ()

    def close(self, error: BaseException | None = None) -> None:
        if error is not None and not _is_cancellation(error) and self._span.is_recording():
            self._span.record_exception(error)


def _is_cancellation(error: BaseException) -> bool:
    return not isinstance(error, Exception)


def start_run(
    tool: str, dialect: str, task_id: str, carrier: Mapping[str, Any] | None, *, attempt: int = 1
) -> RunSpan | None:
    """A run's span, parented by the task's creating trace context (``None`` when not tracing)."""
    if not tracing():
        return None
    api = trace_api()
    assert api is not None
    attributes: dict[str, Any] = {ATTR_TOOL: tool, ATTR_DIALECT: dialect, "mcp_tasks.run.attempt": attempt}
    if task_id:
        attributes[ATTR_TASK_ID] = task_id
    span = _tracer().start_span(
        f"mcp_tasks.run {tool}",
        kind=api.SpanKind.INTERNAL,
        attributes=attributes,
        context=_context_of(carrier),
    )
    return RunSpan(span)


def joined_span(
    name: str, carrier: Mapping[str, Any] | None, *, task_id: str, tool: str, dialect: str
) -> CallSpan | NoSpan:
    """A span in the task's own trace for something done to it (``tasks/cancel``,
    ``tasks/update``), on whatever replica: parented by the task's creating context, linked to the
    request's own span (the caller's trace)."""
    if not tracing():
        return NO_SPAN
    api = trace_api()
    assert api is not None
    here = api.get_current_span().get_span_context()
    links = [api.Link(here)] if here.is_valid else []
    attributes = {ATTR_TOOL: tool, ATTR_DIALECT: dialect, ATTR_TASK_ID: task_id, "mcp.method.name": name}
    parent = _context_of(carrier)
    span = _tracer().start_span(
        f"{name} {tool}", kind=api.SpanKind.INTERNAL, attributes=attributes, context=parent, links=links
    )
    return CallSpan(span)


def status_event(
    span: Any | None = None, status: str = "", message: str | None = None, *, besides: RunSpan | None = None
) -> None:
    """A status change as an event on ``span`` (default: the current span, if recording and not
    the span of ``besides``, which gets its own)."""
    if not tracing():
        return
    target: Any = span
    if target is None:
        api = trace_api()
        assert api is not None
        target = api.get_current_span()
        if besides is not None and target is besides._span:  # pyright: ignore[reportPrivateUsage]
            return
    if not target.is_recording():
        return
    attributes: dict[str, Any] = {ATTR_STATUS: status}
    if message:
        attributes["mcp_tasks.task.status_message"] = message
    target.add_event(STATUS_EVENT, attributes)
