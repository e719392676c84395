"""Hostile JSON-RPC against our servers on the installed major: every dialect, over stdio and HTTP.

A small slice runs in the default tests (``FUZZ_EXAMPLES``, default 8 per transport and dialect);
``nox -s fuzz`` runs many more on both majors and prints the counts. Each case must get the right
kind of answer (see :func:`.hostile.check_answer`) and leave the session and server alive.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from mcp_tasks_compat.testing import dialects

from .hostile import ANSWER_BOUND_S, Peer, Stats, check_answer, frames, http_peer, stdio_peer

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "8"))
BUDGET_S = float(os.environ.get("FUZZ_SECONDS", "60"))
"""Each transport x dialect stops drawing new cases after this long."""

CASES = [(transport, dialect) for transport in ("stdio", "http") for dialect in dialects()]


@pytest.fixture(scope="module", params=CASES, ids=[f"{t}-{d}" for t, d in CASES])
def peer(request: pytest.FixtureRequest) -> Iterator[Peer]:
    transport, dialect = request.param
    opened = stdio_peer(dialect) if transport == "stdio" else http_peer(dialect)
    with opened as live:
        yield live


def test_hostile_requests_get_the_right_answers(peer: Peer) -> None:
    stats = Stats()
    started = time.monotonic()

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[
            HealthCheck.function_scoped_fixture,
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
        ],
    )
    @given(frame=frames(peer.dialect))
    def case(frame: dict[str, Any]) -> None:
        if time.monotonic() - started > BUDGET_S:
            return
        stats.tried += 1
        # a frame that is no JSON-RPC request goes unanswered on stdio: do not wait long for it
        bound = ANSWER_BOUND_S if isinstance(frame.get("params", {}), dict) else 1.0
        problem = check_answer(frame, peer.request(frame, bound=bound))
        if problem is None and not peer.alive():
            problem = f"{frame.get('method')}: the session or server died"
        if problem is not None:
            stats.unexpected.append(problem)
        assert problem is None, problem[:300]

    try:
        case()
    finally:
        kind = type(peer).__name__
        print(f"\nfuzz {peer.dialect} {kind}: tried {stats.tried}, unexpected {len(stats.unexpected)}")
