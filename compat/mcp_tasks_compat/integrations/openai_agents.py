"""openai-agents' MCP server classes whose sessions run long tools as tasks::

    from mcp_tasks_compat.integrations.openai_agents import TaskMCPServerStdio

    server = TaskMCPServerStdio(params={"command": "python", "args": ["server.py"]})
    agent = Agent(name="assistant", mcp_servers=[server])

``TaskMCPServerStdio``, ``TaskMCPServerSse`` and ``TaskMCPServerStreamableHttp`` are subclasses of
openai-agents' ``MCPServerStdio``, ``MCPServerSse`` and ``MCPServerStreamableHttp``, taking the same
arguments; only the session differs: a :data:`~mcp_tasks_compat.client.TaskClientSession`, opened
with :func:`~mcp_tasks_compat.client.negotiate` (``server/discover`` first on mcp 2.x), whose
``call_tool`` follows a task to its result. ``client_session_timeout_seconds`` stays the read
timeout of each request (the framework's default is 5 s), not a limit on the task: a tool that runs
for minutes is followed with short requests. ``message_handler`` is kept.

Why an adapter: openai-agents builds its session inside ``connect()`` (a ``ClientSession`` on mcp
1.x, an ``mcp.Client`` on 2.x) and has no parameter for the session class or for ``mcp.Client``'s
``extensions=``. So ``connect()`` is replaced: the framework's own transport (``create_streams()``,
public), then the library's session. Two framework-private names are used, each probed where it is
used: ``_client_session_read_timeout`` (turns the timeout into what the installed SDK takes; when
it is absent the session gets no read timeout and a warning is logged) and
``_client_session_context`` (overridden, so the session openai-agents opens again for an isolated
retry over streamable HTTP runs tasks too). What ``connect()`` no longer does: map transport errors
to ``UserError`` (the transport's own exception is raised) and, on mcp 1.x, keep the
``InitializeResult`` (``server_initialize_result`` is ``None`` there).

The classes are built on first use, so importing this module does not import openai-agents; using
a class without openai-agents installed raises ``ImportError`` naming the package to install.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from contextlib import AsyncExitStack, asynccontextmanager
from functools import cache
from typing import TYPE_CHECKING, Any

from . import require_framework

__all__ = ["TaskMCPServerSse", "TaskMCPServerStdio", "TaskMCPServerStreamableHttp"]

_logger = logging.getLogger(__name__)

FRAMEWORK_CLASSES = {
    "TaskMCPServerStdio": "MCPServerStdio",
    "TaskMCPServerSse": "MCPServerSse",
    "TaskMCPServerStreamableHttp": "MCPServerStreamableHttp",
}
"""Each class of this module and the openai-agents class it extends (``agents.mcp``)."""


def _framework(module: str) -> Any:
    return require_framework(module, "openai-agents", adapter=__name__)


@cache
def _warn_no_read_timeout() -> None:
    _logger.warning(
        "openai-agents has no _client_session_read_timeout: client_session_timeout_seconds is not "
        "applied to the task-running session (its requests wait without a read timeout)"
    )


def _read_timeout(server: Any) -> Any:
    """``client_session_timeout_seconds`` as openai-agents converts it for the installed SDK."""
    convert = getattr(_framework("agents.mcp.server"), "_client_session_read_timeout", None)
    if convert is None:
        _warn_no_read_timeout()
        return None
    return convert(server.client_session_timeout_seconds)


@cache
def task_server_class(name: str) -> type[Any]:
    """The class ``name`` of this module, built once over openai-agents' own class."""
    from ..client import TaskClientSession, negotiate

    base: type[Any] = getattr(_framework("agents.mcp"), FRAMEWORK_CLASSES[name])

    class TaskServer(base):  # type: ignore[misc, valid-type]
        @asynccontextmanager
        async def _client_session_context(self, read_timeout: Any = None) -> AsyncGenerator[Any, None]:
            async with AsyncExitStack() as stack:
                read, write, *rest = await stack.enter_async_context(self.create_streams())
                if self.session is None and rest and callable(rest[0]):
                    self._get_session_id = rest[0]  # the Mcp-Session-Id getter, as connect() keeps it
                timeout = read_timeout if read_timeout is not None else _read_timeout(self)
                session: Any = TaskClientSession(
                    read, write, read_timeout_seconds=timeout, message_handler=self.message_handler
                )
                session = await stack.enter_async_context(session)
                await negotiate(session)
                yield session

        async def connect(self) -> None:
            """Open the transport and a task-running session on it (the framework's cleanup on failure)."""
            try:
                session = await self.exit_stack.enter_async_context(self._client_session_context())
            except BaseException:
                await self.cleanup()
                raise
            self.server_initialize_result = getattr(session, "initialize_result", None)
            self.session = session

    TaskServer.__name__ = TaskServer.__qualname__ = name
    TaskServer.__doc__ = (
        f"openai-agents' ``{FRAMEWORK_CLASSES[name]}`` whose session runs long tools as tasks "
        f"(same arguments; see :mod:`{__name__}`)."
    )
    TaskServer.__module__ = __name__
    return TaskServer


def __getattr__(name: str) -> Any:
    """The classes are built on first use: they subclass openai-agents' classes."""
    if name in FRAMEWORK_CLASSES:
        return task_server_class(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if TYPE_CHECKING:
    TaskMCPServerStdio: type[Any]
    """openai-agents' ``MCPServerStdio`` whose session runs long tools as tasks."""
    TaskMCPServerSse: type[Any]
    """openai-agents' ``MCPServerSse`` whose session runs long tools as tasks.

    Example::

        async with TaskMCPServerSse(params={"url": "http://127.0.0.1:8000/sse"}) as server:
            agent = Agent(name="assistant", mcp_servers=[server])
            result = await Runner.run(agent, "Build the docs")
    """
    TaskMCPServerStreamableHttp: type[Any]
    """openai-agents' ``MCPServerStreamableHttp`` whose session runs long tools as tasks.

    Example::

        async with TaskMCPServerStreamableHttp(params={"url": "http://127.0.0.1:8000/mcp"}) as server:
            agent = Agent(name="assistant", mcp_servers=[server])
            result = await Runner.run(agent, "Build the docs")
    """
