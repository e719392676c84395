"""The inline grace learnt per tool (``_engine/grace.py``): long tools skip it, a quick call restores it.

Core logic only, no SDK: runs on every major. The server side (a call of a learnt-long tool is a
task at once, over a real 2.x session) is in ``tests/server/v2/test_grace_memory.py``.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mcp_tasks_compat._engine.grace import LONG_STREAK, QUICK_STREAK, GraceMemory


def test_a_tool_skips_the_grace_after_its_calls_outlived_it_in_a_row() -> None:
    memory = GraceMemory(0.05)
    for _ in range(LONG_STREAK - 1):
        memory.ticket("build").outlived()
    assert memory.ticket("build").seconds == 0.05  # one short of the streak: still waits
    memory.ticket("build").outlived()
    ticket = memory.ticket("build")
    assert (ticket.seconds, ticket.skipped) == (0, True)
    assert memory.ticket("other").seconds == 0.05  # per tool


def test_a_quick_end_gives_the_tool_its_grace_back() -> None:
    memory = GraceMemory(60.0)  # every end measured here is well within it
    for _ in range(LONG_STREAK):
        memory.ticket("build").outlived()
    skipped = memory.ticket("build")
    assert skipped.skipped
    skipped.ended()  # a call that skipped the grace and ended inside it after all
    assert not memory.is_long("build")
    assert memory.ticket("build").seconds == 60.0


def test_an_end_after_the_grace_keeps_the_tool_long() -> None:
    memory = GraceMemory(0.0001)
    for _ in range(LONG_STREAK):
        memory.ticket("build").outlived()
    ticket = memory.ticket("build")
    # ended() compares the time since the ticket with the grace: make it surely later.
    ticket._started -= 1.0  # pyright: ignore[reportPrivateUsage]
    ticket.ended()
    assert memory.is_long("build")


def test_asking_for_a_task_skips_the_grace_once_the_tool_is_known_and_teaches_nothing() -> None:
    memory = GraceMemory(0.05)
    assert memory.ticket("build", at_once=True).seconds == 0.05  # never seen: it might ask first
    memory.ticket("build").outlived()
    assert memory.ticket("build", at_once=True).seconds == 0
    assert not memory.is_long("build")
    assert memory.ticket("build").seconds == 0.05


def test_a_tool_seen_asking_first_always_waits_the_grace() -> None:
    memory = GraceMemory(60.0)
    memory.ticket("greet").ended(asked_first=True)
    for _ in range(LONG_STREAK):
        memory.ticket("greet").outlived()
    assert memory.ticket("greet", at_once=True).seconds == 60.0  # its question stays a round
    assert memory.ticket("greet").seconds == 60.0
    assert not memory.is_long("greet")


def test_grace_off_is_never_waited_and_never_learnt() -> None:
    memory = GraceMemory(0)
    ticket = memory.ticket("build")
    ticket.outlived()
    ticket.ended()
    assert (ticket.seconds, ticket.skipped, memory.is_long("build")) == (0, False, False)


@given(st.lists(st.text(max_size=3), max_size=400))
def test_the_memory_is_bounded_whatever_names_arrive(names: list[str]) -> None:
    memory = GraceMemory(0.05, max_tools=16)
    for name in names:
        memory.ticket(name).outlived()
    assert len(memory._tools) <= 16  # pyright: ignore[reportPrivateUsage]
    if names:
        assert memory._tools[names[-1]].streak >= 1  # pyright: ignore[reportPrivateUsage]


def test_a_tool_whose_recent_calls_ended_within_the_grace_is_likely_quick_until_one_outlives_it() -> None:
    memory = GraceMemory(60.0)
    for _ in range(QUICK_STREAK):
        ticket = memory.ticket("lookup")
        assert not ticket.likely_quick
        ticket.ended()  # at once: well within the grace
    assert memory.ticket("lookup").likely_quick
    assert not memory.ticket("other").likely_quick  # per tool
    memory.ticket("lookup").outlived()  # one call became a task: no longer taken for quick
    assert not memory.ticket("lookup").likely_quick
    for _ in range(QUICK_STREAK):
        memory.ticket("asks").ended(asked_first=True)  # a question first is not a quick answer
    assert not memory.ticket("asks").likely_quick
