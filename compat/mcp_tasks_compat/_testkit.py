"""The testing kit without pytest: tool sets, task servers and connected sessions on the installed major.

:mod:`mcp_tasks_compat.testing` re-exports everything public here and adds the pytest fixtures;
this module imports neither ``pytest`` nor ``mcp`` (servers, transports and serving are the
installed major's app facet, from the adapter registry, the same the command line uses), so a
noxfile can read :func:`nox_sdk_versions` and a server subprocess starts without pytest.

A server subprocess is ``python -m mcp_tasks_compat.testing serve [MODULE:ATTRIBUTE]``
(:func:`server_command` builds the line): the tool set named there, or :data:`EXAMPLE_TOOLSET`.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import os
import queue
import subprocess
import sys
import tempfile
import threading
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, TextIO, cast

import anyio

from ._adapters import get_adapter
from ._detect import sdk_info
from ._engine.policy import SUPPORT_VALUES
from .client import negotiate, session_kwargs
from .dialects import ALL_DIALECTS, DIALECT_2025_11_25, Dialect, TaskSupport
from .errors import CompatError
from .examples import EXAMPLE_TASK_SUPPORT, EXAMPLE_TOOLS
from .server import TaskServer

SDK_VERSIONS: Final[tuple[str, ...]] = ("1.23.0", "1.30.0", "2.0.0", "2.3.0")
"""The mcp releases this library is tested on: the 1.x floor (the first with the tasks API), the
newest 1.x, the first 2.x and the newest 2.x. ``noxfile.py`` runs the suite once on each."""
SDK_VERSIONS_DATE: Final = "2026-12-01"
"""When :data:`SDK_VERSIONS` was last checked against the newest releases on PyPI (a pinned list:
a release newer than it is not in it until this library is tested on it)."""
SdkVersionPolicy = Literal["floor-latest", "latest"]

DEFAULT_SERVER_NAME: Final = "mcp-tasks-compat-testing"
CONNECT_TIMEOUT_S: Final = 60.0
"""Bound on opening and negotiating a session (a subprocess server first imports ``mcp``)."""
SERVE_MODULE: Final = "mcp_tasks_compat.testing"
LISTENING_PREFIX: Final = "listening on "

ToolFunction = Callable[..., Awaitable[Any]]
Transport = Literal["stdio", "http"]


class SessionSetupError(RuntimeError):
    """A kit session could not be opened as asked (e.g. the pinned dialect was not negotiated)."""


class SessionOptionsError(ValueError):
    """``session_options`` would silently replace part of the library's own session settings."""


# --- versions ------------------------------------------------------------------------------------


def nox_sdk_versions(
    policy: SdkVersionPolicy = "floor-latest", *, majors: Iterable[int] = (1, 2), floors: bool = True
) -> list[str]:
    """The pinned, tested :data:`SDK_VERSIONS` for ``@nox.parametrize("mcp", nox_sdk_versions())``.

    ``"floor-latest"`` (the default): the floor and the newest release of each major, the matrix
    this library runs; ``"latest"`` (or ``floors=False``): only the newest of each. ``majors``
    keeps only those majors. The list is dated :data:`SDK_VERSIONS_DATE`.
    """
    if policy not in ("floor-latest", "latest"):
        raise ValueError(f"policy must be 'floor-latest' or 'latest', not {policy!r}")
    wanted = set(majors)
    chosen = [version for version in SDK_VERSIONS if int(version.split(".")[0]) in wanted]
    if floors and policy == "floor-latest":
        return chosen
    newest: dict[str, str] = {}
    for version in chosen:
        newest[version.split(".")[0]] = version  # SDK_VERSIONS is in ascending order
    return list(newest.values())


def dialects() -> tuple[Dialect, ...]:
    """The task dialects the installed mcp speaks as client and as server (for parametrizing)."""
    info = sdk_info()
    return tuple(d for d in ALL_DIALECTS if d in info.client_dialects and d in info.server_dialects)


