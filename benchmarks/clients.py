"""Connections to the servers under test, and the ways of calling a tool that we compare.

One :class:`Conn` is one real SDK ``ClientSession`` over one transport (in-memory JSON-RPC
streams, streamable HTTP to a server process on 127.0.0.1, or stdio to a server process). When the
project's client is installed the session is built with ``session_kwargs()`` and negotiated with
``negotiate()``, so the raw SDK call and ours run on the very same session and server.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from . import servers

__all__ = [
    "Conn",
    "ServerProcess",
    "connect",
    "free_port",
    "http_process",
    "is_created_task",
    "ours_client_available",
    "ready_processes",
    "server_process",
]

REPO_ROOT = Path(__file__).resolve().parent.parent


def ours_client_available() -> bool:
    return importlib.util.find_spec("mcp_tasks_compat.client") is not None


@functools.cache
def _our_client() -> Any:
    """``mcp_tasks_compat.client``, imported once: an import statement inside a timed call costs
    a module lookup per call that the SDK's bare call does not pay (absent in a peer-only env)."""
    import mcp_tasks_compat.client as client

    return client


@dataclass
class ServerProcess:
    """A server of one kind running in its own process."""

    kind: str
    transport: str
    argv: list[str]
    url: str | None = None
    process: subprocess.Popen[bytes] | None = None
    log_path: str | None = None

    def stdio_params(self) -> Any:
        from mcp.client.stdio import StdioServerParameters

        return StdioServerParameters(
            command=self.argv[0], args=self.argv[1:], cwd=str(REPO_ROOT), env=_child_env()
        )


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    env.setdefault("FASTMCP_SHOW_SERVER_BANNER", "false")
    env.setdefault("FASTMCP_LOG_LEVEL", "WARNING")
    return env


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when the bench process dies, so no server is orphaned."""
    import ctypes
    import signal

    pr_set_pdeathsig = 1
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _server_argv(
    kind: str,
    transport: str,
    port: int,
    ttl_ms: int | None,
    concurrency: int | None,
    store: str | None,
    off: Sequence[str] = (),
) -> list[str]:
    argv = [sys.executable, "-m", "benchmarks.servers", kind, "--transport", transport, "--port", str(port)]
    if off:
        argv += ["--off", ",".join(off)]
    if ttl_ms is not None:
        argv += ["--ttl-ms", str(ttl_ms)]
    if concurrency is not None:
        argv += ["--concurrency", str(concurrency)]
    if store is not None:
        argv += ["--store", store]
    return argv


@contextmanager
def server_process(
    kind: str,
    transport: str,
    *,
    ttl_ms: int | None = None,
    concurrency: int | None = None,
    store: str | None = None,
    off: Sequence[str] = (),
    start_timeout: float = 60,
) -> Iterator[ServerProcess]:
    """Start a server process (HTTP: now, and wait until it accepts; stdio: the client spawns it)."""
    if transport == "stdio":
        yield ServerProcess(kind, transport, _server_argv(kind, "stdio", 0, ttl_ms, concurrency, store, off))
        return
    port = free_port()
    argv = _server_argv(kind, "http", port, ttl_ms, concurrency, store, off)
    with http_process(kind, argv, port, start_timeout=start_timeout) as handle:
        yield handle


@contextmanager
def http_process(
    kind: str,
    argv: Sequence[str],
    port: int,
    *,
    env: Mapping[str, str] | None = None,
    start_timeout: float = 60,
) -> Iterator[ServerProcess]:
    """Run ``argv`` (a streamable HTTP server on 127.0.0.1:``port``, path ``/mcp``) in its own
    process, ``env`` added to the bench's environment; yields once it accepts connections, and
    stops it (SIGTERM, then SIGKILL after 10 s) at the end."""
    with tempfile.NamedTemporaryFile("w+b", prefix=f"bench-{kind}-", suffix=".log", delete=False) as log:
        log_path = log.name
    with open(log_path, "wb") as log_file:
        process = subprocess.Popen(
            list(argv),
            cwd=REPO_ROOT,
            env={**_child_env(), **dict(env or {})},
            stdout=log_file,
            stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent if sys.platform == "linux" else None,
        )
    handle = ServerProcess(kind, "http", list(argv), f"http://127.0.0.1:{port}/mcp", process, log_path)
    try:
        deadline = time.monotonic() + start_timeout
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"{kind} server exited with {process.returncode}: {_tail(log_path)}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError as exc:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"{kind} server did not listen within {start_timeout}s: {_tail(log_path)}"
                    ) from exc
                time.sleep(0.05)
        yield handle
    finally:
        process.terminate()
        _reap(process, log_path)


def _reap(process: subprocess.Popen[Any], log_path: str) -> None:
    """Wait for a terminated ``process`` (SIGKILL after 10 s) and remove its log."""
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    Path(log_path).unlink(missing_ok=True)


@contextmanager
def ready_processes(
    name: str,
    argv: Sequence[str],
    count: int,
    ready: str,
    *,
    env: Mapping[str, str] | None = None,
    start_timeout: float = 60,
) -> Iterator[list[subprocess.Popen[bytes]]]:
    """``count`` processes of ``argv`` (processes that listen on nothing: workers), started at once,
    ``env`` added to the bench's environment; yields once the output (stdout and stderr) of each
    holds ``ready``, and stops them (SIGTERM, then SIGKILL after 10 s) at the end."""
    started: list[tuple[subprocess.Popen[bytes], str]] = []
    try:
        for index in range(count):
            with tempfile.NamedTemporaryFile(
                "w+b", prefix=f"bench-{name}-{index}-", suffix=".log", delete=False
            ) as log:
                log_path = log.name
            with open(log_path, "wb") as log_file:
                process = subprocess.Popen(
                    list(argv),
                    cwd=REPO_ROOT,
                    env={**_child_env(), "PYTHONUNBUFFERED": "1", **dict(env or {})},
                    stdout=log_file,
                    stderr=subprocess.STDOUT,
                    preexec_fn=_die_with_parent if sys.platform == "linux" else None,
                )
            started.append((process, log_path))
        deadline = time.monotonic() + start_timeout
        for process, log_path in started:
            while ready not in Path(log_path).read_text(errors="replace"):
                if process.poll() is not None:
                    raise RuntimeError(f"{name} exited with {process.returncode}: {_tail(log_path)}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{name} was not ready within {start_timeout}s: {_tail(log_path)}")
                time.sleep(0.05)  # another process's output: nothing to wait on but its file
        yield [process for process, _ in started]
    finally:
        for process, _ in started:
            process.terminate()
        for process, log_path in started:
            _reap(process, log_path)


def _tail(path: str, limit: int = 2000) -> str:
    try:
        return Path(path).read_text(errors="replace")[-limit:]
    except OSError:
        return "<no log>"


@dataclass
class Conn:
    """One negotiated session and the ways of calling through it."""

    session: Any
    kind: str
    transport: str
    ours: bool
    dialect: str | None = None
    protocol_version: str | None = None
    server_pid: int | None = None  # the server's process (stdio, HTTP); None: in this process
    extras: dict[str, Any] = field(default_factory=dict)

    async def raw(self, name: str, arguments: Mapping[str, Any] | None = None) -> Any:
        """The installed SDK's own ``session.call_tool``."""
        return await self.session.call_tool(name, dict(arguments or {}))

    async def call(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        mode: str = "auto",
        at_once: bool = False,
    ) -> Any:
        """Our ``call_tool(session, name, arguments, mode=...)``; ``at_once``: with the task-at-once
        hint ``start_tool`` sends, so our server makes a task of a quick tool too (once the tool
        is known) instead of answering it within the inline grace: a section that measures what
        a task costs (the store's share, telemetry) needs a task each call."""
        meta = {TASK_AT_ONCE_META_KEY: True} if at_once else None
        return await _our_client().call_tool(self.session, name, dict(arguments or {}), mode=mode, meta=meta)

    async def session_call(self, name: str, arguments: Mapping[str, Any] | None = None, *, mode: str) -> Any:
        """The session's own ``call_tool(name, arguments, mode=...)``: a ``TaskClientSession``'s
        (``connect(task_session=True)``), as a user calls it."""
        return await self.session.call_tool(name, dict(arguments or {}), mode=mode)

    async def start(
        self, name: str, arguments: Mapping[str, Any] | None = None, *, ttl_s: float | None = None
    ) -> Any:
        """Our ``start_tool``: a handle to a task left running (``ttl_s``: asked of a 2025-11-25 server)."""
        return await _our_client().start_tool(self.session, name, dict(arguments or {}), ttl=ttl_s)

    async def create_bare(self, name: str, arguments: Mapping[str, Any] | None = None) -> Any:
        """The SDK's own ``call_tool`` on a session that declares the Tasks extension (mcp 2.x).

        Returns what the server answered: the task it created (:func:`_created_task_model`), or a
        ``CallToolResult`` when it answered plainly. No follow, no hint: what any SDK client sends.
        """
        return await self.session.call_tool(name, dict(arguments or {}), allow_claimed=True)

    async def stats(self, *, collect: bool = False, trim: bool = False) -> dict[str, Any]:
        import json

        result = await self.raw("stats", {"collect": collect, "trim": trim} if trim else {"collect": collect})
        return json.loads(text_of(result))


