"""Redis stopped under a running server, then started again on the same port (docs/deploy.md).

A request that needs the store is answered with a JSON-RPC error at once (no hang), the session
lives on, and once Redis is back the same session works again.
"""

from __future__ import annotations

import anyio
import anyio.to_thread
import pytest
from tests.redis_server import redis_server

from mcp_tasks_compat import PeerProtocolError
from mcp_tasks_compat._testkit.sessions import connect_http
from mcp_tasks_compat.client import call_tool, start_tool
from mcp_tasks_compat.core._model import TaskStatus

from ._procs import NEWEST_DIALECT, Watch, following, is_, servers

pytestmark = pytest.mark.anyio

BOUND_S = 60.0


async def test_with_redis_down_requests_fail_cleanly_and_work_again_when_it_is_back() -> None:
    with redis_server() as redis, servers() as started:
        _server, url = await started.start_one("--store", redis.url)
        with anyio.fail_after(BOUND_S):
            async with connect_http(url, dialect=NEWEST_DIALECT) as session:
                watch = Watch()
                run = await start_tool(
                    session, "slow_echo", {"text": "t", "seconds": 0.1, "steps": 1}, on_status=watch
                )
                async with following(run):
                    await watch.until(is_(TaskStatus.COMPLETED), within=BOUND_S)

                await anyio.to_thread.run_sync(redis.stop)
                refused: PeerProtocolError | None = None
                while refused is None:  # a task that ended here is read without Redis for a moment
                    try:
                        await run.status()
                    except PeerProtocolError as error:
                        refused = error
                assert refused.jsonrpc_code is not None
                assert "does not answer" in refused.message, refused.message  # names the store and the fix
                # A refusal, not a hang: the store's client gave up on the refused connection at
                # once rather than waiting out its timeout (which would say so).
                assert "timeout" not in refused.message.lower(), refused.message

                await anyio.to_thread.run_sync(redis.start)  # same port, empty (no persistence)
                result = await call_tool(
                    session, "slow_echo", {"text": "back", "seconds": 0.1, "steps": 1}, mode="task"
                )
    assert [block.text for block in result.content] == ["back"]
