"""The ``ClientSession`` subclass both majors ship: the library's keywords applied, ``call_tool``
running tasks.

``ClientSession`` has the same import path and the same ``call_tool(name, arguments,
read_timeout_seconds, progress_callback, *, meta, ...)`` shape on both majors (1.x takes a
``timedelta`` for the timeout, 2.x a float; both are accepted), so the class is written once. The
public layer hands in its own ``call_tool_with`` (``call_tool`` taking the normalised options) and
``session_kwargs`` (this layer cannot import it),
and the adapters' connections send the plain request through ``ClientSession.call_tool`` itself,
so the override is never re-entered.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from functools import cache
from typing import Any

from mcp.client.session import ClientSession

from .._client import SessionCall, call_with_defaults
from .._client.journal import Endpoint, bind_session

__all__ = ["LIBRARY_SESSION_KEYWORDS", "check_sdk_options", "task_session_class"]

LIBRARY_SESSION_KEYWORDS = ("extensions", "result_claims", "notification_bindings", "message_handler")
"""``ClientSession`` keywords that go through ``session_kwargs(...)`` to be composed with ours."""

_SESSION_CALL_PARAMETERS = ("self", "name", "arguments", "read_timeout_seconds", "progress_callback", "meta")


@cache
def _sdk_call_options() -> frozenset[str]:
    """The installed SDK's ``ClientSession.call_tool`` keywords beyond the ones every major has (mcp
    2.x: its multi-round flow and claims, ``input_responses``, ``request_state``,
    ``allow_input_required``, ``allow_claimed``; ``tests/client/test_sdk_call_options.py`` sweeps them)."""
    parameters = inspect.signature(ClientSession.call_tool).parameters
    return frozenset(parameters) - frozenset(_SESSION_CALL_PARAMETERS)


def check_sdk_options(options: Mapping[str, Any]) -> None:
    """Refuse a keyword the installed SDK's ``call_tool`` does not take, as Python would there."""
    unknown = sorted(set(options) - _sdk_call_options())
    if unknown:
        raise TypeError(f"ClientSession.call_tool() got an unexpected keyword argument {unknown[0]!r}")


CallTool = Callable[..., Awaitable[Any]]
SessionKwargs = Callable[..., dict[str, Any]]


@cache
def task_session_class(
    call_tool_with: CallTool, session_kwargs: SessionKwargs, make_extension: Callable[..., Any]
) -> type[Any]:
    """The subclass, made once per (``call_tool_with``, ``session_kwargs``, ``extension``) of the
    public layer."""

    class TaskClientSession(ClientSession):
        """A ``ClientSession`` whose ``call_tool`` runs a tool as a task where the server offers one.

        Built like ``ClientSession`` (same positional and keyword arguments), plus ``dialect``,
        ``mode`` and ``on_status`` (the defaults of every call); ``extensions``,
        ``result_claims``, ``notification_bindings`` and ``message_handler`` are composed with the
        library's through ``session_kwargs``. ``call_tool`` keeps the SDK's signature and adds
        ``mode=``, ``on_status=``, ``timeout=`` and ``ttl=``; it returns the SDK's
        ``CallToolResult``, so a framework that calls ``session.call_tool(...)`` gets tasks.
        ``progress_callback`` hears a plain call's progress and, in a task without ``on_status``,
        its status messages. The SDK's own keywords (mcp 2.x ``allow_input_required``...) are
        honoured as the SDK honours them, and a task the call causes is followed all the same.
        ``journal`` (a ``TaskJournal``) records every task made on the session, bound to
        ``endpoint`` (the server's URL, or its command line as a list), which it needs.
        """

        def __init__(
            self,
            read_stream: Any,
            write_stream: Any,
            *args: Any,
            dialect: Any = None,
            mode: str = "auto",
            on_status: Any = None,
            push: bool = True,
            journal: Any = None,
            endpoint: Any = None,
            **kwargs: Any,
        ) -> None:
            composed = {key: kwargs.pop(key) for key in LIBRARY_SESSION_KEYWORDS if key in kwargs}
            kwargs.update(session_kwargs(dialect=dialect, push=push, **composed))
            if journal is not None or endpoint is not None:  # checked before the session is built
                bind_session(
                    self, endpoint=None if endpoint is None else Endpoint.of(endpoint), store=journal
                )
            super().__init__(read_stream, write_stream, *args, **kwargs)
            self.task_mode = mode
            self.task_on_status = on_status

        extension = staticmethod(make_extension)
        """The same tasks as the extension ``mcp.Client(server, extensions=[...])`` takes (mcp 2.x)."""

        async def call_tool(  # pyright: ignore[reportIncompatibleMethodOverride]
            self,
            name: str,
            arguments: dict[str, Any] | None = None,
            read_timeout_seconds: Any = None,
            progress_callback: Any = None,
            *,
            meta: Any = None,
            mode: str | None = None,
            on_status: Any = None,
            timeout: Any = None,
            ttl: Any = None,
            **sdk_options: Any,
        ) -> Any:
            check_sdk_options(sdk_options)
            call = SessionCall(
                name, arguments, read_timeout_seconds, progress_callback, meta, mode, on_status, timeout, ttl,
                sdk_options,
            )  # fmt: skip
            return await call_with_defaults(call_tool_with, self, self, call)

    return TaskClientSession
