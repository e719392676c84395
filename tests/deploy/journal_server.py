"""A server whose tasks are kept a short TTL, for the journal's expiry test.

``python -m tests.deploy.journal_server TTL_MS``: serves over HTTP on a free port and prints
``listening on <url>``; every task gets ``TTL_MS`` (2026-07-28: the server's default; 2025-11-25:
the floor, and what the test's client asks), and an ended task is forgotten ``TTL_MS`` after its end.
``held(text, release)`` returns ``text`` once the file ``release`` exists (the test makes it
after it killed the client). Any session may read an unauthenticated 2025-11-25 task
by its id (``unauthenticated_2025_scope="task_id"``), as a restarted client's new session must.
"""

from __future__ import annotations

import sys

import anyio

from mcp_tasks_compat._adapters import get_adapter
from mcp_tasks_compat.server import TaskServer

TTL_MS = int(sys.argv[1]) if len(sys.argv) > 1 else 3000

app = TaskServer(
    "journal-expiry",
    ttl_floor_ms=TTL_MS,
    default_ttl_ms=TTL_MS,
    inline_grace_s=0,
    unauthenticated_2025_scope="task_id",
)


@app.tool(task="optional")
async def held(text: str, release: str) -> str:
    while not await anyio.Path(release).exists():  # noqa: ASYNC110 - another process's file: no event
        await anyio.sleep(0.05)
    return text


def _listening(url: str) -> None:
    print(f"listening on {url}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    serve = get_adapter().app.serve_http
    anyio.run(lambda: serve(app.sdk_server, host="127.0.0.1", port=0, on_listening=_listening))
