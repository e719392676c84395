"""A plain call's progress: ``notifications/progress``, one per frame, in order."""

from __future__ import annotations

from typing import Any

import pytest
from longtools import render_remote

pytestmark = pytest.mark.anyio


@pytest.fixture
def mcp_tasks_dialect() -> str:
    """2025-11-25, where ``mode="plain"`` is a plain call on every mcp this suite runs on."""
    return "2025-11-25"


async def test_plain_render_reports_every_frame(mcp_tasks_session: Any) -> None:
    messages: list[str] = []
    assert (
        await render_remote(mcp_tasks_session, 3, on_progress=messages.append, mode="plain")
        == "rendered 3 frames"
    )
    assert messages == ["frame 1/3", "frame 2/3", "frame 3/3"]
