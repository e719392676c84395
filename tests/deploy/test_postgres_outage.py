"""PostgreSQL goes away while tasks end, then comes back: nothing acknowledged is lost, the server
heals by itself, and each replica logs the outage in two lines (docs/deploy.md; as
``test_store_outage.py`` and ``test_outage_log.py`` show for Redis).

Real processes: ``example-server`` replicas over HTTP on a throwaway PostgreSQL cluster of this
test, stopped (``pg_ctl stop -m fast``: every connection cut) and started again on the same port.
"""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from tests.postgres_server import postgres_server

from ._procs import servers
from .test_outage_log import _outage_lines, _through_the_outage
from .test_store_outage import OUTAGE_S, _through_an_outage

pytestmark = pytest.mark.anyio

BOUND_S = 90.0


async def test_postgres_away_while_tasks_end_loses_nothing_and_heals() -> None:
    with postgres_server() as cluster, servers() as started:
        server, url = await started.start_one("--store", cluster.url())
        with anyio.fail_after(BOUND_S):
            await _through_an_outage(url, cluster.stop, cluster.start, outage_s=OUTAGE_S, reads_refused=True)
        assert server.running(), "the server died of its store"


async def test_a_postgres_outage_is_two_log_lines_per_replica(tmp_path: Path) -> None:
    del tmp_path
    with postgres_server() as cluster, servers() as started:
        store = cluster.url()
        (a, url_a), (b, url_b) = await started.start("--store", store, count=2)
        with anyio.fail_after(BOUND_S):
            await _through_the_outage(url_a, url_b, cluster.stop, cluster.start)
        for server in (a, b):  # SIGTERM, then its stderr read to the end
            await anyio.to_thread.run_sync(server.stop)
    for name, server in (("the replica that ran the tasks", a), ("the other replica", b)):
        away, back = _outage_lines(server, store)
        log = "\n".join(server.stderr_lines)
        assert len(away) == 1, f"{name}:\n{log}"
        assert "ConnectionError" in away[0], away[0]
        assert away[0].endswith("until it answers, what fails is counted, not logged"), away[0]
        assert len(back) == 1, f"{name}:\n{log}"
        found = re.fullmatch(r".* back after (\d+\.\d) s; (\d+) calls? failed meanwhile", back[0])
        assert found is not None, back[0]
        assert float(found[1]) >= 1.0, back[0]  # the outage, not a blip
        others = [line for line in server.stderr_lines if line not in away + back]
        assert len(others) <= 3, f"{name}: besides the outage's two lines:\n{log}"
