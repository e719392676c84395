"""The raw 2025-11-25 conversation of issue 24 answers alike on the mcp 1.x and 2.x example servers.

``mcp-tasks-compat example-server`` runs as a real process under this interpreter and under the
peer named by ``MCP_TASKS_COMPAT_PEER_PYTHON`` (nox's ``tests`` session builds one with the other
major), and :mod:`.differential_2025` holds the same conversation with each over streamable HTTP:
initialize, tools/list, a task read at 0.1 s and 1.2 s, a result, a cancel of a finished and of a
running task, tasks/list, a bad cursor, an unknown id, ``ttl: -1``, malformed arguments with
``params.task``, a task-required tool called plainly, and a second session reading the first's
task. After masking task ids and timestamps (and holding each poll hint to the age rule instead of
masking it), the two transcripts must be equal step by step, and each must say what 2025-11-25
requires, so two servers that are wrong alike fail too.

Who owns an authenticated task (the fourth drift of issue 24) needs a server with auth, which
``example-server`` has not: the service tests in ``tests/server/`` cover it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from .differential_2025 import (
    FOLLOWS_AGE_RULE,
    ServerSdk,
    Step,
    compare,
    normalise,
    poll_hint_verdict,
    run_conversation,
    server_sdk,
    wrong_answers,
)
from .session_end_2025 import SESSION_END_STEPS, run_session_end, session_end_wrong_answers

PEER_ENV = "MCP_TASKS_COMPAT_PEER_PYTHON"
THIS_PYTHON = sys.executable
PEER_PYTHON = os.environ.get(PEER_ENV) or None
NO_PEER = (
    f"no peer environment: set {PEER_ENV} to the python of a virtual environment with the other "
    "mcp major and this project installed (nox's tests session does)"
)

Transcript = list[tuple[str, Any]]


def held_with_both(conversation: Callable[[str], list[Step]]) -> dict[str, tuple[ServerSdk, Transcript]]:
    """``conversation`` normalised, with this interpreter's server and the peer's, held at once."""
    pythons = {"this": THIS_PYTHON} if PEER_PYTHON is None else {"this": THIS_PYTHON, "peer": PEER_PYTHON}

    def hold(python: str) -> tuple[ServerSdk, Transcript]:
        sdk = server_sdk(python)
        return sdk, normalise(conversation(python), sdk)

    with ThreadPoolExecutor(max_workers=len(pythons)) as pool:
        running = {role: pool.submit(hold, python) for role, python in pythons.items()}
        return {role: future.result() for role, future in running.items()}


@pytest.fixture(scope="module")
def transcripts() -> dict[str, tuple[ServerSdk, Transcript]]:
    """The normalised conversation with this interpreter's server and the peer's, held at once."""
    return held_with_both(run_conversation)


def _wrong(transcripts: dict[str, tuple[ServerSdk, Transcript]], role: str) -> None:
    sdk, transcript = transcripts[role]
    wrong = wrong_answers(transcript)
    assert not wrong, f"example-server on {sdk.label} answers against 2025-11-25:\n" + "\n".join(wrong)


def test_this_major_answers_the_conversation_as_2025_11_25_requires(
    transcripts: dict[str, tuple[ServerSdk, Transcript]],
) -> None:
    _wrong(transcripts, "this")


def test_the_peer_major_answers_the_conversation_as_2025_11_25_requires(
    transcripts: dict[str, tuple[ServerSdk, Transcript]],
) -> None:
    if "peer" not in transcripts:
        pytest.skip(NO_PEER)
    _wrong(transcripts, "peer")


def test_both_majors_answer_the_conversation_alike(
    transcripts: dict[str, tuple[ServerSdk, Transcript]],
) -> None:
    if "peer" not in transcripts:
        pytest.skip(NO_PEER)
    (this_sdk, this), (peer_sdk, peer) = transcripts["this"], transcripts["peer"]
    differences = compare(this, peer, this_sdk.label, peer_sdk.label)
    assert not differences, (
        f"{len(differences)} step(s) of the 2025-11-25 conversation answered differently:\n\n"
        + "\n\n".join(differences)
    )


# --- a session that ends mid-task ---------------------------------------------------------------


@pytest.fixture(scope="module")
def session_end_transcripts() -> dict[str, tuple[ServerSdk, Transcript]]:
    """Sessions ended mid-task (DELETE, a dropped connection) on this major's server and the peer's."""
    return held_with_both(run_session_end)


@pytest.mark.parametrize("role", ["this", "peer"])
def test_a_session_ending_mid_task_stops_none_of_its_runs(
    session_end_transcripts: dict[str, tuple[ServerSdk, Transcript]], role: str
) -> None:
    if role not in session_end_transcripts:
        pytest.skip(NO_PEER)
    sdk, transcript = session_end_transcripts[role]
    assert [name for name, _ in transcript][-4:] == list(SESSION_END_STEPS)
    wrong = session_end_wrong_answers(transcript)
    assert not wrong, f"example-server on {sdk.label} after a session ended mid-task:\n" + "\n".join(wrong)


def test_both_majors_leave_a_task_alike_when_its_session_ends(
    session_end_transcripts: dict[str, tuple[ServerSdk, Transcript]],
) -> None:
    if "peer" not in session_end_transcripts:
        pytest.skip(NO_PEER)
    (this_sdk, this), (peer_sdk, peer) = session_end_transcripts["this"], session_end_transcripts["peer"]
    differences = compare(this, peer, this_sdk.label, peer_sdk.label)
    assert not differences, "\n\n".join(differences)


# --- the normalising itself: what it must not hide -------------------------------------------------

CREATED = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _stamp(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def _task(status: str, hint: int, *, ended_after: timedelta = timedelta(0)) -> dict[str, Any]:
    return {
        "taskId": "secret-id",
        "status": status,
        "createdAt": _stamp(CREATED),
        "lastUpdatedAt": _stamp(CREATED + ended_after),
        "ttl": 60_000,
        "pollInterval": hint,
    }


def _read_at(age: timedelta, answer: dict[str, Any]) -> Step:
    sent = CREATED + age
    return Step("tasks/get", "tasks/get", {}, answer, sent, sent + timedelta(milliseconds=4))


def test_a_quiet_task_keeping_its_creation_hint_at_1_2_s_is_shown_not_masked() -> None:
    verdict = poll_hint_verdict(
        _task("working", 10), CREATED + timedelta(seconds=1.2), CREATED + timedelta(seconds=1.204)
    )
    assert verdict == "10, but the age rule gives 60..60 ms at the task's age of 1200..1204 ms"
    assert (
        poll_hint_verdict(
            _task("working", 60), CREATED + timedelta(seconds=1.2), CREATED + timedelta(seconds=1.204)
        )
        == FOLLOWS_AGE_RULE
    )
    assert (
        poll_hint_verdict(
            _task("working", 10), CREATED + timedelta(seconds=0.1), CREATED + timedelta(seconds=0.104)
        )
        == FOLLOWS_AGE_RULE
    )


def test_an_ended_task_is_held_to_the_hint_of_its_last_change() -> None:
    ended = _task("completed", 100, ended_after=timedelta(seconds=2))
    late = CREATED + timedelta(seconds=30)
    assert poll_hint_verdict(ended, late, late) == FOLLOWS_AGE_RULE
    assert poll_hint_verdict(_task("completed", 10, ended_after=timedelta(seconds=2)), late, late).startswith(
        "10, but"
    )


def test_ids_and_timestamps_are_masked_and_a_differing_message_is_shown_side_by_side() -> None:
    sdk = ServerSdk("python", "2.3.0", "2025-11-25")
    age = timedelta(seconds=1.2)
    one = normalise(
        [
            _read_at(age, {"result": _task("working", 60)}),
            _read_at(age, {"error": {"code": -32602, "message": "Task secret-id: " + "x" * 80}}),
        ],
        sdk,
    )
    other = normalise(
        [
            _read_at(age, {"result": _task("working", 10)}),
            _read_at(age, {"error": {"code": -32602, "message": "Task secret-id: " + "y" * 80}}),
        ],
        sdk,
    )
    assert one[0][1]["result"] == {
        "taskId": "TASK1",
        "status": "working",
        "createdAt": "<timestamp>",
        "lastUpdatedAt": "<timestamp>",
        "ttl": 60_000,
        "pollInterval": FOLLOWS_AGE_RULE,
    }
    differences = compare(one, other, "left", "right")
    assert len(differences) == 2
    assert "pollInterval" in differences[0]
    assert "10, but the age rule gives 60..60 ms" in differences[0]
    assert "secret-id" not in differences[1]
    assert f'"message": "Task TASK1: {"x" * 80}"' in differences[1]  # in full, past the column
    assert f'"message": "Task TASK1: {"y" * 80}"' in differences[1]
