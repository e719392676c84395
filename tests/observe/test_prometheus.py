"""``example-server --metrics-port N`` answers a Prometheus scrape with the task series."""

from __future__ import annotations

import socket
import sys

import httpx
import pytest

from mcp_tasks_compat._testkit.sessions import connect_http
from mcp_tasks_compat.client import call_tool
from mcp_tasks_compat.testing import HttpServerProcess

pytestmark = pytest.mark.anyio


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_the_example_server_serves_its_metrics_as_prometheus_text() -> None:
    port = free_port()
    command = [sys.executable, "-m", "mcp_tasks_compat", "example-server", "--transport", "http"]
    with HttpServerProcess([*command, "--port", "0", "--metrics-port", str(port)], start_timeout=60) as url:
        async with connect_http(url) as session:
            await call_tool(session, "slow_echo", {"text": "hi", "seconds": 0.1, "steps": 1}, mode="task")
        async with httpx.AsyncClient() as http:
            scrape = await http.get(f"http://127.0.0.1:{port}/metrics")
    assert scrape.status_code == 200
    assert scrape.headers["content-type"].startswith("text/plain")
    lines = scrape.text.splitlines()
    created = [line for line in lines if line.startswith("mcp_tasks_created_total{")]
    assert created, scrape.text[:2000]
    assert 'gen_ai_tool_name="slow_echo"' in created[0]
    assert any(
        line.startswith("mcp_tasks_ended_total{") and 'mcp_tasks_task_status="completed"' in line
        for line in lines
    )
    assert any(line.startswith("mcp_tasks_store_duration_seconds_bucket{") for line in lines)