# --- tool sets -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolSet:
    """Tools for a test server, and how each may run as a task.

    ``support`` maps tool names to ``"optional" | "required" | "forbidden"``; a tool it leaves out
    is ``"forbidden"`` (a plain tool). ``name`` and ``version`` are the server's ``serverInfo``
    (``version=None``: the SDK's default). To serve it from a subprocess (stdio, HTTP), put it at
    module level and name it ``"package.module:ATTRIBUTE"``.
    """

    tools: Mapping[str, ToolFunction]
    support: Mapping[str, TaskSupport] = field(default_factory=lambda: dict[str, TaskSupport]())
    name: str = DEFAULT_SERVER_NAME
    version: str | None = None

    def __post_init__(self) -> None:
        unknown = sorted(set(self.support) - set(self.tools))
        if unknown:
            raise ValueError(f"task support given for tools the set does not have: {unknown}")
        bad = {tool: value for tool, value in self.support.items() if value not in SUPPORT_VALUES}
        if bad:
            raise ValueError(f"task support must be one of {SUPPORT_VALUES}; got {bad}")


APPLICATION_ERROR: Final = -32050
"""The JSON-RPC code :func:`rpc_error` answers by default (in the implementation-defined range)."""


async def echo(text: str) -> str:
    """Return ``text`` at once; the example tool set declares it ``forbidden`` (never a task)."""
    return text


async def rpc_error(message: str, code: int = APPLICATION_ERROR) -> str:
    """Answer a JSON-RPC error instead of a result.

    As a task it ends ``failed`` with that error on mcp 2.x servers. mcp 1.x ``FastMCP`` turns
    every exception of a tool into an ``isError`` result, so there it behaves like ``fail``.
    """
    raise get_adapter().app.jsonrpc_exception(code, message)


EXAMPLE_TOOLSET: Final = ToolSet(
    tools={**EXAMPLE_TOOLS, "echo": echo, "rpc_error": rpc_error},
    support={**EXAMPLE_TASK_SUPPORT, "echo": "forbidden", "rpc_error": "optional"},
)
"""The command line's example tools (``slow_echo`` and ``fail`` optional, ``must_task`` required)
plus ``echo`` (forbidden: one tool of each kind of task support) and ``rpc_error`` (optional)."""


def load_toolset(spec: str) -> ToolSet:
    """The :class:`ToolSet` named by ``"package.module:ATTRIBUTE"`` (or a function returning one)."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise ValueError(f"a tool set is named 'package.module:ATTRIBUTE', not {spec!r}")
    found: object = importlib.import_module(module_name)
    for part in attribute.split("."):
        found = getattr(found, part)
    if not isinstance(found, ToolSet) and callable(found):
        found = found()
    if not isinstance(found, ToolSet):
        raise TypeError(f"{spec} is a {type(found).__name__}, not a mcp_tasks_compat.testing.ToolSet")
    return found


# --- servers -------------------------------------------------------------------------------------


def build_task_server(
    toolset: ToolSet = EXAMPLE_TOOLSET, *, host: str = "127.0.0.1", **server_tasks_options: Any
) -> Any:
    """The SDK server of a :class:`~mcp_tasks_compat.server.TaskServer` serving ``toolset``.

    mcp 1.x: a ``FastMCP`` (2025-11-25); mcp 2.x: an ``MCPServer`` (both dialects); built the way
    a server author builds one. ``server_tasks_options`` go to ``TaskServer`` (``store``,
    ``poll_policy``, ``dialects``...); ``host`` is where it will listen over HTTP.
    """
    identity: dict[str, Any] = {} if toolset.version is None else {"version": toolset.version}
    app = TaskServer(toolset.name, host=host, **identity, **server_tasks_options)
    for name, tool in toolset.tools.items():
        app.tool(name=name, task=toolset.support.get(name, "forbidden"))(tool)
    return app.sdk_server


# --- sessions ------------------------------------------------------------------------------------


@asynccontextmanager
async def _session_on(
    streams: tuple[Any, Any],
    *,
    dialect: Dialect | None,
    session_options: Mapping[str, Any],
    describe: Callable[[], str],
) -> AsyncGenerator[Any, None]:
    """A ``ClientSession`` on ``streams``, opened and negotiated, the pinned ``dialect`` checked."""
    app = get_adapter().app
    async with app.open_session(streams, dict(session_options)) as session:
        try:
            with anyio.fail_after(CONNECT_TIMEOUT_S):
                # mcp 2.x reaches 2025-11-25 on a server that also speaks 2026-07-28 by
                # initializing first; negotiate keeps a connection that is already open.
                await app.handshake(session, dialect_2025=dialect == DIALECT_2025_11_25)
                negotiated = await negotiate(session)
        except TimeoutError:
            raise SessionSetupError(f"no session within {CONNECT_TIMEOUT_S:g} s{describe()}") from None
        except CompatError:
            raise  # the library's own refusals say what to do already
        except Exception as error:  # e.g. the server process died: say what it printed
            raise SessionSetupError(f"opening the session failed: {error!r}{describe()}") from error
        if dialect is not None and negotiated.dialect != dialect:
            raise SessionSetupError(
                f"asked for the {dialect} task dialect, the connection negotiated "
                f"{negotiated.dialect or 'none'} ({negotiated.reason or 'no reason given'}){describe()}"
            )
        yield session


def _no_detail() -> str:
    return ""


COMPOSED_SESSION_OPTIONS: Final = ("message_handler", "extensions", "result_claims", "notification_bindings")
"""The ``ClientSession`` keywords ``session_kwargs()`` composes with the caller's own (its parameters)."""