def text_of(result: Any) -> str:
    """The first text block of a CallToolResult (either major)."""
    for block in result.content:
        text = getattr(block, "text", None)
        if text is not None:
            return str(text)
    raise ValueError(f"no text content in {result!r}")


async def _wait_ready(errlog: Any, bound_s: float = 120) -> int | None:
    """Wait (bounded) for the stdio server's ready line, so negotiation's own time bound is fair;
    the server's pid, which the line carries (its CPU time is read by that pid)."""
    with anyio.fail_after(bound_s):
        while True:
            errlog.seek(0)
            seen = errlog.read()
            if servers.READY_MARKER in seen:
                return servers.ready_pid(seen)
            await anyio.sleep(0.02)


@asynccontextmanager
async def _transport_streams(
    transport: str, *, kind: str, server: Any = None, process: ServerProcess | None = None
) -> AsyncIterator[tuple[Any, Any, int | None]]:
    """The client's (read, write) streams, and the server's pid (None: it runs in this process)."""
    if transport == "memory":
        async with servers.memory_streams(kind, server) as streams:
            yield streams[0], streams[1], None
        return
    assert process is not None
    if transport == "http":
        try:
            from mcp.client.streamable_http import streamable_http_client
        except ImportError:  # mcp < 1.24 names it streamablehttp_client (the same streams first)
            from mcp.client.streamable_http import (  # type: ignore[attr-defined, no-redef]
                streamablehttp_client as streamable_http_client,  # pyright: ignore[reportAttributeAccessIssue]
            )

        assert process.url is not None
        pid = process.process.pid if process.process is not None else None
        async with streamable_http_client(process.url) as streams:
            yield streams[0], streams[1], pid
        return
    if transport == "stdio":
        from mcp.client.stdio import stdio_client

        with tempfile.TemporaryFile("w+") as errlog:
            async with stdio_client(process.stdio_params(), errlog=errlog) as streams:
                pid = await _wait_ready(errlog)
                yield streams[0], streams[1], pid
        return
    raise ValueError(f"unknown transport {transport!r}")


