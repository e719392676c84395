"""A client peer WITHOUT tasks on FastMCP (3.x on mcp 1.x, 4.x on mcp 2.x): ``fastmcp.Client`` calling
tools plainly, against a server with the plain hand-off on (docs/any-host.md).

The same scenarios and report as ``ts/plain_client.mjs`` (see its header), so one test checks both.
It runs in its own virtual environment (tests/interop/requirements-fastmcp*.txt, made by nox), with
only ``fastmcp`` installed: it imports nothing of this repository.

Usage::

    python fastmcp_plain_client.py [--long TOOL] [--result-args JSON --mark FILE --release FILE]
        [--cancel-args JSON] [--ask-args JSON --answer JSON] [--timeout-ms N] (--url URL | -- COMMAND ARGS...)
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

MAX_FOLLOW = 30
"""``task_result`` calls per scenario; each waits up to the server's deadline."""

Result = dict[str, Any]
STARTED = time.monotonic()


def _parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    split = argv.index("--") if "--" in argv else len(argv)
    parser = argparse.ArgumentParser(prog="fastmcp_plain_client.py")
    parser.add_argument("--url")
    parser.add_argument("--long", default="held")
    parser.add_argument("--result-args")
    parser.add_argument("--mark")
    parser.add_argument("--release")
    parser.add_argument("--cancel-args")
    parser.add_argument("--ask-args")
    parser.add_argument("--answer", default='{"answer": "Ada"}')
    parser.add_argument("--timeout-ms", type=float, default=60_000)
    options = parser.parse_args(argv[:split])
    command = argv[split + 1 :]
    if (options.url is None) == (not command):
        parser.error("give exactly one server: --url URL or -- COMMAND ARGS...")
    return options, command


def _marks(path: str) -> list[str]:
    try:
        return Path(path).read_text(encoding="utf-8").split()
    except FileNotFoundError:
        return []


class Scenario:
    """One scenario's record: every call and its result, as the report carries them."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.record: dict[str, Any] = {"steps": []}

    async def call(self, tool: str, arguments: dict[str, Any]) -> Result:
        """A plain ``tools/call`` through FastMCP's ``call_tool`` (an error result is not raised)."""
        result = await self.client.call_tool(tool, arguments, raise_on_error=False)
        shown: Result = {
            "content": [block.model_dump(mode="json", exclude_none=True) for block in result.content],
            "isError": bool(result.is_error),
        }
        if result.structured_content is not None:
            shown["structuredContent"] = result.structured_content
        self.record["steps"].append({"tool": tool, "arguments": arguments, "result": shown})
        return shown

    async def hand_off(self, tool: str, arguments: dict[str, Any], mark: str | None = None) -> str:
        started = time.monotonic()
        first = await self.call(tool, arguments)
        self.record["handoff_s"] = round(time.monotonic() - started, 3)
        self.record["marks_at_handoff"] = None if mark is None else _marks(mark)
        self.record["handoff"] = first
        task_id = (first.get("structuredContent") or {}).get("taskId")
        if not isinstance(task_id, str):
            raise RuntimeError(f"{tool} did not hand off: {json.dumps(first)}")
        return task_id

    async def follow(self, task_id: str, until: Callable[[Result], bool] | None = None) -> Result:
        done = until or (lambda result: not _still_running(result, task_id))
        for _ in range(MAX_FOLLOW):
            result = await self.call("task_result", {"task_id": task_id})
            if done(result):
                return result
        raise RuntimeError(f"task {task_id} still running after {MAX_FOLLOW} task_result calls")


def _still_running(result: Result, task_id: str) -> bool:
    shown = result.get("structuredContent") or {}
    return shown.get("taskId") == task_id and shown.get("status") == "working"


async def _run(client: Any, options: argparse.Namespace, report: dict[str, Any]) -> None:
    """The scenarios asked for, at once on the one connection (each waits for the deadline)."""
    report["tools"] = [tool.name for tool in await client.list_tools()]
    scenarios = []
    if options.result_args is not None:
        scenarios.append(_result(Scenario(client), options, report))
    if options.cancel_args is not None:
        scenarios.append(_cancel(Scenario(client), options, report))
    if options.ask_args is not None:
        scenarios.append(_answer(Scenario(client), options, report))
    await asyncio.gather(*scenarios)


async def _result(scenario: Scenario, options: argparse.Namespace, report: dict[str, Any]) -> None:
    report["result"] = scenario.record
    task_id = await scenario.hand_off(options.long, json.loads(options.result_args), options.mark)
    if options.release is not None:
        Path(options.release).write_text("go\n", encoding="utf-8")  # noqa: ASYNC240 - a few bytes
    scenario.record["final"] = await scenario.follow(task_id)


async def _cancel(scenario: Scenario, options: argparse.Namespace, report: dict[str, Any]) -> None:
    report["cancel"] = scenario.record
    task_id = await scenario.hand_off(options.long, json.loads(options.cancel_args))
    scenario.record["cancelled"] = await scenario.call("task_cancel", {"task_id": task_id})
    scenario.record["final"] = await scenario.call("task_status", {"task_id": task_id})


async def _answer(scenario: Scenario, options: argparse.Namespace, report: dict[str, Any]) -> None:
    report["answer"] = scenario.record
    task_id = await scenario.hand_off("ask", json.loads(options.ask_args))
    scenario.record["question"] = await scenario.follow(
        task_id,
        lambda result: (
            "inputRequests" in (result.get("structuredContent") or {}) or not _still_running(result, task_id)
        ),
    )
    answer = {"task_id": task_id, "answer": json.loads(options.answer)}
    scenario.record["answered"] = await scenario.call("task_answer", answer)
    scenario.record["final"] = await scenario.follow(task_id)


def _protocol_version(client: Any) -> str | None:
    """FastMCP 4 names it ``protocol_version`` (modern connections have no initialize result)."""
    version = getattr(client, "protocol_version", None)
    if version is None and client.initialize_result is not None:
        version = client.initialize_result.protocolVersion
    return None if version is None else str(version)


def _client(options: argparse.Namespace, command: list[str]) -> Any:
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    if options.url is not None:
        return Client(options.url)
    return Client(StdioTransport(command=command[0], args=command[1:], env=dict(os.environ)))


async def _session(options: argparse.Namespace, command: list[str], report: dict[str, Any]) -> None:
    client = _client(options, command)
    _note(report, "imported")
    async with client:
        _note(report, "connected")
        report["protocol_version"] = _protocol_version(client)
        await _run(client, options, report)
        _note(report, "done")
    _note(report, "closed")


def _note(report: dict[str, Any], event: str) -> None:
    """When each phase ended, in seconds since the process started (explains a slow run)."""
    report["timeline"][event] = round(time.monotonic() - STARTED, 3)


async def main(argv: list[str]) -> int:
    report: dict[str, Any] = {
        "peer": "fastmcp_plain_client",
        "packages": {name: importlib.metadata.version(name) for name in ("fastmcp", "mcp")},
        "protocol_version": None,
        "tools": [],
        "result": None,
        "cancel": None,
        "answer": None,
        "timeline": {},
        "crashed": None,
    }
    try:
        options, command = _parse(argv)
        await asyncio.wait_for(_session(options, command, report), options.timeout_ms / 1000)
    except BaseException as error:  # the report says what broke; the test fails on it
        report["crashed"] = {"name": type(error).__name__, "message": str(error)}
    _note(report, "reported")
    print(json.dumps(report), flush=True)
    return 0 if report["crashed"] is None else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
