"""A real ``redis-server`` for the tests: started from PATH on a free loopback port, nothing on disk.

Debian's package (``apt-get install redis-server``); nox and ``.ci/run`` install it when missing,
and the tests that need it skip with that reason where it cannot be installed. The process itself
is ``tools/redis_server.py``'s, which the benchmarks use too.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from tools.redis_server import RedisServer, free_port

__all__ = ["MISSING_REASON", "RedisServer", "free_port", "redis_server"]

MISSING_REASON = "redis-server not installed (apt-get install redis-server)"


@contextmanager
def redis_server(data_dir: str | None = None, *, replica_of: int | None = None) -> Iterator[RedisServer]:
    """A started server, stopped on exit; skips the test when redis-server is not on PATH.

    ``data_dir``: keep the data there across a stop and a start (an append-only file).
    ``replica_of``: the port of a loopback server this one replicates (read-only).
    """
    executable = shutil.which("redis-server")
    if executable is None:
        pytest.skip(MISSING_REASON)
    server = RedisServer(executable, data_dir=data_dir, replica_of=replica_of)
    server.start()
    try:
        yield server
    finally:
        server.stop()
