"""The switches of issue 13's mechanisms (measured each off and on by ``sections/mechanisms.py``).

Each mechanism is one entry of :data:`MECHANISMS`: the ``ServerTasks`` keywords and the
``session_kwargs`` keywords that turn it off (or, for the run's detachment, an internal switch the
bench flips in the server process). A configuration is a set of mechanisms turned off; the
section measures "all on" and each mechanism off alone, on the same server, client and transport,
so each one's effect shows next to the others.

A keyword this checkout does not have is refused loudly (:class:`MechanismMissing`, recorded as
a bench error naming the keyword), never skipped: a run that cannot switch a mechanism off would
otherwise report its effect as zero.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MECHANISMS",
    "Mechanism",
    "MechanismMissing",
    "applicable",
    "apply_internal",
    "client_kwargs",
    "configurations",
    "server_kwargs",
]


class MechanismMissing(RuntimeError):
    """This checkout cannot switch a mechanism off: the keyword it needs does not exist."""


def _proportional_policy() -> dict[str, Any]:
    from mcp_tasks_compat.server import PollPolicy

    proportional = getattr(PollPolicy, "proportional", None)
    if proportional is None:
        raise MechanismMissing(
            "mechanism 'hints' needs PollPolicy.proportional() (the old schedule, to turn the adaptive "
            "hints off), which this mcp-tasks-compat does not have"
        )
    return {"poll_policy": proportional()}


@dataclass(frozen=True)
class Mechanism:
    """One mechanism of issue 13 and how the bench turns it off."""

    name: str
    what: str
    majors: tuple[int, ...]  # the SDK majors (dialects) it exists on
    server_off: Callable[[], dict[str, Any]] | None = None  # ServerTasks keywords
    client_off: Mapping[str, Any] | None = None  # session_kwargs keywords
    internal: str | None = None  # a private switch (attribute path) set to False in the server process
    measured_by: str = "calls"  # "calls" (per-call cost, extra time) or "memory" (held tasks)


MECHANISMS: tuple[Mechanism, ...] = (
    Mechanism(
        "grace",
        "inline grace: a quick task-optional call answered plainly (2026-07-28)",
        majors=(2,),
        server_off=lambda: {"inline_grace_s": 0},
    ),
    Mechanism(
        "hints",
        "adaptive poll hints: short while a task is young",
        majors=(1, 2),
        server_off=_proportional_policy,
    ),
    Mechanism(
        "push",
        "push: notifications/tasks on subscriptions/listen (2026-07-28)",
        majors=(2,),
        server_off=lambda: {"push": False},
        client_off={"push": False},
    ),
    Mechanism(
        "detach",
        "the run detached from its request (memory per held task)",
        majors=(1, 2),
        internal="detach_runs",
        measured_by="memory",
    ),
)
BY_NAME: dict[str, Mechanism] = {mechanism.name: mechanism for mechanism in MECHANISMS}


def applicable(major: int) -> list[Mechanism]:
    return [mechanism for mechanism in MECHANISMS if major in mechanism.majors]


def configurations(major: int, *, measured_by: str = "calls") -> list[tuple[str, ...]]:
    """``()`` (all on), then each mechanism of this major measured that way off alone."""
    return [(), *((m.name,) for m in applicable(major) if m.measured_by == measured_by)]


def label(off: Sequence[str]) -> str:
    return "all on" if not off else " + ".join(off) + " off"


def _mechanisms(off: Iterable[str]) -> list[Mechanism]:
    unknown = [name for name in off if name not in BY_NAME]
    if unknown:
        raise ValueError(f"unknown mechanism(s) {unknown}; expected some of {sorted(BY_NAME)}")
    return [BY_NAME[name] for name in off]


def _require_keywords(
    function: Callable[..., Any], keywords: Iterable[str], mechanism: str, where: str
) -> None:
    parameters = inspect.signature(function).parameters
    if any(parameter.kind is inspect.Parameter.VAR_KEYWORD for parameter in parameters.values()):
        return
    missing = [keyword for keyword in keywords if keyword not in parameters]
    if missing:
        raise MechanismMissing(
            f"mechanism {mechanism!r} needs {where}({', '.join(f'{k}=...' for k in missing)}), which this "
            "mcp-tasks-compat does not have: the bench cannot turn it off, so it refuses to measure it"
        )


def server_kwargs(off: Iterable[str]) -> dict[str, Any]:
    """The ``ServerTasks`` keywords that turn the ``off`` mechanisms off (checked to exist)."""
    from mcp_tasks_compat.server import ServerTasks

    kwargs: dict[str, Any] = {}
    for mechanism in _mechanisms(off):
        if mechanism.server_off is None:
            continue
        wanted = mechanism.server_off()
        _require_keywords(ServerTasks.__init__, wanted, mechanism.name, "ServerTasks")
        kwargs.update(wanted)
    return kwargs


def client_kwargs(off: Iterable[str]) -> dict[str, Any]:
    """The ``session_kwargs`` keywords that turn the ``off`` mechanisms off (checked to exist)."""
    from mcp_tasks_compat._client_api import session_kwargs

    kwargs: dict[str, Any] = {}
    for mechanism in _mechanisms(off):
        if mechanism.client_off is None:
            continue
        _require_keywords(session_kwargs, mechanism.client_off, mechanism.name, "session_kwargs")
        kwargs.update(mechanism.client_off)
    return kwargs


def _internal_owner(major: int) -> Any:
    if major == 1:
        from mcp_tasks_compat._adapters.v1.task_handlers import TaskHandlers

        return TaskHandlers
    from mcp_tasks_compat._adapters.v2.runtime import TasksRuntime

    return TasksRuntime


def apply_internal(off: Iterable[str], major: int) -> None:
    """Set the private switches of the ``off`` mechanisms (in this process: the server's)."""
    for mechanism in _mechanisms(off):
        if mechanism.internal is None:
            continue
        owner = _internal_owner(major)
        if not isinstance(getattr(owner, mechanism.internal, None), bool):
            raise MechanismMissing(
                f"mechanism {mechanism.name!r} needs the internal switch "
                f"{owner.__name__}.{mechanism.internal}, "
                "which this mcp-tasks-compat does not have"
            )
        setattr(owner, mechanism.internal, False)


def check(off: Iterable[str], major: int) -> None:
    """Refuse (before any server starts) a configuration this checkout cannot build."""
    names = list(off)
    server_kwargs(names)
    client_kwargs(names)
    for mechanism in _mechanisms(names):
        if mechanism.internal is not None and not isinstance(
            getattr(_internal_owner(major), mechanism.internal, None), bool
        ):
            raise MechanismMissing(
                f"mechanism {mechanism.name!r}: internal switch {mechanism.internal} missing"
            )


# --- requests per task ------------------------------------------------------------------------------


class RequestCounter:
    """Counts the JSON-RPC requests a client session writes, by method (wraps its write stream)."""

    def __init__(self) -> None:
        self.by_method: dict[str, int] = {}

    def total(self, methods: Iterable[str] | None = None) -> int:
        if methods is None:
            return sum(self.by_method.values())
        return sum(self.by_method.get(method, 0) for method in methods)

    def seen(self, message: Any) -> None:
        inner = getattr(message, "message", message)
        root = getattr(inner, "root", inner)
        method = getattr(root, "method", None)
        if isinstance(method, str) and getattr(root, "id", None) is not None:
            self.by_method[method] = self.by_method.get(method, 0) + 1


class CountingSendStream:
    """A client write stream that counts what passes (everything else is the wrapped stream's)."""

    def __init__(self, stream: Any, counter: RequestCounter) -> None:
        self._stream = stream
        self._counter = counter

    async def send(self, message: Any) -> None:
        self._counter.seen(message)
        await self._stream.send(message)

    def send_nowait(self, message: Any) -> None:
        self._counter.seen(message)
        self._stream.send_nowait(message)

    async def __aenter__(self) -> CountingSendStream:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._stream.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextmanager
def internal_switches(off: Iterable[str], major: int) -> Iterator[None]:
    """The internal switches of ``off`` set for the block (an in-process server), then restored."""
    owners = [(mechanism, _internal_owner(major)) for mechanism in _mechanisms(off) if mechanism.internal]
    saved = [
        (owner, mechanism.internal, getattr(owner, mechanism.internal or "")) for mechanism, owner in owners
    ]
    apply_internal(off, major)
    try:
        yield
    finally:
        for owner, name, value in saved:
            setattr(owner, name or "", value)