@asynccontextmanager
async def connect(
    transport: str,
    *,
    kind: str,
    server: Any = None,
    process: ServerProcess | None = None,
    ours: bool | None = None,
    opt_ins: Mapping[str, Any] | None = None,
    off: Sequence[str] = (),
    counter: Any = None,
    declare_tasks: bool = False,
    task_session: bool = False,
) -> AsyncIterator[Conn]:
    """Open and negotiate one session.

    ``ours`` (default: whenever the project's client is installed) builds it with our
    ``session_kwargs(**opt_ins)`` and negotiates with our ``negotiate``; otherwise it is a bare SDK
    session negotiated the SDK's way. ``off``: the client side of mechanisms turned off
    (:func:`.mechanisms.client_kwargs`); ``counter``: a :class:`.mechanisms.RequestCounter` that
    counts the requests this session writes. ``declare_tasks`` (a bare session on mcp 2.x): it
    declares the Tasks extension, with a claim of the created task so ``Conn.create_bare`` can
    return it, and nothing else of ours. ``task_session`` (with ours): the session is our
    ``TaskClientSession(read, write, **opt_ins)``, as a user builds it (:meth:`Conn.session_call`).
    """
    from mcp import ClientSession

    use_ours = ours_client_available() if ours is None else ours
    async with AsyncExitStack() as stack:
        read, write, server_pid = await stack.enter_async_context(
            _transport_streams(transport, kind=kind, server=server, process=process)
        )
        if counter is not None:
            from .mechanisms import CountingSendStream

            write = CountingSendStream(write, counter)
        if use_ours:
            from mcp_tasks_compat._client_api import session_kwargs
            from mcp_tasks_compat.client import negotiate

            from .mechanisms import client_kwargs

            wanted = {**dict(opt_ins or {}), **client_kwargs(off)}
            if task_session:
                from mcp_tasks_compat.client import TaskClientSession

                session = await stack.enter_async_context(TaskClientSession(read, write, **wanted))
            else:
                kwargs = session_kwargs(**wanted)
                session = await stack.enter_async_context(ClientSession(read, write, **kwargs))
            if wanted.get("dialect") == "2025-11-25" and servers.mcp_major() == 2:
                # A handshake-era connection: open it with initialize; negotiate() then adopts it.
                await session.initialize()
            negotiated = await negotiate(session)
            conn = Conn(
                session,
                kind,
                transport,
                True,
                dialect=getattr(negotiated, "dialect", None),
                protocol_version=getattr(negotiated, "protocol_version", None),
                server_pid=server_pid,
            )
        else:
            bare_kwargs = _declaring_tasks() if declare_tasks else {}
            session = await stack.enter_async_context(ClientSession(read, write, **bare_kwargs))
            protocol_version = await _sdk_negotiate(session)
            conn = Conn(
                session,
                kind,
                transport,
                False,
                dialect="2026-07-28" if declare_tasks else None,
                protocol_version=protocol_version,
                server_pid=server_pid,
            )
        yield conn


