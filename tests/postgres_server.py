"""A throwaway PostgreSQL cluster for the tests: ``initdb`` + ``pg_ctl`` in a temporary folder, on a
free loopback port (``tools/postgres_server.py``'s, which the benchmarks use too).

Debian's ``postgresql`` package (``apt-get install postgresql``); nox and ``.ci/run`` install it
when missing, and the tests that need it skip with that reason where it cannot be installed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from tools.postgres_server import (
    DATABASE,
    NO_CREATE_USER,
    PASSWORD,
    PASSWORD_USER,
    RECIPE_PASSWORD,
    RECIPE_USER,
    PostgresServer,
    postgres_bindir,
)

__all__ = [
    "DATABASE",
    "MISSING_REASON",
    "NO_CREATE_USER",
    "PASSWORD",
    "PASSWORD_USER",
    "RECIPE_PASSWORD",
    "RECIPE_USER",
    "PostgresServer",
    "postgres_server",
]

MISSING_REASON = "PostgreSQL not installed (apt-get install postgresql)"


@contextmanager
def postgres_server(*, standby_of: int | None = None) -> Iterator[PostgresServer]:
    """A started cluster, removed on exit; skips the test when PostgreSQL is not installed.

    ``standby_of``: the port of a loopback cluster this one streams from (a read-only standby).
    """
    bindir = postgres_bindir()
    if bindir is None:
        pytest.skip(MISSING_REASON)
    server = PostgresServer(bindir, standby_of=standby_of)
    try:
        server.start()
        yield server
    finally:
        server.remove()
