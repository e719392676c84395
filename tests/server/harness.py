"""The server tests' harness, the same on both mcp majors; it imports no ``mcp``.

* :class:`RawPeer` speaks raw JSON-RPC over in-memory message streams, for wire checks a SDK
  client would reject or never send; each major's ``_sdk`` module opens one with its own framing.
* :class:`StdioPeer` speaks raw JSON-RPC lines to a server subprocess, :class:`Http2025Client`
  speaks the 2025-11-25 dialect over streamable HTTP with raw frames (as an mcp 1.x client does).
* :class:`Wire` records tapped messages; :class:`Gate` drives tool bodies by events (no sleeps).
* :func:`serve_asgi` runs an HTTP app on a socket that listens before the server starts.
* :data:`HOLD_TOOLSET` is served by the testing kit (``python -m mcp_tasks_compat.testing serve``,
  :func:`hold_server_command`) for the stdio tests and the cross-major interop script.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream

from mcp_tasks_compat._testkit.processes import child_environment
from mcp_tasks_compat.server import report_status
from mcp_tasks_compat.testing import ToolSet, server_command

__all__ = [
    "DIALECT_2025",
    "DIALECT_2026",
    "EXT",
    "HOLD_TOOLSET",
    "HOLD_TOOLSET_SPEC",
    "ISO_Z",
    "RELATED",
    "Gate",
    "Http2025Client",
    "RawPeer",
    "ServerRequestAnswer",
    "StdioPeer",
    "Wire",
    "exception_leaves",
    "hold_server_command",
    "hold_server_environment",
    "listening_socket",
    "serve_asgi",
    "stdio_peer",
]

EXT = "io.modelcontextprotocol/tasks"
DIALECT_2025 = "2025-11-25"
DIALECT_2026 = "2026-07-28"
RELATED = "io.modelcontextprotocol/related-task"
ISO_Z = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$"
BOUND_S = 5.0
"""How long a raw peer waits for an answer or a notification."""
PROCESS_BOUND_S = 60.0
"""A bound on what waits for a server subprocess (its first answer comes after it imported ``mcp``,
its exit after its client left): a safety net, not the expected time, on a possibly busy machine."""

Frame = dict[str, Any]
ServerRequestAnswer = Callable[[str, Frame], Mapping[str, Any]]
"""``answer(method, params)`` -> the ``result`` or ``error`` part of the reply to a server request."""


# --- events and records ----------------------------------------------------------------------------


class Gate:
    """An event-driven tool body: it signals when it started and waits until released."""

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.release = anyio.Event()
        self.finished = anyio.Event()
        self.cancelled = anyio.Event()


class Wire:
    """Every message seen by a tap, as wire JSON, and a way to wait for one."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, Frame]] = []
        self._changed = anyio.Event()

    def record(self, direction: str, message: Frame) -> None:
        self.messages.append((direction, message))
        self._changed.set()
        self._changed = anyio.Event()

    def sent(self, method: str) -> list[Frame]:
        return [m for d, m in self.messages if d == "C->S" and m.get("method") == method]

    def received(self, method: str) -> list[Frame]:
        return [m for d, m in self.messages if d == "S->C" and m.get("method") == method]

    def response_to(self, request_id: Any) -> Frame:
        for direction, message in self.messages:
            if direction == "S->C" and message.get("id") == request_id and "method" not in message:
                return message
        raise LookupError(request_id)

    async def wait_for(self, predicate: Callable[[str, Frame], bool], count: int = 1) -> None:
        while sum(1 for d, m in self.messages if predicate(d, m)) < count:
            await self._changed.wait()


def exception_leaves(error: BaseException) -> list[BaseException]:
    """The non-group exceptions inside ``error``."""
    inner: object = getattr(error, "exceptions", None)  # an exception group (Python 3.10: the backport)
    if isinstance(inner, tuple):
        return [leaf for item in inner if isinstance(item, BaseException) for leaf in exception_leaves(item)]
    return [error]


# --- raw JSON-RPC peers ----------------------------------------------------------------------------


def _request_frame(request_id: int, method: str, params: Mapping[str, Any] | None) -> Frame:
    frame: Frame = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        frame["params"] = dict(params)
    return frame