def _kind(value: object) -> object:
    """What identifies a session setting as the library's: its type, or its members' types and keys."""
    if isinstance(value, Mapping):
        return frozenset(cast("Mapping[object, object]", value))
    if isinstance(value, (list, tuple)):
        handlers: list[object] = [getattr(item, "handler", item) for item in cast("Sequence[object]", value)]
        return frozenset(type(handler) for handler in handlers)
    return type(value)


def _is_librarys(value: object, own: object) -> bool:
    """``value`` holds the library's own setting ``own`` (it was spread from ``session_kwargs()``)."""
    kind, own_kind = _kind(value), _kind(own)
    if isinstance(own_kind, frozenset) and isinstance(kind, frozenset):
        return own_kind <= kind
    return kind == own_kind


def merged_session_options(
    session_options: Mapping[str, Any] | None, *, dialect: Dialect | None, bare: bool = False
) -> dict[str, Any]:
    """The ``ClientSession`` keywords of a kit session: the caller's added to ``session_kwargs()``.

    The keywords ``session_kwargs()`` composes (:data:`COMPOSED_SESSION_OPTIONS`) are composed
    through it, every other one is added; options already built on ``session_kwargs()`` are taken
    as they are. Options that spread ``session_kwargs()`` but replace or drop part of it are refused
    with :class:`SessionOptionsError` (the session would lose task support without a word).
    ``bare=True``: the caller's options only, without the library's task plumbing.
    """
    given = dict(session_options or {})
    if bare:
        return given
    own = session_kwargs(dialect=dialect)
    spread = sorted(key for key in own if key in given and _is_librarys(given[key], own[key]))
    if spread:
        lost = sorted(key for key in own if key not in spread)
        if lost:
            replaced = [key for key in lost if key in given]
            raise SessionOptionsError(
                f"session_options holds session_kwargs()'s {spread} but "
                + (f"replaces its {replaced}" if replaced else f"leaves out its {lost}")
                + f": the session would lose task support without a word (installed: mcp "
                f"{sdk_info().mcp_version}, whose session_kwargs() sets {sorted(own)}). fix: give only "
                "your own options (they are added to the library's, and "
                f"{', '.join(COMPOSED_SESSION_OPTIONS)} are composed with its own), or pass them to "
                "session_kwargs(...) and give its whole result; bare=True for a session without "
                "the library's plumbing"
            )
        return given  # built on session_kwargs() already
    composed = {key: given.pop(key) for key in COMPOSED_SESSION_OPTIONS if key in given}
    return {**session_kwargs(dialect=dialect, **composed), **given}


def _single_setup_error(error: BaseException) -> SessionSetupError | None:
    """The one :class:`SessionSetupError` inside the transports' (nested) exception groups, if that is all."""
    if isinstance(error, SessionSetupError):
        return error
    members: object = getattr(error, "exceptions", None)
    if not isinstance(members, tuple):
        return None
    found = [
        _single_setup_error(item)
        for item in cast("tuple[object, ...]", members)
        if isinstance(item, BaseException) and not isinstance(item, anyio.get_cancelled_exc_class())
    ]
    return found[0] if len(found) == 1 else None


