"""A tool's ``report_progress(progress, total, message)`` reaches the caller's progress callback as sent.

Neither dialect has progress for a task (2026-07-28 forbids ``notifications/progress`` on one), so
when both ends are this library the numbers ride with the status they set, in its ``_meta``
(``Task.progress``), and the client hands them on unchanged: the same ``(progress, total,
message)`` a plain call's ``notifications/progress`` would carry. A status without numbers counts
on from the last value, the last callback carries the last message the tool sent, and none is
repeated (a task ending on its last step's message adds no callback). On each dialect the
installed major serves, through ``call_tool(on_progress=...)`` (a call that starts plain and
becomes a task included), ``TaskClientSession`` / ``with_tasks`` (``progress_callback``) and, on
mcp 2.x, ``mcp.Client`` with ``tasks_extension(on_progress=...)``; the numbers also survive both
codecs and the stores' JSON.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcp_tasks_compat._client_api import tasks_extension, with_tasks
from mcp_tasks_compat._testkit.sessions import connect_in_memory
from mcp_tasks_compat.client import call_tool
from mcp_tasks_compat.core import _codec_2025 as codec_2025
from mcp_tasks_compat.core import _codec_2026 as codec_2026
from mcp_tasks_compat.core._model import PROGRESS_META_KEY, Progress, Task, TaskStatus, utc_now
from mcp_tasks_compat.dialects import Dialect
from mcp_tasks_compat.server import current_call, report_progress, report_status
from mcp_tasks_compat.testing import ToolSet, build_task_server, dialects

from .harness import text_of

pytestmark = pytest.mark.anyio

BOUND = 10.0
Heard = list[tuple[float, "float | None", "str | None"]]


async def counts_up(steps: int) -> str:
    """``report_progress(k, steps, "item k of steps")`` for each k."""
    for step in range(1, steps + 1):
        await report_progress(step, steps, f"item {step} of {steps}")
    return "counted"


async def counts_then_finishes(steps: int) -> str:
    """Progress with numbers, then one status without: the last message is that status."""
    for step in range(1, steps + 1):
        await report_progress(step * 10, steps * 10, f"item {step}")
    await report_status("finishing")
    return "finished"


async def counts_across_the_grace(steps: int) -> str:
    """The first half of the steps inside the inline grace (plain progress), the rest in the task."""
    for step in range(1, steps + 1):
        if step == steps // 2 + 1:
            await current_call().wait_for_task()
        await report_progress(step, steps, f"item {step} of {steps}")
    return "counted"


TOOLS = ToolSet(
    tools={
        "counts_up": counts_up,
        "counts_then_finishes": counts_then_finishes,
        "counts_across_the_grace": counts_across_the_grace,
    },
    support={
        "counts_up": "optional",
        "counts_then_finishes": "optional",
        "counts_across_the_grace": "optional",
    },
)


def collector(heard: Heard) -> Any:
    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append((progress, total, message))

    return on_progress


def assert_faithful(heard: Heard, sent: list[tuple[float, float | None, str]], *, ends: bool = True) -> None:
    """What was heard is what the tool sent, in order, never repeated (statuses may be coalesced:
    the server rate-bounds them), ending on its last report when ``ends``."""
    assert all(entry in sent for entry in heard), f"{heard} is not among {sent}"
    assert [sent.index(entry) for entry in heard] == sorted({sent.index(entry) for entry in heard})
    if ends:
        assert heard, "no progress was heard"
        assert heard[-1] == sent[-1]


@pytest.mark.parametrize("dialect", dialects())
async def test_a_tasks_progress_reaches_progress_callback_with_its_own_numbers(dialect: Dialect) -> None:
    server = build_task_server(TOOLS, inline_grace_s=0)
    heard: Heard = []
    async with connect_in_memory(server, dialect=dialect) as session:
        with anyio.fail_after(BOUND):
            result = await with_tasks(session, mode="task").call_tool(
                "counts_up", {"steps": 4}, progress_callback=collector(heard)
            )
    assert text_of(result) == "counted"
    assert_faithful(heard, [(float(k), 4.0, f"item {k} of 4") for k in range(1, 5)])


@pytest.mark.parametrize("dialect", dialects())
async def test_call_tools_on_progress_hears_a_tasks_progress(dialect: Dialect) -> None:
    """The README's ``call_tool(..., on_progress=...)``: a task's statuses reach it too (issue 35)."""
    server = build_task_server(TOOLS, inline_grace_s=0)
    heard: Heard = []
    async with connect_in_memory(server, dialect=dialect) as session:
        with anyio.fail_after(BOUND):
            result = await call_tool(
                session, "counts_up", {"steps": 4}, mode="task", on_progress=collector(heard)
            )
    assert text_of(result) == "counted"
    assert_faithful(heard, [(float(k), 4.0, f"item {k} of 4") for k in range(1, 5)])


async def test_call_tools_on_progress_hears_a_call_that_becomes_a_task_once_each() -> None:
    """2026-07-28: progress inside the inline grace (``notifications/progress``), then the task's
    statuses; the step the task starts with is not heard again."""
    if "2026-07-28" not in dialects():
        pytest.skip("the installed mcp serves no 2026-07-28 inline grace")
    server = build_task_server(TOOLS, inline_grace_s=0.05)
    heard: Heard = []
    async with connect_in_memory(server, dialect="2026-07-28") as session:
        with anyio.fail_after(BOUND):
            result = await call_tool(
                session, "counts_across_the_grace", {"steps": 4}, on_progress=collector(heard)
            )
    assert text_of(result) == "counted"
    sent = [(float(k), 4.0, f"item {k} of 4") for k in range(1, 5)]
    assert heard[:2] == sent[:2]  # the plain part, each notification as sent
    assert_faithful(heard, sent)


@pytest.mark.parametrize("dialect", dialects())
async def test_a_status_without_numbers_counts_on_and_is_the_last_heard(dialect: Dialect) -> None:
    server = build_task_server(TOOLS, inline_grace_s=0)
    heard: Heard = []
    async with connect_in_memory(server, dialect=dialect) as session:
        with anyio.fail_after(BOUND):
            result = await with_tasks(session, mode="task").call_tool(
                "counts_then_finishes", {"steps": 3}, progress_callback=collector(heard)
            )
    assert text_of(result) == "finished"
    assert heard[-1][2] == "finishing"
    numbered = heard[:-1]
    assert_faithful(numbered, [(float(k * 10), 30.0, f"item {k}") for k in range(1, 4)], ends=False)
    assert heard[-1][0] == (numbered[-1][0] if numbered else 0.0) + 1.0  # counted on, never back
    assert heard[-1][1] is None


@pytest.mark.mcp2
async def test_mcp_client_on_progress_hears_the_tools_own_numbers() -> None:
    pytest.importorskip("mcp.server.mcpserver", reason="mcp.Client is mcp 2.x")
    import mcp

    heard: Heard = []
    server = build_task_server(TOOLS, inline_grace_s=0)
    async with mcp.Client(server, extensions=[tasks_extension(on_progress=collector(heard))]) as client:
        with anyio.fail_after(BOUND):
            result = await client.call_tool("counts_up", {"steps": 3})
    assert text_of(result) == "counted"
    assert_faithful(heard, [(float(k), 3.0, f"item {k} of 3") for k in range(1, 4)])


def test_the_numbers_survive_both_codecs_and_ignore_foreign_meta() -> None:
    from mcp_tasks_compat._engine.stores.task_state import _task_from_json, _task_to_json  # pyright: ignore[reportPrivateUsage]

    now = utc_now()
    task = Task("t-1", TaskStatus.WORKING, now, now, status_message="item 2", progress=Progress(2.0, 5.0))
    for codec in (codec_2025, codec_2026):
        wire = codec.encode_task(task)
        assert wire["_meta"] == {PROGRESS_META_KEY: {"progress": 2.0, "total": 5.0}}
        assert codec.decode_task(wire).progress == Progress(2.0, 5.0)
        for foreign in ({"x": 1}, {PROGRESS_META_KEY: {"progress": "2"}}, {PROGRESS_META_KEY: 3}, []):
            assert codec.decode_task({**wire, "_meta": foreign}).progress is None
    assert _task_from_json(_task_to_json(task)) == task
    untotalled = task.evolve(progress=Progress(7.0))
    assert codec_2026.decode_task(codec_2026.encode_task(untotalled)).progress == Progress(7.0)
    assert _task_from_json(_task_to_json(untotalled)) == untotalled
