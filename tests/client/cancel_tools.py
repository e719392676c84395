"""A tool that waits to be cancelled and writes down how it was, for the per-call-session tests.

A kit tool set (this module imports no ``mcp``), served from a subprocess over stdio or streamable
HTTP as ``tests.client.cancel_tools:TOOLS``. ``wait_to_be_cancelled(label)`` reports one status,
then waits; when its run is cancelled it appends ``"<label> <task status>"`` to the file named by
the ``CANCEL_LOG`` environment variable. The status tells a ``tasks/cancel`` (``cancelled``) from a
run stopped because its session ended (still ``working``).
"""

from __future__ import annotations

import os

import anyio

from mcp_tasks_compat.server import current_call, report_status
from mcp_tasks_compat.testing import ToolSet

LOG_ENV = "CANCEL_LOG"
STARTED = "started"


def write_down(label: str, status: str) -> None:
    with open(os.environ[LOG_ENV], "a", encoding="utf-8") as log:
        log.write(f"{label} {status}\n")


async def wait_to_be_cancelled(label: str) -> str:
    await report_status(STARTED)
    try:
        await anyio.sleep(60)
    except anyio.get_cancelled_exc_class():
        task = current_call().task
        write_down(label, task.status.value if task is not None else "plain")
        raise
    return label


TOOLS = ToolSet(
    tools={"wait_to_be_cancelled": wait_to_be_cancelled}, support={"wait_to_be_cancelled": "optional"}
)
