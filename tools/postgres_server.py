"""A throwaway PostgreSQL cluster on a free loopback port: for the tests and the benchmarks
(``tests/postgres_server.py`` adds the pytest skip).

Debian's ``postgresql`` package (``apt-get install postgresql``; nox and ``.ci/run`` install it
when missing); ``initdb`` and ``pg_ctl`` are found with ``pg_config --bindir`` or in
``/usr/lib/postgresql/<version>/bin``. ``initdb`` refuses to run as root, so as root the cluster
runs as the ``postgres`` system user (``runuser -u postgres --``) in a temporary folder it owns.
Connections from 127.0.0.1 are trusted, except the users :data:`PASSWORD_USER`, who needs
:data:`PASSWORD` (the bad-credentials test), and :data:`RECIPE_USER` (docs/deploy.md's recipe);
:data:`NO_CREATE_USER` may log in to the database ``tasks`` but create nothing there (the
no-rights test).
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "DATABASE",
    "NO_CREATE_USER",
    "PASSWORD",
    "PASSWORD_USER",
    "RECIPE_PASSWORD",
    "RECIPE_USER",
    "START_BOUND_S",
    "PostgresServer",
    "free_port",
    "postgres_bindir",
]

START_BOUND_S = 60.0  # a bound on a starting cluster accepting connections, not a wait
DATABASE = "tasks"
PASSWORD_USER = "with_password"
PASSWORD = "right-password"
NO_CREATE_USER = "no_create"
RECIPE_USER, RECIPE_PASSWORD = "tasks", "secret"
"""docs/deploy.md's PostgreSQL recipe's user (a password, no superuser; CREATE granted per database)."""

_HBA = f"""\
local all all trust
host all {PASSWORD_USER},{RECIPE_USER} 127.0.0.1/32 scram-sha-256
host all all 127.0.0.1/32 trust
host replication all 127.0.0.1/32 trust
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def postgres_bindir() -> str | None:
    """The folder of ``initdb`` and ``pg_ctl`` (``pg_config --bindir``, else the newest
    ``/usr/lib/postgresql/*/bin``), or ``None`` when PostgreSQL's server is not installed."""
    candidates: list[str] = []
    pg_config = shutil.which("pg_config")
    if pg_config is not None:
        answer = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=False)
        candidates.append(answer.stdout.strip())
    found = glob.glob("/usr/lib/postgresql/*/bin")
    candidates += sorted(found, key=lambda path: int(Path(path).parent.name), reverse=True)
    for folder in candidates:
        if folder and os.access(os.path.join(folder, "initdb"), os.X_OK):
            return folder
    return None


def _as_postgres() -> list[str]:
    """The prefix that runs a command as the cluster's owner (root may not run ``initdb``)."""
    return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []


@dataclass
class PostgresServer:
    """One cluster: :meth:`start` creates it (the first time) and starts it, :meth:`stop` stops it
    (its data kept for a :meth:`start` again on the same port), :meth:`remove` deletes it."""

    bindir: str
    port: int = field(default_factory=free_port)
    folder: str = ""
    standby_of: int | None = None
    """The port of a loopback cluster this one is a streaming standby of (read-only)."""

    @property
    def data(self) -> str:
        return os.path.join(self.folder, "data")

    def url(self, user: str = "postgres", password: str | None = None, database: str = DATABASE) -> str:
        secret = f":{password}" if password is not None else ""
        return f"postgresql://{user}{secret}@127.0.0.1:{self.port}/{database}"

    def _run(self, *args: str) -> None:
        answer = subprocess.run([*_as_postgres(), *args], capture_output=True, text=True, check=False)
        if answer.returncode != 0:
            raise RuntimeError(f"{' '.join(args[:2])} exited with {answer.returncode}: {answer.stderr}")

    def _psql(self, *statements: str, database: str = "postgres") -> None:
        """Each statement in its own transaction (``-c`` each), over the cluster's socket."""
        psql = os.path.join(self.bindir, "psql")
        commands = [arg for statement in statements for arg in ("-c", statement)]
        self._run(psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", self.folder, "-p", str(self.port),
                  "-U", "postgres", "-d", database, *commands)  # fmt: skip

    def _create(self) -> None:
        # As root the cluster's owner is another user, who must reach the folder: /tmp, not a
        # TMPDIR of root's own (mode 700).
        self.folder = tempfile.mkdtemp(prefix="mcp-tasks-pg-", dir="/tmp" if os.geteuid() == 0 else None)
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres", "postgres")
        if self.standby_of is not None:
            basebackup = os.path.join(self.bindir, "pg_basebackup")
            self._run(basebackup, "-h", "127.0.0.1", "-p", str(self.standby_of), "-U", "postgres",
                      "-D", self.data, "-R", "-X", "stream")  # fmt: skip
            return
        initdb = os.path.join(self.bindir, "initdb")
        self._run(initdb, "-D", self.data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
        hba = os.path.join(self.data, "pg_hba.conf")
        Path(hba).write_text(_HBA)
        if os.geteuid() == 0:
            shutil.chown(hba, "postgres", "postgres")

    def _provision(self) -> None:
        self._psql(
            f"CREATE DATABASE {DATABASE}",
            f"CREATE ROLE {PASSWORD_USER} LOGIN SUPERUSER PASSWORD '{PASSWORD}'",
            f"CREATE ROLE {NO_CREATE_USER} LOGIN",
            f"CREATE ROLE {RECIPE_USER} LOGIN PASSWORD '{RECIPE_PASSWORD}'",
            f"REVOKE CREATE ON DATABASE {DATABASE} FROM PUBLIC",
        )

    def start(self) -> None:
        fresh = not self.folder
        if fresh:
            self._create()
        pg_ctl = os.path.join(self.bindir, "pg_ctl")
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        options += " -c max_connections=300"
        log = os.path.join(self.folder, "log")
        self._run(
            pg_ctl, "-D", self.data, "-l", log, "-o", options, "-w", "-t", str(int(START_BOUND_S)), "start"
        )
        self._until_accepting()
        if fresh and self.standby_of is None:
            self._provision()

    def _until_accepting(self) -> None:
        pg_isready = os.path.join(self.bindir, "pg_isready")
        deadline = time.monotonic() + START_BOUND_S
        while (
            subprocess.run(
                [pg_isready, "-q", "-h", "127.0.0.1", "-p", str(self.port)], check=False
            ).returncode
            != 0
        ):
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"PostgreSQL on port {self.port} did not accept connections in {START_BOUND_S}s"
                )
            time.sleep(0.05)  # polling a starting process's socket, not synchronising the tests

    def stop(self, mode: str = "fast") -> None:
        """Stop the cluster (``immediate``: as a crash would), keeping its data."""
        if not self.folder:
            return
        pg_ctl = os.path.join(self.bindir, "pg_ctl")
        subprocess.run([*_as_postgres(), pg_ctl, "-D", self.data, "-m", mode, "-w", "stop"],
                       capture_output=True, check=False)  # fmt: skip

    def remove(self) -> None:
        self.stop("immediate")
        if self.folder:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = ""

    def version(self) -> str:
        """``PostgreSQL 15.x`` (from ``postgres --version``), for the benchmarks' environment notes."""
        answer = subprocess.run(
            [os.path.join(self.bindir, "postgres"), "--version"], capture_output=True, text=True, check=False
        )
        words = answer.stdout.split()  # "postgres (PostgreSQL) 15.18 (Debian ...)"
        return "PostgreSQL " + (words[2] if len(words) > 2 else "?")
