"""A request as an adapter presents it to a service, without any SDK: the services' tests use it."""

from __future__ import annotations

import contextvars
from collections.abc import Generator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio.abc

from mcp_tasks_compat._engine import InputRefused
from mcp_tasks_compat._server import Launch
from mcp_tasks_compat.core._model import JsonRpcError


@dataclass
class FakeCaller:
    """Who asks, on which session, the client's answers, and where a run lives (``group``)."""

    principal: str | None = None
    session_key: str | None = "one"
    speaks_tasks: bool = False
    answers: list[Mapping[str, Any] | JsonRpcError] = field(default_factory=lambda: [])
    relayed: list[Mapping[str, Any]] = field(default_factory=lambda: [])
    group: anyio.abc.TaskGroup | None = None
    notified: list[Mapping[str, Any]] = field(default_factory=lambda: [])
    launched: list[str] = field(default_factory=lambda: [])
    detached: list[bool] = field(default_factory=lambda: [])

    async def relay(self, request: Mapping[str, Any]) -> Mapping[str, Any]:
        self.relayed.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, JsonRpcError):
            raise InputRefused(answer)
        return answer

    @contextmanager
    def launch(self, tool_name: str, *, detach: bool = True) -> Generator[Launch]:
        assert self.group is not None, "this caller was given no task group for runs"
        self.launched.append(tool_name)
        self.detached.append(detach)
        yield Launch(self.group, contextvars.copy_context(), self._notify)

    async def _notify(self, wire: Mapping[str, Any]) -> None:
        self.notified.append(wire)
