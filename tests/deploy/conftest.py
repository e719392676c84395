"""Two replicas on one Redis database, shared by the tests of this folder that do not kill them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from ._procs import fresh_redis_db, servers

REPLICA_LEASE_S = 600.0
"""The replicas' lease: a replica re-reads the tasks it runs at each renewal (a third of it), so with
this one a cancel given to the other replica can only reach the work within a test's bound through
Redis pub/sub, which is what those tests check, however busy the machine."""


@dataclass(frozen=True)
class Replicas:
    store: str
    url_a: str
    url_b: str


@pytest.fixture(scope="package")
def replicas(redis_url: str) -> Iterator[Replicas]:
    store = fresh_redis_db(redis_url)
    with servers() as started:
        (_a, url_a), (_b, url_b) = started.start_now(
            "--store", store, "--lease-s", str(REPLICA_LEASE_S), count=2
        )
        yield Replicas(store, url_a, url_b)
