"""Run the TypeScript MCP peers in ``tests/interop/ts`` and hand back what they report.

The peers are Node ESM scripts built on the official npm packages, pinned by
``tests/interop/ts/package-lock.json``. Each client peer prints ONE JSON object on stdout; the
server peer (``sdk1_server.mjs``) speaks MCP over stdio, or over streamable HTTP after printing
``{"url": ...}``.

Dependencies are installed from the lock file with ``npm ci`` the first time a test needs them,
and again whenever the lock file changes (a stamp in ``node_modules`` records which lock file was
installed). A machine without ``node`` skips these tests with that reason; a machine with ``node``
runs them, and a failed install fails them loudly rather than skipping.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

__all__ = [
    "TS_DIR",
    "PeerRun",
    "TsPeers",
    "run_peer_command",
    "ts_peers",
]

TS_DIR = Path(__file__).resolve().parent / "ts"
"""The npm project holding the peers (package.json, package-lock.json, *.mjs)."""

MIN_NODE_MAJOR = 20
"""The pinned packages declare ``engines.node >= 20``."""

_STAMP = TS_DIR / "node_modules" / ".mcp-tasks-compat-lock.sha256"
_NPM_CI_TIMEOUT_S = 300.0
_DEFAULT_PEER_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class PeerRun:
    """One finished peer process: its JSON report and everything needed to explain a failure."""

    argv: tuple[str, ...]
    returncode: int
    report: dict[str, Any]
    stderr: str

    def explain(self) -> str:
        """A failure message body: the command, exit code, report and stderr tail."""
        return (
            f"peer: {' '.join(self.argv)}\nexit code: {self.returncode}\n"
            f"report: {json.dumps(self.report, indent=2)}\nstderr (tail):\n{self.stderr[-4000:]}"
        )


class TsPeers:
    """Locates node, installs the pinned packages once, and runs the peer scripts."""

    def __init__(self, node: str) -> None:
        self.node = node

    # -- installation ---------------------------------------------------------------------------

    def ensure_installed(self) -> None:
        """``npm ci`` from the lock file unless ``node_modules`` already holds exactly that lock."""
        wanted = _lock_digest()
        if _installed_digest() == wanted:
            return
        with _install_lock():
            if _installed_digest() == wanted:  # another process installed it while we waited
                return
            npm = shutil.which(
                "npm", path=str(Path(self.node).parent) + os.pathsep + os.environ.get("PATH", "")
            )
            if npm is None:
                pytest.fail(
                    f"node is installed ({self.node}) but npm is not, so the TypeScript peers' "
                    f"dependencies cannot be installed from {TS_DIR / 'package-lock.json'}"
                )
            completed = subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                cwd=TS_DIR,
                capture_output=True,
                text=True,
                timeout=_NPM_CI_TIMEOUT_S,
                check=False,
            )
            if completed.returncode != 0:
                pytest.fail(
                    f"`npm ci` in {TS_DIR} failed (exit {completed.returncode}):\n"
                    f"{completed.stdout[-2000:]}\n{completed.stderr[-4000:]}"
                )
            _STAMP.write_text(wanted, encoding="ascii")

    # -- commands -------------------------------------------------------------------------------

    def script(self, name: str) -> str:
        path = TS_DIR / name
        if not path.is_file():
            raise FileNotFoundError(path)
        return str(path)

    def sdk1_server_command(self) -> list[str]:
        """The stdio command of the TS SDK 1.x task server (for a client's ``-- COMMAND``)."""
        return [self.node, self.script("sdk1_server.mjs")]

    def _argv(self, script: str, args: Sequence[str]) -> list[str]:
        return [self.node, self.script(script), *args]

    # -- running --------------------------------------------------------------------------------

    def run(self, script: str, *args: str, timeout: float = _DEFAULT_PEER_TIMEOUT_S) -> PeerRun:
        """Run a client peer to completion (blocking) and parse its report."""
        argv = self._argv(script, args)
        completed = subprocess.run(
            argv, cwd=TS_DIR, capture_output=True, text=True, timeout=timeout, check=False, env=_peer_env()
        )
        return _finish(argv, completed.returncode, completed.stdout, completed.stderr)

    async def run_async(self, script: str, *args: str) -> PeerRun:
        """Run a client peer without blocking the event loop (for servers running in-process).

        Bounded by the default peer timeout; wrap the call in ``anyio.fail_after`` for a tighter one.
        """
        return await run_peer_command(self._argv(script, args), cwd=TS_DIR)

    @contextlib.contextmanager
    def sdk1_http_server(
        self, *extra: str, startup_timeout: float = _DEFAULT_PEER_TIMEOUT_S
    ) -> Iterator[str]:
        """Start the TS SDK 1.x task server on streamable HTTP (free port); yield its URL."""
        argv = [*self.sdk1_server_command(), "--http", "--port", "0", *extra]
        with tempfile.TemporaryFile() as stderr_sink:
            process = subprocess.Popen(
                argv, cwd=TS_DIR, stdout=subprocess.PIPE, stderr=stderr_sink, text=True, env=_peer_env()
            )
            try:
                url = _read_ready_line(process, stderr_sink, startup_timeout)
                yield url
            finally:
                process.terminate()
                try:
                    process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=5)
                if process.stdout is not None:
                    process.stdout.close()


