"""The client process the journal's crash tests kill: one tool call on a session with a journal.

``python -m tests.deploy.journal_client JOURNAL DIALECT ENDPOINT_JSON TOOL ARGS_JSON [TTL_S]``:
opens ``connect_http(url, journal=...)`` (``ENDPOINT_JSON`` ``{"url": ...}``) or
``connect_stdio(command, args, journal=...)`` (``{"command": [...]}``, this process's environment
passed on), ``DIALECT`` a dialect or ``newest``, calls ``TOOL`` and prints the result's text. The
tests SIGKILL it once the journal holds the task.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import anyio

from mcp_tasks_compat.client import TaskJournal, call_tool, connect_http, connect_stdio, read_result


async def main(argv: list[str]) -> None:
    journal = TaskJournal(argv[0])
    dialect: Any = None if argv[1] == "newest" else argv[1]
    endpoint = json.loads(argv[2])
    ttl = float(argv[5]) if len(argv) > 5 else None
    if "url" in endpoint:
        opening = connect_http(endpoint["url"], dialect=dialect, journal=journal)
    else:
        command, *args = endpoint["command"]
        opening = connect_stdio(command, args, dialect=dialect, journal=journal, env=dict(os.environ))
    async with opening as session:
        result = await call_tool(session, argv[3], json.loads(argv[4]), ttl=ttl)
    print(read_result(result).text, flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1:])