TASKS_EXTENSION_ID = "io.modelcontextprotocol/tasks"
TASK_AT_ONCE_META_KEY = "io.github.mcp-tasks-compat/taskAtOnce"  # dialects.TASK_AT_ONCE_META_KEY


def _created_task_model() -> Any:
    """The SEP-2663 ``CreateTaskResult`` as a claim model of the SDK's own (mcp 2.x), fields raw."""
    global _CREATED_TASK
    if _CREATED_TASK is None:
        from typing import Literal

        import mcp_types
        from pydantic import ConfigDict

        class CreatedTask(mcp_types.Result):
            model_config = ConfigDict(extra="allow")
            result_type: Literal["task"] = "task"

        _CREATED_TASK = CreatedTask
    return _CREATED_TASK


_CREATED_TASK: Any = None


def _declaring_tasks() -> dict[str, Any]:
    """``ClientSession`` keywords that declare the Tasks extension with the SDK's seams alone."""
    if servers.mcp_major() == 1:
        raise ValueError("declare_tasks is for mcp 2.x sessions (the Tasks extension)")
    from mcp.client.extension import ClaimContext, ResultClaim

    async def never_followed(task: Any, context: ClaimContext) -> Any:
        raise RuntimeError("the bench's bare creator does not follow its tasks")

    claim = ResultClaim(
        result_type="task",
        model=_created_task_model(),
        resolve=never_followed,
        protocol_versions=frozenset({"2026-07-28"}),
    )
    return {"extensions": {TASKS_EXTENSION_ID: {}}, "result_claims": {TASKS_EXTENSION_ID: [claim]}}


def is_created_task(result: Any) -> bool:
    """Whether a bare ``create_bare`` answer is a created task (not a plain ``CallToolResult``)."""
    return getattr(result, "result_type", None) == "task"


async def _sdk_negotiate(session: Any) -> str | None:
    """The SDK's own negotiation: ``initialize`` on 1.x; ``server/discover`` then ``initialize`` on 2.x."""
    if servers.mcp_major() == 1:
        result = await session.initialize()
        return str(result.protocolVersion)
    from mcp.shared.exceptions import MCPError

    try:
        with anyio.fail_after(5):
            await session.discover()
    except (MCPError, TimeoutError):
        await session.initialize()
    return getattr(session, "protocol_version", None)