def _initialize_params(version: str, capabilities: Mapping[str, Any], client_name: str) -> Frame:
    return {
        "protocolVersion": version,
        "capabilities": dict(capabilities),
        "clientInfo": {"name": client_name, "version": "0"},
    }


@dataclass
class RawPeer:
    """Raw JSON-RPC over a major's in-memory message streams: frames as stdio would carry them.

    ``encode`` turns a frame into what ``write`` takes, ``decode`` an item of ``read`` into a
    frame (``None``: not a message). Requests from the server are kept in ``server_requests``
    and, when ``answer`` is given, answered with it. Run :meth:`pump` in a task group.
    """

    read: Any
    write: Any
    encode: Callable[[Frame], Any]
    decode: Callable[[Any], Frame | None]
    answer: ServerRequestAnswer | None = None
    notifications: list[Frame] = field(default_factory=lambda: list[Frame]())
    server_requests: list[Frame] = field(default_factory=lambda: list[Frame]())
    frames: list[Frame] = field(default_factory=lambda: list[Frame]())
    _next_id: int = 0
    _pending: dict[int, tuple[anyio.Event, list[Frame]]] = field(
        default_factory=lambda: dict[int, tuple[anyio.Event, list[Frame]]]()
    )
    _notified: anyio.Event = field(default_factory=anyio.Event)

    async def pump(self) -> None:
        async for item in self.read:
            frame = self.decode(item)
            if frame is None:
                continue
            self.frames.append(frame)
            frame_id = frame.get("id")
            if "method" in frame and frame_id is not None:  # a request from the server
                self.server_requests.append(frame)
                if self.answer is not None:
                    reply = self.answer(frame["method"], frame.get("params", {}))
                    await self.send({"jsonrpc": "2.0", "id": frame_id, **reply})
            elif "method" in frame:
                self.notifications.append(frame)
                event, self._notified = self._notified, anyio.Event()
                event.set()
            elif isinstance(frame_id, int) and frame_id in self._pending:
                event, slot = self._pending.pop(frame_id)
                slot.append(frame)
                event.set()

    async def send(self, frame: Mapping[str, Any]) -> None:
        await self.write.send(self.encode(dict(frame)))

    async def request(self, method: str, params: Mapping[str, Any] | None = None) -> Frame:
        """Send one request (``params=None``: no ``params`` member) and return the whole answer."""
        self._next_id += 1
        request_id = self._next_id
        event, slot = anyio.Event(), list[Frame]()
        self._pending[request_id] = (event, slot)
        await self.send(_request_frame(request_id, method, params))
        with anyio.fail_after(BOUND_S):
            await event.wait()
        return slot[0]

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        frame: Frame = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            frame["params"] = dict(params)
        await self.send(frame)

    async def wait_notification(self, predicate: Callable[[Frame], bool]) -> Frame:
        with anyio.fail_after(BOUND_S):
            while True:
                for frame in self.notifications:
                    if predicate(frame):
                        return frame
                await self._notified.wait()

    async def initialize(
        self,
        version: str = DIALECT_2025,
        *,
        capabilities: Mapping[str, Any] | None = None,
        client_name: str = "raw-2025-client",
    ) -> Frame:
        """The handshake (``initialize`` + ``notifications/initialized``); returns the answer."""
        params = _initialize_params(version, capabilities or {}, client_name)
        response = await self.request("initialize", params)
        await self.notify("notifications/initialized")
        return response


class StdioPeer:
    """Raw JSON-RPC lines to a server subprocess's stdin, answers read from its stdout."""

    def __init__(self, process: anyio.abc.Process) -> None:
        assert process.stdin is not None
        assert process.stdout is not None
        self._stdin = process.stdin
        self._stdout = BufferedByteReceiveStream(process.stdout)
        self.notifications: list[Frame] = []
        self._next_id = 0

    async def send(self, frame: Frame) -> None:
        await self._stdin.send((json.dumps(frame) + "\n").encode())

    async def request(self, method: str, params: Frame | None = None) -> Frame:
        self._next_id += 1
        await self.send(_request_frame(self._next_id, method, params))
        with anyio.fail_after(PROCESS_BOUND_S):  # the first answer waits for the subprocess to import mcp
            while True:
                line = await self._stdout.receive_until(b"\n", 1 << 20)
                answer = json.loads(line)
                if answer.get("id") == self._next_id:
                    return answer
                self.notifications.append(answer)