async def run_peer_command(
    argv: Sequence[str], *, cwd: Path, bound_s: float = _DEFAULT_PEER_TIMEOUT_S
) -> PeerRun:
    """Run any client peer that prints one JSON report (a node script, another venv's python)
    without blocking the event loop, bounded by ``bound_s`` (default: the default peer timeout)."""
    with anyio.fail_after(bound_s):
        completed = await anyio.run_process(list(argv), cwd=cwd, check=False, env=_peer_env())
    return _finish(
        argv,
        completed.returncode,
        completed.stdout.decode("utf-8", "replace"),
        completed.stderr.decode("utf-8", "replace"),
    )


def _read_ready_line(process: subprocess.Popen[str], stderr_sink: Any, timeout: float) -> str:
    """The server's first stdout line is ``{"url": ...}``; wait for it with a bound."""
    assert process.stdout is not None
    result: dict[str, str] = {}

    def read() -> None:
        assert process.stdout is not None
        result["line"] = process.stdout.readline()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout)
    line = result.get("line", "")
    if not line:
        process.kill()
        process.wait(timeout=5)
        stderr_sink.seek(0)
        raise AssertionError(
            f"TS sdk1 server did not report its URL within {timeout}s "
            f"(exit {process.returncode}):\n{stderr_sink.read().decode('utf-8', 'replace')[-4000:]}"
        )
    return str(json.loads(line)["url"])


def _finish(argv: Sequence[str], returncode: int, stdout: str, stderr: str) -> PeerRun:
    lines = [line for line in stdout.splitlines() if line.strip()]
    try:
        report = json.loads(lines[-1]) if lines else {}
    except json.JSONDecodeError:
        report = {}
    run = PeerRun(argv=tuple(argv), returncode=returncode, report=report, stderr=stderr)
    if not report:
        raise AssertionError(f"the peer printed no JSON report\nstdout: {stdout[-2000:]}\n{run.explain()}")
    return run


def _peer_env() -> dict[str, str]:
    """The peers inherit the environment; a stdio server command they spawn needs it (PATH, venv)."""
    env = dict(os.environ)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def _lock_digest() -> str:
    lock = TS_DIR / "package-lock.json"
    manifest = TS_DIR / "package.json"
    digest = hashlib.sha256(lock.read_bytes() + b"\0" + manifest.read_bytes())
    return digest.hexdigest()


def _installed_digest() -> str | None:
    try:
        return _STAMP.read_text(encoding="ascii").strip()
    except OSError:
        return None


@contextlib.contextmanager
def _install_lock() -> Iterator[None]:
    """Serialise ``npm ci`` between concurrent test runs (e.g. several nox sessions at once)."""
    tag = hashlib.sha256(str(TS_DIR).encode()).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"mcp-tasks-compat-npm-{tag}.lock"
    with path.open("w") as handle:
        if sys.platform != "win32":
            import fcntl

            fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def find_node() -> str | None:
    """The node executable: ``$MCP_TASKS_COMPAT_NODE`` if set, else ``node`` on PATH."""
    override = os.environ.get("MCP_TASKS_COMPAT_NODE")
    if override:
        return override
    return shutil.which("node")


@pytest.fixture(scope="session")
def ts_peers() -> TsPeers:
    """The TypeScript peers, installed from the lock file; skips only when node is absent."""
    node = find_node()
    if node is None:
        pytest.skip(f"node is not installed: the peers in tests/interop/ts need Node.js >= {MIN_NODE_MAJOR}")
    version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30, check=False)
    major = version.stdout.strip().lstrip("v").split(".")[0]
    if not major.isdigit() or int(major) < MIN_NODE_MAJOR:
        pytest.fail(
            f"{node} reports {version.stdout.strip() or version.stderr.strip()!r}; "
            f"the TypeScript peers need Node.js >= {MIN_NODE_MAJOR}"
        )
    peers = TsPeers(node)
    peers.ensure_installed()
    return peers
