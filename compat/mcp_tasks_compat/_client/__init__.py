"""The client's task logic, written once for both SDK majors and both dialects.

Rules of this layer:

* It is SDK-free: nothing here imports ``mcp``, nor the public ``client`` module above it.
* The adapters' client facets (``_adapters/v1/client.py``, ``_adapters/v2/client.py``) implement its protocols
  (:mod:`.protocols`: a ``ClientConnection`` per session, of one class per negotiated dialect
  plus a plain one; a wire per dialect, ``TaskWire2025`` / ``TaskWire2026``; errors as
  ``RemoteError``); everything that decides *what* to send and *what it means* lives here.
* A connection is negotiated once per session (:mod:`.connections`: the adapter reports its
  handshake, :func:`.connections.decide` names the dialect or why none, and one cache keeps the
  connection per session for both majors).
* A public call's options (TTL, timeouts, cancel grace, the task-at-once hint) are normalised
  once, into one :class:`.call_options.CallOptions` every entry point builds and hands down.
* Whether a call runs as a task is decided before anything is sent (:mod:`.plan`).
* The follower is picked once per dialect, from the wire's dialect (:func:`.following.follower_for`):
  :mod:`.follow_2025` and :mod:`.follow_2026` share the poll loop of :mod:`.poller`, and neither
  asks which dialect it is on.
* Every way a task can end maps to one of the ``Task*Error`` family (:mod:`.outcomes`).
* A session the caller opens through the library holds its transport in a task of its own, so a
  dead server ends the call in flight with ``ServerConnectionLostError`` (:mod:`.openers`).
"""

from __future__ import annotations

from .call_options import DEFAULT_TTL_SECONDS, CallOptions, Duration, positive_seconds, seconds
from .connections import ConnectionCache, Handshake, NegotiatedConnection, PerSession, decide, negotiate
from .entry_points import call_tool, follow, resume, start_tool
from .openers import SessionPlumbing, held_transport, open_negotiated
from .plan import DeclaredSupport, declared_support
from .poller import StatusListeners, clamp_poll_seconds
from .progress import statuses_as_progress
from .protocols import (
    CANCEL_GRACE_SECONDS,
    DEFAULT_POLL_SECONDS,
    MAX_POLL_SECONDS,
    MIN_POLL_SECONDS,
    AnyTaskWire,
    ClientConnection,
    Mode,
    Negotiated,
    OnProgress,
    OnStatus,
    ProgressSink,
    RemoteError,
    StatusListener,
    TaskPush,
    TaskWire,
    TaskWire2025,
    TaskWire2026,
    ToolCall,
)
from .push import PushLink
from .rounds import MAX_INPUT_ROUNDS, InputReply, InputRound, answer_rounds
from .session_calls import CallDefaults, SessionCall, call_with_defaults
from .task_run import TaskRun

__all__ = [
    "CANCEL_GRACE_SECONDS",
    "DEFAULT_POLL_SECONDS",
    "DEFAULT_TTL_SECONDS",
    "MAX_INPUT_ROUNDS",
    "MAX_POLL_SECONDS",
    "MIN_POLL_SECONDS",
    "AnyTaskWire",
    "CallDefaults",
    "CallOptions",
    "ClientConnection",
    "ConnectionCache",
    "DeclaredSupport",
    "Duration",
    "Handshake",
    "InputReply",
    "InputRound",
    "Mode",
    "Negotiated",
    "NegotiatedConnection",
    "OnProgress",
    "OnStatus",
    "PerSession",
    "ProgressSink",
    "PushLink",
    "RemoteError",
    "SessionCall",
    "SessionPlumbing",
    "StatusListener",
    "StatusListeners",
    "TaskPush",
    "TaskRun",
    "TaskWire",
    "TaskWire2025",
    "TaskWire2026",
    "ToolCall",
    "answer_rounds",
    "call_tool",
    "call_with_defaults",
    "clamp_poll_seconds",
    "decide",
    "declared_support",
    "follow",
    "held_transport",
    "negotiate",
    "open_negotiated",
    "positive_seconds",
    "resume",
    "seconds",
    "start_tool",
    "statuses_as_progress",
]
