"""``call --answer`` on a tool that asks first, then runs long (``elicit(..., before_task=True)``).

``call`` goes through the public ``call_tool``, so on 2026-07-28 the question is a multi-round-trip
round answered from ``--answer`` before any task exists; on 2025-11-25 it is relayed through the
task. The tools are ``tests.client.round_tools``, served by the testing kit over stdio.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from mcp_tasks_compat.dialects import DIALECT_2026_07_28

from .harness import TASK_DIALECT, Batch

ROUND_SERVER = [sys.executable, "-m", "mcp_tasks_compat.testing", "serve", "tests.client.round_tools:TOOLS"]
"""A kit server (run from the repository root, as the suite is) with the ask-first tools."""
ANSWER = '{"name": "Ada", "city": "Paris"}'


@pytest.fixture(scope="module")
def runs() -> Iterator[Batch]:
    batch = Batch()
    try:
        batch.start("required", "call", "greet_first", "--answer", ANSWER, "--json", "--", *ROUND_SERVER)
        batch.start("twice", "call", "ask_twice", "--answer", ANSWER, "--json", "--", *ROUND_SERVER)
        batch.start("no_answer", "call", "greet_first_optional", "--json", "--", *ROUND_SERVER)
        yield batch
    finally:
        batch.close()


def test_the_answer_option_answers_the_round_and_the_task_runs(runs: Batch) -> None:
    run = runs.result("required")
    assert run.returncode == 0, run.describe()
    report = run.json()
    assert report["result"]["content"] == [{"type": "text", "text": "Hello, accept: Ada!"}]
    assert report["task_id"]
    statuses = [status["status"] for status in report["statuses"]]
    assert statuses[-1] == "completed"
    if TASK_DIALECT == DIALECT_2026_07_28:
        assert "input_required" not in statuses  # asked before the task, as a round


def test_two_questions_are_both_answered(runs: Batch) -> None:
    run = runs.result("twice")
    assert run.returncode == 0, run.describe()
    assert run.json()["result"]["content"] == [{"type": "text", "text": "accept: Ada from accept: Paris"}]


def test_without_an_answer_the_call_exits_2_saying_how_to_answer(runs: Batch) -> None:
    run = runs.result("no_answer")
    assert run.returncode == 2, run.describe()
    report = run.json()
    assert report["result"] is None
    assert report["error"]["kind"] == "no-answer"
    assert report["error"]["message"].startswith("the tool asked 'Your name?' and there is no answer")
    assert "pass --answer JSON" in report["error"]["message"]
    if TASK_DIALECT == DIALECT_2026_07_28:
        assert report["task_id"] is None  # the round was refused before any task existed
