"""A task server behind bearer auth (the SDK's own ``auth=`` and token verifier), for the client's tests.

``python auth_server.py PORT SQLITE_PATH MARKS_PATH``: serves ``TaskServer`` (FastMCP on mcp 1.x,
MCPServer on 2.x) over streamable HTTP on 127.0.0.1:PORT and prints ``listening on <url>``. Two
tokens are known (:data:`TOKENS`); anything else is answered 401 by the SDK's middleware.
``work`` reports a status and returns; ``hold`` appends its label to MARKS_PATH when it starts and
on its first start waits until the process is killed (it is safe to run again: ``reruns=2``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import anyio.to_thread
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings

from mcp_tasks_compat._adapters import get_adapter
from mcp_tasks_compat.server import TaskServer, report_status

TOKENS = {"alice-secret-token-0451": "alice", "bob-secret-token-0452": "bob"}
PORT, STORE, MARKS = int(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
URL = f"http://127.0.0.1:{PORT}/mcp"


class Tokens:
    """The SDK's ``TokenVerifier``: two users, by their static tokens."""

    async def verify_token(self, token: str) -> AccessToken | None:
        user = TOKENS.get(token)
        if user is None:
            return None
        fields = {"token": token, "client_id": f"{user}-app", "scopes": ["mcp"], "subject": user}
        return AccessToken.model_validate(fields)  # subject: mcp 2.x's principal (1.x ignores it)


auth = AuthSettings.model_validate(
    {"issuer_url": "https://auth.example", "resource_server_url": URL, "required_scopes": ["mcp"]}
)
app = TaskServer("authed", store=f"sqlite:///{STORE}", lease_s=1.0, auth=auth, token_verifier=Tokens())


@app.tool(task="optional")
async def work(label: str) -> str:
    await report_status(f"{label} working")
    await anyio.sleep(0.3)
    return f"{label} done"


def _mark(label: str) -> int:
    with MARKS.open("a") as marks:
        marks.write(label + "\n")
    return MARKS.read_text().splitlines().count(label)


@app.tool(task="optional", reruns=2)
async def hold(label: str) -> str:
    starts = await anyio.to_thread.run_sync(_mark, label)
    await report_status(f"{label} started ({starts})")
    if starts == 1:
        await anyio.sleep_forever()  # the first run is lost: its server is killed
    return f"{label} finished at start {starts}"


def _listening(url: str) -> None:
    print(f"listening on {url}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    serve = get_adapter().app.serve_http
    anyio.run(lambda: serve(app.sdk_server, host="127.0.0.1", port=PORT, on_listening=_listening))