def _leaves(error: BaseException) -> list[BaseException]:
    members: object = getattr(error, "exceptions", None)
    if not isinstance(members, tuple):
        return [error]
    return [leaf for item in cast("tuple[BaseException, ...]", members) for leaf in _leaves(item)]


def _first_leaf(error: BaseException) -> BaseException:
    return _leaves(error)[0]


def _holds_compat_error(error: BaseException) -> bool:
    """A library refusal inside the transports' groups says what to do already: let it through."""
    return any(isinstance(leaf, CompatError) for leaf in _leaves(error))


@asynccontextmanager
async def _connected(
    streams: AbstractAsyncContextManager[tuple[Any, Any]],
    *,
    dialect: Dialect | None,
    session_options: Mapping[str, Any] | None,
    bare: bool,
    describe: Callable[[], str],
) -> AsyncGenerator[Any, None]:
    """A session on ``streams``; a setup failure comes out as the :class:`SessionSetupError` itself.

    (The transports run task groups, which wrap it in exception groups on its way out.)
    """
    # Refusals of what the installed mcp cannot do come first, before any transport starts.
    options = merged_session_options(session_options, dialect=dialect, bare=bare)
    opened = False
    try:
        async with (
            streams as pair,
            _session_on(pair, dialect=dialect, session_options=options, describe=describe) as session,
        ):
            opened = True
            yield session
    except Exception as error:
        if opened or (isinstance(error, CompatError) and not isinstance(error, SessionSetupError)):
            raise
        if isinstance(error, TypeError):
            raise  # a usage error (e.g. connect_in_memory given no server): it says what is accepted
        failure = _single_setup_error(error)
        if failure is error:
            raise
        if failure is None:
            # The transport itself broke first (a server that exits at once can close its stdin
            # before the SDK's writer is done): still a setup failure, with what the server said.
            if _holds_compat_error(error):
                raise
            failure = SessionSetupError(f"opening the session failed: {_first_leaf(error)!r}{describe()}")
        raise failure from None


@asynccontextmanager
async def connect_in_memory(
    server: Any,
    *,
    dialect: Dialect | None = None,
    session_options: Mapping[str, Any] | None = None,
    bare: bool = False,
) -> AsyncGenerator[Any, None]:
    """A negotiated ``ClientSession`` to ``server`` running in this event loop (real JSON-RPC streams).

    ``server``: a :class:`~mcp_tasks_compat.server.TaskServer`; on mcp 1.x a ``FastMCP`` or a
    low-level ``mcp.server.lowlevel.Server``; on mcp 2.x an ``MCPServer`` or a low-level ``Server``
    (with the library's tasks installed, or not); any other object is a ``TypeError`` saying so.
    ``dialect`` pins the task dialect (``None``: the newest the connection offers);
    ``session_options`` are ``ClientSession`` keywords added to ``session_kwargs(dialect=dialect)``
    (e.g. ``{"elicitation_callback": ...}``; see :func:`merged_session_options`); ``bare=True``
    uses them alone, a session without the library's task plumbing (what a plain client sees).
    """
    opening = _connected(
        get_adapter().app.in_memory_streams(getattr(server, "sdk_server", server)),
        dialect=dialect,
        session_options=session_options,
        bare=bare,
        describe=_no_detail,
    )
    async with opening as session:
        yield session


def _tail(log: TextIO) -> str:
    try:
        log.flush()
        log.seek(0)
        lines = [line.rstrip() for line in log.read().splitlines() if line.strip()]
    except (OSError, ValueError):
        return ""
    return "\n".join(lines[-20:])


@asynccontextmanager
async def connect_stdio(
    command: Sequence[str] | None = None,
    *,
    toolset_spec: str | None = None,
    dialect: Dialect | None = None,
    session_options: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    bare: bool = False,
) -> AsyncGenerator[Any, None]:
    """A negotiated ``ClientSession`` to a server subprocess over stdio.

    ``session_options`` and ``bare`` are :func:`connect_in_memory`'s.
    ``command`` defaults to :func:`server_command` with ``toolset_spec`` (this interpreter). ``env``
    is added to the SDK's minimal default environment. The server's stderr is kept and its last
    lines are added to any :class:`SessionSetupError`.
    """
    argv = list(command) if command is not None else server_command(toolset_spec)
    if not argv:
        raise ValueError("the server command is empty")
    app = get_adapter().app
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as log:

        def describe() -> str:
            tail = _tail(log)
            return f"; server {' '.join(argv)}" + (f", its stderr:\n{tail}" if tail else "")

        streams = app.stdio_streams(
            argv[0], argv[1:], errlog=log, env=env, cwd=None if cwd is None else os.fspath(cwd)
        )
        opening = _connected(
            streams, dialect=dialect, session_options=session_options, bare=bare, describe=describe
        )
        async with opening as session:
            yield session


