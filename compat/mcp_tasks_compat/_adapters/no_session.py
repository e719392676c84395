"""The client session a tool sees when it runs with no request: a re-run, or a worker's run.

Such a run has the server's lifespan (``ctx.request_context.lifespan_context``) but no client
connection: what a session carries (the client's roots, sampling, elicitation, its capabilities)
cannot cross, and using it is refused by name, with the library's way that does cross (questions
relayed through the task, on any replica). Progress and log messages, which need no answer, go
to the task's status message and the server's log.
"""

from __future__ import annotations

import logging
from typing import Any, Final, NoReturn

from .._engine import report_status

__all__ = ["NoClientSession"]

_tool_logger = logging.getLogger("mcp_tasks_compat.tool")

_RELAYED: Final = {
    "elicit": "elicit",
    "elicit_form": "elicit",
    "elicit_url": "elicit",
    "create_message": "create_message",
    "list_roots": "list_roots",
}
"""The session's requests the library relays through the task instead (its function of that name)."""


class NoClientSession:
    """Stands for ``ctx.session`` in a run with no request (see the module docstring)."""

    client_params = None
    client_capabilities = None

    def __init__(self, why: str, refusal: type[Exception]) -> None:
        self._why = why
        self._refusal = refusal
        """The SDK's ``ToolError``: its message reaches the caller, where a crash's would not."""

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        text = message if message is not None else f"{progress:g}" + (f"/{total:g}" if total else "")
        await report_status(text)

    async def send_progress_notification(
        self, progress_token: Any, progress: float, *args: Any, **kwargs: Any
    ) -> None:
        del progress_token
        await self.report_progress(progress, kwargs.get("total"), kwargs.get("message"))

    async def send_log_message(self, level: Any, data: Any, *args: Any, **kwargs: Any) -> None:
        del args
        _tool_logger.info("%s: %s", level, data, extra={"mcp_logger": kwargs.get("logger")})

    def check_client_capability(self, capability: Any) -> bool:
        del capability
        return False

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _refusing(name, self._why, self._refusal)


def _refusing(name: str, why: str, refusal: type[Exception]) -> Any:
    relayed = _RELAYED.get(name)
    fix = (
        f"call mcp_tasks_compat.server.{relayed}(...) instead, which asks through the task"
        if relayed
        else "keep the tool on the server (run_on='here', no reruns=) if it needs the client session"
    )

    def refuse(*args: Any, **kwargs: Any) -> NoReturn:
        del args, kwargs
        raise refusal(f"ctx.session.{name} is not available: {why}, with no client session; {fix}")

    return refuse
