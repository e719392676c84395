"""Two replicas on one Redis database, shared by the tests of this folder that do not kill them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from ._procs import fresh_redis_db, servers


@dataclass(frozen=True)
class Replicas:
    store: str
    url_a: str
    url_b: str


@pytest.fixture(scope="package")
def replicas(redis_url: str) -> Iterator[Replicas]:
    store = fresh_redis_db(redis_url)
    with servers() as started:
        (_a, url_a), (_b, url_b) = started.start_now("--store", store, count=2)
        yield Replicas(store, url_a, url_b)
