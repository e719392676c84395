"""A real ``redis-server`` process on a free loopback port, nothing on disk unless asked: for the
tests and the benchmarks (``tests/redis_server.py`` adds the pytest skip,
``benchmarks/sections/stores.py`` the version).

Debian's package (``apt-get install redis-server``); nox and ``.ci/run`` install it when missing.
"""

from __future__ import annotations

import socket
import subprocess
import time
from dataclasses import dataclass, field

__all__ = ["START_BOUND_S", "RedisServer", "answers_ping", "free_port"]

START_BOUND_S = 60.0  # a bound on a starting server answering PING (it usually does in ms), not a wait


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
    data_dir: str | None = None
    """Where an append-only file keeps the data across :meth:`stop` and :meth:`start` (every write
    synced), as a production Redis with persistence would; ``None``: nothing on disk."""
    replica_of: int | None = None
    """The port of a loopback redis-server this one is a replica of (``--replicaof``; read-only,
    as replicas are by default); ``None``: a primary."""

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        args = [self.executable, "--port", str(self.port), "--bind", "127.0.0.1"]
        if self.data_dir is None:
            args += ["--save", "", "--appendonly", "no", "--daemonize", "no"]
            # a replica's full sync over the socket both ways, never through a dump.rdb in the cwd
            args += ["--repl-diskless-sync", "yes", "--repl-diskless-load", "on-empty-db"]
        else:
            args += ["--dir", self.data_dir, "--save", "", "--daemonize", "no"]
            args += ["--appendonly", "yes", "--appendfsync", "always"]
        if self.replica_of is not None:
            args += ["--replicaof", "127.0.0.1", str(self.replica_of)]
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

    def version(self) -> str:
        """``redis-server 7.0.15`` (from ``--version``), for the benchmarks' environment notes."""
        answer = subprocess.run([self.executable, "--version"], capture_output=True, text=True, check=False)
        words = [word for word in answer.stdout.split() if word.startswith("v=")]  # "v=7.0.15"
        return "redis-server " + (words[0][2:] if words else "?")
