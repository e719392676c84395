"""``MCP_TASKS_COMPAT_OTEL=off``: with an SDK set, the library's own spans and metrics stay out
while mcp 2.x's own spans stay (what the bench's "the SDK's own" row measures), and switched on
again the library reports again."""

from __future__ import annotations

import anyio
import pytest
from tests.conftest import MCP_MAJOR

from mcp_tasks_compat._observe import otel
from mcp_tasks_compat._observe.otel import INSTRUMENTATION_NAME, SWITCH
from mcp_tasks_compat._testkit.sessions import connect_in_memory
from mcp_tasks_compat.client import call_tool
from mcp_tasks_compat.testing import build_task_server, dialects

from .conftest import Telemetry
from .tools import TOOLS

pytestmark = pytest.mark.anyio
BOUND = 30.0


async def _one_call(dialect: str) -> None:
    server = build_task_server(TOOLS)
    async with connect_in_memory(server, dialect=dialect) as session:
        with anyio.fail_after(BOUND):
            assert await call_tool(session, "work", {"text": "hi"}) is not None


@pytest.mark.parametrize("dialect", dialects())
async def test_switched_off_the_library_reports_nothing_and_the_sdks_spans_stay(
    telemetry: Telemetry, dialect: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    created = telemetry.value("mcp_tasks.created", **{"gen_ai.tool.name": "work"})
    monkeypatch.setenv(SWITCH, "off")
    otel.forget()  # the switch is read on first use
    try:
        await _one_call(dialect)
    finally:
        monkeypatch.delenv(SWITCH)
        otel.forget()
    ours = [span for span in telemetry.finished() if span.instrumentation_scope.name == INSTRUMENTATION_NAME]
    assert ours == []
    assert telemetry.value("mcp_tasks.created", **{"gen_ai.tool.name": "work"}) == created
    sdk_spans = {span.name for span in telemetry.finished()}
    # mcp 2.x opens a span per request sent and served itself; mcp 1.x has none.
    assert ("tools/call work" in sdk_spans) == (MCP_MAJOR == 2)

    await _one_call(dialect)  # switched on again
    assert telemetry.named("execute_tool work")
    assert telemetry.value("mcp_tasks.created", **{"gen_ai.tool.name": "work"}) == created + 1
