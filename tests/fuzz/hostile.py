"""Hostile JSON-RPC against ``mcp-tasks-compat example-server``: raw peers (stdio, HTTP), frames, checks.

The peers are synchronous (a subprocess with blocking reads, an httpx client), so Hypothesis drives
them directly; each waits a bounded time for an answer. What a right answer is:

* every request with a usable id gets exactly one answer, a ``result`` or an ``error``;
* an error's code is one of :data:`EXPECTED_CODES` (never -32603 "internal error" for bad input)
  and its message carries no traceback and stays short;
* the session (and so the server) still answers ``ping`` afterwards.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx
from hypothesis import strategies as st

from mcp_tasks_compat.testing import HttpServerProcess

__all__ = [
    "ANSWER_BOUND_S",
    "EXPECTED_CODES",
    "EXT",
    "HttpPeer",
    "Peer",
    "Stats",
    "StdioPeer",
    "check_answer",
    "example_server_command",
    "frames",
    "http_peer",
    "stdio_peer",
]

EXT = "io.modelcontextprotocol/tasks"
D2025 = "2025-11-25"
D2026 = "2026-07-28"
ANSWER_BOUND_S = 60.0
"""A bound on waiting for a server process's answer, not its expected time (milliseconds)."""
MAX_MESSAGE = 600
"""An error message longer than this echoes too much of the request."""
SDK_TRANSPORT_MESSAGE = 2_000
"""mcp 1.x's HTTP transport answers a frame that is no JSON-RPC message with pydantic's (truncated) report."""
EXPECTED_CODES = frozenset({-32600, -32601, -32602, -32020, -32021})
"""Invalid request, method not found, invalid params, and the Tasks extension's header/capability codes."""
TRACEBACK_MARKERS = ("Traceback (most recent call last)", 'File "/', "site-packages")

Frame = dict[str, Any]


def example_server_command(*options: str) -> list[str]:
    return [sys.executable, "-m", "mcp_tasks_compat", "example-server", *options]


def meta_2026() -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": D2026,
        "io.modelcontextprotocol/clientInfo": {"name": "fuzz", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {EXT: {}}},
    }


def liveness_probe(dialect: str) -> Frame:
    """``ping`` (2025-11-25); 2026-07-28 has no ping, so ``server/discover``."""
    if dialect == D2026:
        return {
            "jsonrpc": "2.0",
            "id": "alive",
            "method": "server/discover",
            "params": {"_meta": meta_2026()},
        }
    return {"jsonrpc": "2.0", "id": "alive", "method": "ping"}


class Peer(Protocol):
    dialect: str

    def request(self, frame: Frame, *, bound: float = ANSWER_BOUND_S) -> Frame | None: ...

    def alive(self) -> bool: ...


@dataclass
class Stats:
    tried: int = 0
    unexpected: list[str] = field(default_factory=lambda: list[str]())


# --- stdio ---------------------------------------------------------------------------------------