@asynccontextmanager
async def connect_http(
    url: str,
    *,
    dialect: Dialect | None = None,
    session_options: Mapping[str, Any] | None = None,
    bare: bool = False,
) -> AsyncGenerator[Any, None]:
    """A negotiated ``ClientSession`` to a streamable HTTP server at ``url`` (``session_options``
    and ``bare`` are :func:`connect_in_memory`'s)."""

    def describe() -> str:
        return f"; server {url}"

    opening = _connected(
        get_adapter().app.http_streams(url),
        dialect=dialect,
        session_options=session_options,
        bare=bare,
        describe=describe,
    )
    async with opening as session:
        yield session


# --- server subprocesses -------------------------------------------------------------------------


def server_command(
    toolset_spec: str | None = None,
    *,
    transport: Transport = "stdio",
    host: str = "127.0.0.1",
    port: int = 0,
    python: str | os.PathLike[str] | None = None,
) -> list[str]:
    """The command line of a kit server: ``python -m mcp_tasks_compat.testing serve [SPEC] ...``.

    ``python`` is the interpreter (default: this one); another virtual environment's python runs
    the server on that environment's mcp. Over HTTP, ``port=0`` picks a free port and the server
    prints ``listening on <url>`` on stderr (:class:`HttpServerProcess` reads it).
    """
    argv = [os.fspath(python) if python is not None else sys.executable, "-m", SERVE_MODULE, "serve"]
    if toolset_spec is not None:
        argv.append(toolset_spec)
    argv += ["--transport", transport]
    if transport == "http":
        argv += ["--host", host, "--port", str(port)]
    return argv


class HttpServerProcess:
    """A server subprocess over streamable HTTP; a context manager whose value is its URL.

    ``command`` is usually ``server_command(..., transport="http")``; it must print
    ``listening on <url>`` on stderr once it accepts connections. Stopped with SIGTERM on exit.
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
            self._process.wait(timeout=30)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 10 s; idempotent."""
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
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
    """A kit server subprocess over streamable HTTP on a free port, for the block; yields its URL."""
    command = server_command(toolset_spec, transport="http", python=python)
    with HttpServerProcess(command, env=env, cwd=cwd) as url:
        yield url


# --- the serve command ---------------------------------------------------------------------------


def _quiet_sdk_logs(verbose: bool) -> None:
    if verbose:
        logging.basicConfig(level=logging.DEBUG, format="%(levelname)s %(name)s: %(message)s")
        return
    for name in ("mcp", "httpx", "httpx2", "httpcore", "uvicorn.error"):
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m mcp_tasks_compat.testing serve [MODULE:ATTRIBUTE] [--transport stdio|http] ...``."""
    parser = argparse.ArgumentParser(
        prog=f"python -m {SERVE_MODULE}", description="Serve a tool set with tasks, for tests."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve = commands.add_parser("serve", help="serve a ToolSet (default: the example tool set)")
    serve.add_argument("toolset", nargs="?", metavar="MODULE:ATTRIBUTE", help="a ToolSet (or a function)")
    serve.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=0, help="HTTP port; 0 picks a free one (default)")
    serve.add_argument("-v", "--verbose", action="store_true", help="show the SDK's logs")
    args = parser.parse_args(argv)
    _quiet_sdk_logs(args.verbose)
    toolset = EXAMPLE_TOOLSET if args.toolset is None else load_toolset(args.toolset)
    app = get_adapter().app
    server = build_task_server(toolset, host=args.host)

    def listening(url: str) -> None:
        print(f"{LISTENING_PREFIX}{url}", file=sys.stderr, flush=True)

    async def run() -> None:
        if args.transport == "stdio":
            await app.serve_stdio(server)
        else:
            await app.serve_http(server, host=args.host, port=args.port, on_listening=listening)

    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(run)
    return 0


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
