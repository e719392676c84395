"""Kit servers as subprocesses: over streamable HTTP (:class:`HttpServerProcess`), and the
environment a subprocess needs to import what this interpreter imports."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
from collections.abc import Generator, Iterable, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from .serve import LISTENING_PREFIX, server_command
from .sessions import CONNECT_TIMEOUT_S, SessionSetupError

__all__ = ["HttpServerProcess", "child_environment", "http_server_process"]

EXIT_BOUND_S: Final = 60.0
"""How long :meth:`HttpServerProcess.stop` waits for the exit a SIGTERM asks for before SIGKILL, and
:meth:`~HttpServerProcess.kill` for the killed process to be reaped: a bound, not a wait (a graceful
stop usually takes well under a second), so a busy machine never turns a stop into a kill."""


class HttpServerProcess:
    """A server subprocess over streamable HTTP; a context manager whose value is its URL.

    ``command`` is usually ``server_command(..., transport="http")``; it must print
    ``listening on <url>`` on stderr once it accepts connections. Stopped with SIGTERM on exit.

    Example (by hand, for a test of what survives a server's crash)::

        server = HttpServerProcess(server_command("mylib_tools:TOOLS", transport="http"))
        url = server.start()  # returns once the server printed its URL
        try:
            ...  # sessions to url; server.kill() is a SIGKILL, as a crash would (no tidying up)
        finally:
            server.stop()  # SIGTERM; nothing to do once killed
    """

    def __init__(
        self,
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        start_timeout: float = CONNECT_TIMEOUT_S,
    ) -> None:
        self.command = list(command)
        self.env = None if env is None else dict(env)
        self.cwd = cwd
        self.start_timeout = start_timeout
        self.stderr_lines: list[str] = []
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._process: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None
        self.url: str | None = None

    def start(self) -> str:
        """Start the process and wait until it is listening; returns the URL."""
        self._process = subprocess.Popen(
            self.command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env,
            cwd=self.cwd,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        try:
            self.url = self._wait_for_url()
        except BaseException:
            self.stop()
            raise
        return self.url

    def _read(self) -> None:
        process = self._process
        assert process is not None
        assert process.stderr is not None
        for line in process.stderr:
            self.stderr_lines.append(line.rstrip("\n"))
            self._lines.put(line)
        self._lines.put(None)

    def _wait_for_url(self) -> str:
        while True:
            try:
                line = self._lines.get(timeout=self.start_timeout)
            except queue.Empty:
                raise SessionSetupError(
                    f"{' '.join(self.command)} printed no URL within {self.start_timeout:g} s"
                ) from None
            if line is None:
                tail = "\n".join(self.stderr_lines[-20:])
                raise SessionSetupError(f"{' '.join(self.command)} exited before listening:\n{tail}")
            if line.startswith(LISTENING_PREFIX):
                return line.removeprefix(LISTENING_PREFIX).strip()

    @property
    def pid(self) -> int | None:
        """The server process's id once started."""
        return None if self._process is None else self._process.pid

    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def kill(self) -> None:
        """SIGKILL and wait for the exit, as a crash or an OOM kill would end it (no tidying up)."""
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait(timeout=EXIT_BOUND_S)

    def stop(self) -> None:
        """SIGTERM and wait for the exit; SIGKILL if there is none within :data:`EXIT_BOUND_S`; idempotent."""
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=EXIT_BOUND_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self._reader is not None:
            self._reader.join(timeout=10)

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


@contextmanager
def http_server_process(
    toolset_spec: str | None = None,
    *,
    python: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> Generator[str, None, None]:
    """A kit server subprocess over streamable HTTP on a free port, for the block; yields its URL.

    ``python`` runs it on another virtual environment's interpreter (and so its mcp). Example::

        with http_server_process("mylib_tools:TOOLS") as url:
            async with connect_http(url) as session:
                result = await call_tool(session, "build", {"target": "docs"})
    """
    command = server_command(toolset_spec, transport="http", python=python)
    with HttpServerProcess(command, env=env, cwd=cwd) as url:
        yield url


def child_environment(extra_paths: Iterable[str | os.PathLike[str]] = ()) -> dict[str, str]:
    """``PYTHONPATH`` for a server subprocess on this interpreter: ``extra_paths``, then this ``sys.path``.

    ``sys.path`` entries inside the interpreter's own prefixes are left out (the child finds them
    itself), so a tool set importable here (e.g. from a test folder pytest put on ``sys.path``) is
    importable there. ``extra_paths`` are always kept, wherever they are.
    """
    prefixes = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}

    def inside_interpreter(path: Path) -> bool:
        return any(path == prefix or prefix in path.parents for prefix in prefixes)

    paths: list[str] = []
    candidates = [(os.fspath(path), True) for path in extra_paths] + [(entry, False) for entry in sys.path]
    for entry, explicit in candidates:
        if not entry or not Path(entry).is_dir():
            continue
        resolved = Path(entry).resolve()
        if not explicit and inside_interpreter(resolved):
            continue
        if str(resolved) not in paths:
            paths.append(str(resolved))
    existing = os.environ.get("PYTHONPATH")
    if existing:
        paths.append(existing)
    return {"PYTHONPATH": os.pathsep.join(paths)} if paths else {}