class StdioPeer:
    """Raw JSON-RPC lines to a server subprocess; server requests are refused so nothing waits."""

    def __init__(self, process: subprocess.Popen[bytes], dialect: str) -> None:
        self.process = process
        self.dialect = dialect
        self._buffer = b""

    def write(self, text: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(text.encode() + b"\n")
        self.process.stdin.flush()

    def _line(self, deadline: float) -> bytes | None:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                return None
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return None
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def request(self, frame: Frame, *, bound: float = ANSWER_BOUND_S) -> Frame | None:
        """Send ``frame``; the answer with its id, or ``None`` when none came within ``bound``."""
        self.write(json.dumps(frame))
        deadline = time.monotonic() + bound
        while True:
            line = self._line(deadline)
            if line is None:
                return None
            answer = json.loads(line)
            if "method" in answer and "id" in answer:  # a server request: refuse it
                refusal = {"code": -32601, "message": "fuzz peer answers nothing"}
                self.write(json.dumps({"jsonrpc": "2.0", "id": answer["id"], "error": refusal}))
                continue
            if "method" in answer:
                continue  # a notification
            if answer.get("id") == frame.get("id"):
                return answer

    def alive(self) -> bool:
        if self.process.poll() is not None:
            return False
        answer = self.request(liveness_probe(self.dialect))
        return answer is not None and "result" in answer


@contextmanager
def stdio_peer(dialect: str, *options: str) -> Iterator[StdioPeer]:
    process = subprocess.Popen(
        example_server_command(*options),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    peer = StdioPeer(process, dialect)
    try:
        if dialect == D2025:
            init = {
                "protocolVersion": D2025,
                "capabilities": {},
                "clientInfo": {"name": "fuzz", "version": "0"},
            }
            answer = peer.request(
                {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}, bound=60
            )
            assert answer is not None, "no answer to initialize"
            assert "result" in answer, answer
            peer.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        else:
            assert peer.request(liveness_probe(dialect), bound=60)
        yield peer
    finally:
        if process.stdin is not None:
            process.stdin.close()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


# --- HTTP ----------------------------------------------------------------------------------------


class HttpPeer:
    """Raw JSON-RPC posts to a streamable HTTP server (one 2025-11-25 session, or stateless 2026)."""

    def __init__(self, client: httpx.Client, url: str, dialect: str, server: HttpServerProcess) -> None:
        self.client, self.url, self.dialect, self.server = client, url, dialect, server
        self.session_id: str | None = None
        # The header carries the version initialize agreed on (mcp 1.23.0 answers 2025-06-18 and
        # refuses a 2025-11-25 header on every later request).
        self.protocol_version = dialect

    def _headers(self, frame: Frame) -> dict[str, str]:
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": self.protocol_version,
        }
        method = frame.get("method")
        if self.dialect == D2026 and isinstance(method, str) and method.isascii():
            headers["mcp-method"] = method
            params = frame.get("params")
            name = params.get("name", params.get("taskId")) if isinstance(params, dict) else None
            if isinstance(name, str) and name.isascii() and name.isprintable() and len(name) < 1000:
                headers["mcp-name"] = name
        if self.session_id is not None:
            headers["mcp-session-id"] = self.session_id
        return headers

    def request(self, frame: Frame, *, bound: float = ANSWER_BOUND_S) -> Frame | None:
        try:
            response = self.client.post(self.url, json=frame, headers=self._headers(frame), timeout=bound)
        except httpx.TimeoutException:
            return None
        self.session_id = response.headers.get("mcp-session-id", self.session_id)
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            for line in response.text.split("\n"):  # not splitlines(): U+2028 may sit in the JSON
                if line.startswith("data:"):
                    answer = json.loads(line[5:].rstrip("\r"))
                    if answer.get("id") == frame.get("id"):
                        return answer
            return None
        if not response.content:
            return None
        try:
            answer = response.json()
        except ValueError:
            return {"http_status": response.status_code, "text": response.text[:200]}
        if isinstance(answer, dict) and ("result" in answer or "error" in answer):
            return answer
        return {"http_status": response.status_code, "body": answer}

    def alive(self) -> bool:
        if not self.server.running():
            return False
        answer = self.request(liveness_probe(self.dialect))
        return answer is not None and "result" in answer


@contextmanager
def http_peer(dialect: str, *options: str) -> Iterator[HttpPeer]:
    server = HttpServerProcess(example_server_command("--transport", "http", "--port", "0", *options))
    with server as url, httpx.Client() as client:
        peer = HttpPeer(client, url, dialect, server)
        if dialect == D2025:
            init = {
                "protocolVersion": D2025,
                "capabilities": {},
                "clientInfo": {"name": "fuzz", "version": "0"},
            }
            answer = peer.request(
                {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}, bound=60
            )
            assert answer is not None, "no answer to initialize"
            assert "result" in answer, answer
            peer.protocol_version = str(answer["result"].get("protocolVersion", D2025))
            peer.request({"jsonrpc": "2.0", "method": "notifications/initialized"}, bound=5)
        yield peer


# --- frames --------------------------------------------------------------------------------------

_text = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=40)
_huge = st.sampled_from(["x" * 100_000, "é" * 2_000, "\u0000" * 100, "🙂" * 500])
_ints = st.one_of(st.integers(-(2**70), 2**70), st.sampled_from([-1, 0, 2**53, 2**63, -(2**63)]))
_json = st.recursive(
    st.one_of(st.none(), st.booleans(), _ints, st.floats(allow_nan=False, allow_infinity=False), _text),
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(_text, children, max_size=4)),
    max_leaves=12,
)
_value = st.one_of(_json, _huge)