@asynccontextmanager
async def stdio_peer(
    command: Sequence[str], env: Mapping[str, str] | None = None
) -> AsyncGenerator[StdioPeer, None]:
    """A :class:`StdioPeer` on ``command``; on exit stdin is closed and the process must exit 0."""
    process = await anyio.open_process(list(command), stderr=None, env=None if env is None else dict(env))
    try:
        yield StdioPeer(process)
    finally:
        assert process.stdin is not None
        await process.stdin.aclose()  # EOF: the server ends its session and exits
        with anyio.fail_after(PROCESS_BOUND_S):
            returncode = await process.wait()
        assert returncode == 0


class Http2025Client:
    """A 2025-11-25 client over streamable HTTP, as mcp 1.x speaks it (raw frames, one session)."""

    def __init__(self, http: Any, url: str) -> None:
        self._http, self._url = http, url
        self._session_id: str | None = None
        self._next_id = 0

    async def _post(self, body: Frame) -> Any:
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": DIALECT_2025,
        }
        if self._session_id is not None:
            headers["mcp-session-id"] = self._session_id
        return await self._http.post(self._url, json=body, headers=headers)

    async def request(self, method: str, params: Frame | None = None) -> Frame:
        self._next_id += 1
        response = await self._post(_request_frame(self._next_id, method, params))
        self._session_id = response.headers.get("mcp-session-id", self._session_id)
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            frames = [json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")]
            return next(frame for frame in frames if frame.get("id") == self._next_id)
        return response.json()

    async def initialize(self) -> Frame:
        init = await self.request("initialize", _initialize_params(DIALECT_2025, {}, "mcp"))
        await self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return init


# --- servers ---------------------------------------------------------------------------------------


def listening_socket() -> socket.socket:
    """A TCP socket on 127.0.0.1 that already listens: clients can connect before the server runs."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    return sock


@asynccontextmanager
async def serve_asgi(
    app: Any, *, sock: socket.socket | None = None, lifespan: str = "auto"
) -> AsyncGenerator[str, None]:
    """Serve the ASGI ``app`` with uvicorn on a listening socket (no start-up race); yields ``.../mcp``.

    ``sock`` is one from :func:`listening_socket` when the app needs its URL before it is built.
    """
    import uvicorn  # a test dependency; imported here so a kit server subprocess never needs it

    sock = listening_socket() if sock is None else sock
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan=lifespan)
    server = uvicorn.Server(config)
    async with anyio.create_task_group() as group:
        group.start_soon(server.serve, [sock])
        try:
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            server.should_exit = True
    sock.close()


_gates: dict[str, anyio.Event] = {}


async def hold(text: str, gate: str = "main") -> str:
    """Wait until ``gate`` is released, then echo."""
    await report_status("holding")
    await _gates.setdefault(gate, anyio.Event()).wait()
    return text


async def release(gate: str = "main") -> str:
    """Let every call held on ``gate`` finish."""
    _gates.setdefault(gate, anyio.Event()).set()
    return "released"


async def must(text: str) -> str:
    """Task-required echo."""
    return text


HOLD_TOOLSET = ToolSet(
    tools={"hold": hold, "release": release, "must": must},
    support={"hold": "optional", "must": "required"},
    name="stdio-tasks",
    version="1.0",
)
"""Tools a subprocess server holds until told: ``hold`` waits until ``release`` opens its gate, so
a test drives task timing over stdio by events, not sleeps; ``must`` is task-required."""

HOLD_TOOLSET_SPEC = f"{__name__}:HOLD_TOOLSET"


def hold_server_command(python: str | None = None) -> list[str]:
    """The kit's serve command for :data:`HOLD_TOOLSET` over stdio (``python``: another interpreter)."""
    return server_command(HOLD_TOOLSET_SPEC, python=python)


def hold_server_environment() -> dict[str, str]:
    """This environment plus a ``PYTHONPATH`` on which the server subprocess finds this module."""
    return {**os.environ, **child_environment()}
