"""What the recording server (``wire_relay.py DIR`` in front of ``render_server.py``) says happened.

The checks are made on the server's side (the records in ``DIR``): a call ran as a
task when the tool's run had a task id; it was cancelled when the tool's run was cancelled and the
client sent ``tasks/cancel``; reads are the ``tasks/get`` / ``tasks/result`` requests on the wire.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

RELAY = str(Path(__file__).with_name("wire_relay.py"))
MCP_MAJOR = int(importlib.metadata.version("mcp").split(".")[0])
READ_METHODS = ("tasks/get", "tasks/result")
WAIT_SECONDS = 30.0


@dataclass
class Records:
    """The server's own account of a test's calls (its records folder)."""

    folder: Path

    @property
    def command(self) -> str:
        return sys.executable

    @property
    def args(self) -> list[str]:
        """``python wire_relay.py DIR``: how a framework starts the recording server over stdio."""
        return [RELAY, str(self.folder)]

    def _lines(self, name: str) -> list[dict[str, Any]]:
        path = self.folder / name
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]

    def summary(self) -> str:
        """What the server saw, short enough for an assertion message."""
        events = Counter(f"{run['tool']} {run['event']}" for run in self.runs())
        return f"runs: {dict(events)}; requests: {dict(self.requests())}"

    def runs(self, event: str | None = None) -> list[dict[str, Any]]:
        """The tool runs' events (``started``, ``finished``, ``cancelled``), oldest first."""
        return [line for line in self._lines("tools.jsonl") if event is None or line["event"] == event]

    def requests(self) -> Counter[str]:
        """How many requests of each method the client sent."""
        return Counter(line["method"] for line in self._lines("wire.jsonl"))

    def reads(self) -> int:
        """Server reads of a task's state or result (``tasks/get`` and ``tasks/result``)."""
        counted = self.requests()
        return sum(counted[method] for method in READ_METHODS)

    def finished_task(self, tool: str) -> str:
        """The task id the one finished run of ``tool`` ran in; fails when it ran as a plain call."""
        finished = [run for run in self.runs("finished") if run["tool"] == tool]
        assert len(finished) == 1, self.summary()
        assert finished[0]["task_id"], f"{tool} ran as a plain call, not as a task: {self.summary()}"
        return str(finished[0]["task_id"])

    async def wait_for(self, event: str, tool: str, *, in_task: bool = False) -> dict[str, Any]:
        """The first ``event`` of ``tool`` (in a task if ``in_task``), once recorded (bounded wait)."""
        deadline = time.monotonic() + WAIT_SECONDS
        while time.monotonic() < deadline:
            for run in self.runs(event):
                if run["tool"] == tool and (run["task_id"] or not in_task):
                    return run
            await anyio.sleep(0.05)  # the condition is in another process's file: look again
        raise AssertionError(f"the server never recorded {event!r} for {tool}: {self.summary()}")

    async def running_task(self, tool: str) -> str:
        """Wait until ``tool`` reports a frame from inside a task (past any inline grace); its id."""
        return str((await self.wait_for("frame", tool, in_task=True))["task_id"])

    async def assert_cancelled(self, tool: str) -> None:
        """The tool's task was cancelled on the server: the run stopped and ``tasks/cancel`` arrived."""
        cancelled = await self.wait_for("cancelled", tool)
        assert cancelled["task_id"], f"the cancelled {tool} run was not a task: {self.summary()}"
        assert self.requests()["tasks/cancel"] >= 1, self.summary()
        assert not [run for run in self.runs("finished") if run["tool"] == tool], self.summary()


def assert_progress(messages: list[str | None], frames: int) -> None:
    """The tool's own progress reached the framework's callback: its frames, in order.

    Which frames arrive depends on timing (statuses are coalesced, or read by polling), so only
    that some did, and in order, is asserted here; the last message's fidelity is tests/client's.
    """
    sent = [f"frame {frame}/{frames}" for frame in range(1, frames + 1)]
    heard = [message for message in messages if message is not None]
    assert heard, f"no progress reached the framework (heard {messages})"
    assert all(message in sent for message in heard), heard
    order = [sent.index(message) for message in heard]
    assert order == sorted(order), heard


async def cancel_once_running(records: Records, tool: str, call: Callable[[], Awaitable[Any]]) -> None:
    """Start the framework's ``call``, cancel it (as asyncio cancels an agent: once) once ``tool``
    runs as a task, and check both ends: the caller saw ``CancelledError``, the server cancelled
    the task.

    One ``Task.cancel()``, not an anyio cancel scope: frameworks run a tool call in tasks of their
    own (LangChain, openai-agents), where anyio's repeated delivery would reach them as repeated
    native cancels, which is not how an asyncio agent is stopped.
    """
    call_task = asyncio.ensure_future(call())
    try:
        await records.running_task(tool)
    finally:
        call_task.cancel()
    done, _ = await asyncio.wait({call_task}, timeout=WAIT_SECONDS)
    assert done, "the cancelled call did not end"
    assert call_task.cancelled(), f"the caller saw {call_task.exception()!r}, not CancelledError"
    await records.assert_cancelled(tool)
