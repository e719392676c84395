"""The tools the observability tests serve: one that reports and ends, one that fails, one that
waits until cancelled (each outlives the 2026-07-28 inline grace, so each call is a task)."""

from __future__ import annotations

import anyio

from mcp_tasks_compat._adapters import get_adapter
from mcp_tasks_compat._engine import DEFAULT_INLINE_GRACE_S
from mcp_tasks_compat.server import report_status
from mcp_tasks_compat.testing import ToolSet

GATE: dict[str, anyio.Event] = {}


async def work(text: str) -> str:
    await report_status("working on it")
    await anyio.sleep(2 * DEFAULT_INLINE_GRACE_S)
    return text.upper()


async def boom(text: str) -> str:
    """Fails its task (a JSON-RPC error on 2.x; an ``isError`` result, so a failed 2025 task, on 1.x)."""
    await anyio.sleep(2 * DEFAULT_INLINE_GRACE_S)
    raise get_adapter().app.jsonrpc_exception(-32050, f"broken: {text}")


async def hang(text: str) -> str:
    await anyio.sleep_forever()
    return text


TOOLS = ToolSet(
    tools={"work": work, "boom": boom, "hang": hang},
    support={"work": "required", "boom": "required", "hang": "required"},
    name="observe-tests",
)
