"""A real ``redis-server`` for the tests: started from PATH on a free loopback port, nothing on disk.

Debian's package (``apt-get install redis-server``); nox and ``.ci/run`` install it when missing,
and the tests that need it skip with that reason where it cannot be installed.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import pytest

__all__ = ["MISSING_REASON", "RedisServer", "free_port", "redis_server"]

MISSING_REASON = "redis-server not installed (apt-get install redis-server)"
START_BOUND_S = 10.0  # how long a starting server may take to answer PING


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def answers_ping(port: int) -> bool:
    """One PING over a plain socket (the inline protocol): ``+PONG`` back means the server is up."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as conn:
            conn.sendall(b"PING\r\n")
            return conn.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@dataclass
class RedisServer:
    """One redis-server process; :meth:`stop` and :meth:`start` again on the same port (a restart)."""

    executable: str
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        args = [self.executable, "--port", str(self.port), "--bind", "127.0.0.1"]
        args += ["--save", "", "--appendonly", "no", "--daemonize", "no"]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + START_BOUND_S
        while not answers_ping(self.port):
            if self.process.poll() is not None:
                error = self.process.stderr.read().decode(errors="replace") if self.process.stderr else ""
                raise RuntimeError(f"redis-server exited with {self.process.returncode}: {error}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(
                    f"redis-server on port {self.port} did not answer PING in {START_BOUND_S}s"
                )
            time.sleep(0.02)  # polling a starting process's socket, not synchronising the tests

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
        if process.stderr is not None:
            process.stderr.close()


@contextmanager
def redis_server() -> Iterator[RedisServer]:
    """A started server, stopped on exit; skips the test when redis-server is not on PATH."""
    executable = shutil.which("redis-server")
    if executable is None:
        pytest.skip(MISSING_REASON)
    server = RedisServer(executable)
    server.start()
    try:
        yield server
    finally:
        server.stop()
