"""What makes an engine: one frozen object, so every engine of a server is built the same way.

A server's policy holds one :class:`EngineSettings`; its engine is built from it, and so is a
worker's (only the store may differ: ``worker --store``). A setting added here reaches every
engine of that server, workers included, without a copy by hand.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Final

from ..core._model import DEFAULT_TTL_MS
from .limits import TaskLimits
from .polling import PollPolicy
from .stores import TaskStore

__all__ = ["DEFAULT_LEASE_S", "DEFAULT_TTL_FLOOR_MS", "EngineSettings"]

DEFAULT_TTL_FLOOR_MS: Final = DEFAULT_TTL_MS
"""Real long runs need an hour; a client asking for less gets the floor (the model's default)."""

DEFAULT_LEASE_S: Final = 30.0
"""How long a replica's claim on a run holds without renewal (renewed every third of it)."""


@dataclass(frozen=True)
class EngineSettings:
    """Everything an engine is built from (each part checks its own: the lease, the queue bound).

    ``store`` is ``None`` for a store of the engine's own in memory; ``default_ttl_ms`` ``None``
    means the floor; ``max_queued`` bounds the tasks waiting for a worker (``None``: no bound).
    """

    store: TaskStore | None = None
    ttl_floor_ms: int = DEFAULT_TTL_FLOOR_MS
    default_ttl_ms: int | None = None
    poll_policy: PollPolicy = field(default_factory=PollPolicy)
    status_interval_s: float = 0.1
    lease_s: float = DEFAULT_LEASE_S
    limits: TaskLimits = field(default_factory=TaskLimits)
    max_queued: int | None = None

    def __post_init__(self) -> None:
        if self.ttl_floor_ms < 0:
            raise ValueError("ttl_floor_ms must be >= 0")

    @property
    def granted_default_ttl_ms(self) -> int:
        """The TTL a task gets when its request names none: the default, else the floor."""
        return self.default_ttl_ms if self.default_ttl_ms is not None else self.ttl_floor_ms

    def with_store(self, store: TaskStore | None) -> EngineSettings:
        """The same settings on another store (a worker's ``--store``); ``None`` keeps this one."""
        return self if store is None else replace(self, store=store)