METHODS = {
    D2025: ["tasks/get", "tasks/result", "tasks/list", "tasks/cancel", "tools/call"],
    D2026: ["tasks/get", "tasks/update", "tasks/cancel", "tools/call"],
}
WRONG_DIALECT = {
    D2025: ["tasks/update", "subscriptions/listen", "server/discover", "tasks/nope"],
    D2026: ["tasks/result", "tasks/list", "tasks/nope"],
}
TOOLS = ["slow_echo", "fail", "must_task", "ask", "no_such_tool", ""]


def _task_field() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.fixed_dictionaries(
            {}, optional={"ttl": st.one_of(_ints, st.floats(allow_nan=False), _text, st.none())}
        ),
        _value,
    )


def _params(dialect: str, method: str) -> st.SearchStrategy[Any]:
    fields: dict[str, st.SearchStrategy[Any]] = {
        "taskId": st.one_of(_text, _huge, _json),
        "cursor": st.one_of(_text, _huge, _json),
        "arguments": st.one_of(
            st.fixed_dictionaries({"text": _value}, optional={"seconds": _value, "steps": _value}), _json
        ),
        "inputResponses": _json,
        "extra": _value,  # a member no method defines
    }
    if method == "tools/call":
        # always a task (a plain slow call would hold the peer): name and task are present
        required: dict[str, st.SearchStrategy[Any]] = {"name": st.one_of(st.sampled_from(TOOLS), _value)}
        if dialect == D2025:
            required["task"] = _task_field()
        body = st.fixed_dictionaries(required, optional={"arguments": fields["arguments"], "extra": _value})
    else:
        body = st.fixed_dictionaries({}, optional=fields)
    if dialect == D2026:
        body = body.map(lambda params: {**params, "_meta": meta_2026()})
    return st.one_of(body, body, body, _value)


@st.composite
def frames(draw: st.DrawFn, dialect: str) -> Frame:
    """One hostile request with a usable (int or string) id, so an answer is owed."""
    method = draw(st.one_of(st.sampled_from(METHODS[dialect]), st.sampled_from(WRONG_DIALECT[dialect])))
    frame: Frame = {
        "jsonrpc": "2.0",
        "id": draw(st.one_of(st.integers(1, 2**31), _text.filter(bool))),
        "method": method,
    }
    params = draw(st.one_of(st.none(), _params(dialect, method)))
    if params is not None:
        frame["params"] = params
    return frame


def check_answer(frame: Frame, answer: Frame | None) -> str | None:
    """``None`` when ``answer`` is a right answer to ``frame``, else what is wrong with it."""
    method = frame.get("method")
    not_a_request = not isinstance(frame.get("params", {}), dict)
    if answer is None and not_a_request:
        return None  # not a JSON-RPC request at all: both SDKs drop it unanswered on stdio (docs/errors.md)
    if answer is None:
        return f"{method}: no answer"
    if "http_status" in answer:
        status = answer["http_status"]
        return None if 400 <= status < 500 else f"{method}: HTTP {status} {answer}"
    if "result" in answer:
        return None
    error = answer.get("error")
    if not isinstance(error, dict):
        return f"{method}: neither result nor error: {str(answer)[:200]}"
    message = str(error.get("message", ""))
    if any(marker in message for marker in TRACEBACK_MARKERS):
        return f"{method}: traceback text in the message: {message[:200]}"
    if len(message) > (SDK_TRANSPORT_MESSAGE if not_a_request else MAX_MESSAGE):
        return f"{method}: a {len(message)}-character message"
    if error.get("code") not in EXPECTED_CODES:
        return f"{method}: code {error.get('code')} ({message[:160]})"
    return None
