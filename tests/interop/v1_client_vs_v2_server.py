"""A real mcp 1.x client (experimental tasks API) against our mcp 2.x server, over stdio.

Run with an mcp 1.x interpreter and name an mcp 2.x interpreter for the server:

    /work/venvs/mcp1.30.0/bin/python tests/interop/v1_client_vs_v2_server.py /work/venvs/mcp2.3.0/bin/python

The server is the testing kit's serve command (``python -m mcp_tasks_compat.testing serve``) for
``tests.server.harness:HOLD_TOOLSET`` (ServerTasks on an MCPServer). Prints one JSON report; exits
0 only if every check held. Not collected by pytest (the interop suite runs it).
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import McpError

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # run as a script: make ``tests.server.harness`` importable

from tests.server.harness import hold_server_command  # noqa: E402


def server_environment() -> dict[str, str]:
    """This environment, with the checkout on ``PYTHONPATH`` so the server finds the tool set."""
    paths = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


async def run(server_python: str) -> dict[str, Any]:
    checks: dict[str, bool] = {}
    report: dict[str, Any] = {"checks": checks}
    statuses: list[tuple[str, str]] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ServerNotification) and isinstance(
            message.root, types.TaskStatusNotification
        ):
            statuses.append((message.root.params.taskId, message.root.params.status))

    command = hold_server_command(server_python)
    params = StdioServerParameters(command=command[0], args=command[1:], env=server_environment())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # 1.28+: the experimental API warns on access
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write, message_handler=on_message) as session,
        ):
            init = await session.initialize()
            report["protocol_version"] = init.protocolVersion
            checks["initialize advertises tasks.requests.tools.call"] = bool(
                init.capabilities.tasks
                and init.capabilities.tasks.requests
                and init.capabilities.tasks.requests.tools
            )
            tools = await session.list_tools()
            support = {t.name: (t.execution.taskSupport if t.execution else None) for t in tools.tools}
            report["task_support"] = support
            checks["tools/list declares taskSupport"] = support == {
                "hold": "optional",
                "release": None,
                "must": "required",
            }
            experimental = session.experimental
            created = await experimental.call_tool_as_task("hold", {"text": "from 1.x"}, ttl=60_000)
            task_id = created.task.taskId
            checks["CreateTaskResult is working"] = created.task.status == "working"
            got = await experimental.get_task(task_id)
            checks["tasks/get reads the task"] = got.taskId == task_id and got.status == "working"
            await session.call_tool("release", {})
            result = await experimental.get_task_result(task_id, types.CallToolResult)
            report["result"] = result.model_dump(by_alias=True, exclude_none=True)
            checks["tasks/result returns the tool result"] = (
                result.content == [types.TextContent(type="text", text="from 1.x")] and not result.isError
            )
            polled = [state.status async for state in experimental.poll_task(task_id)]
            checks["poll_task ends completed"] = polled[-1] == "completed"
            listed = await experimental.list_tasks()
            checks["tasks/list lists it"] = task_id in [t.taskId for t in listed.tasks]
            held = await experimental.call_tool_as_task("hold", {"text": "never", "gate": "never"})
            cancelled = await experimental.cancel_task(held.task.taskId)
            checks["tasks/cancel answers cancelled"] = cancelled.status == "cancelled"
            try:
                await experimental.cancel_task(held.task.taskId)
                checks["second cancel is -32602"] = False
            except McpError as exc:
                checks["second cancel is -32602"] = exc.error.code == -32602
            try:
                await session.call_tool("must", {"text": "plain"})
                checks["required tool refuses a plain call (-32601)"] = False
            except McpError as exc:
                checks["required tool refuses a plain call (-32601)"] = exc.error.code == -32601
            required = await experimental.call_tool_as_task("must", {"text": "as task"})
            payload = await experimental.get_task_result(required.task.taskId, types.CallToolResult)
            checks["required tool runs as a task"] = payload.content == [
                types.TextContent(type="text", text="as task")
            ]
            try:
                await experimental.get_task("no-such-task")
                checks["unknown id is -32602"] = False
            except McpError as exc:
                checks["unknown id is -32602"] = exc.error.code == -32602
    report["status_notifications"] = [status for tid, status in statuses if tid == task_id]
    checks["status notifications reached the client"] = "completed" in report["status_notifications"]
    return report


def main() -> int:
    import importlib.metadata

    server_python = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("MCP2_PY", "python3")
    report = anyio.run(run, server_python)
    report["client_mcp"] = importlib.metadata.version("mcp")
    print(json.dumps(report, indent=2, sort_keys=True))
    return 0 if all(report["checks"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
