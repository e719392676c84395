"""What every section measures with: the run (:class:`Bench`), a server under test, the rotation.

Noise on a 2-core machine is handled by interleaving: every round runs each variant once, in a
rotated order, and ratios are taken between variants of the same round before the median.
"""

from __future__ import annotations

import sys
import time
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from . import clients, mechanisms, servers

__all__ = ["PEERS", "Bench", "dialects_for", "open_target", "opt_ins_for", "rotated"]

PEERS = ("fastmcp4", "fastmcp3")


@dataclass
class Bench:
    """One run in one environment (one SDK major): what was measured, and what went wrong."""

    profile_name: str  # "smoke" or "full": each section looks its own part of the profile up by it
    kinds: list[str]
    major: int = field(default_factory=servers.mcp_major)
    rows: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    only: frozenset[str] | None = None
    checkpoint: Callable[[], None] | None = None

    def log(self, message: str) -> None:
        print(f"[bench mcp{self.major}] {message}", file=sys.stderr, flush=True)

    def add(self, section: str, **row: Any) -> None:
        self.rows.append({"section": section, "major": self.major, **row})

    def wanted(self, section: str) -> bool:
        return self.only is None or section in self.only

    @property
    def ours(self) -> bool:
        return "ours" in self.kinds and clients.ours_client_available()

    def peers(self) -> list[str]:
        return [kind for kind in self.kinds if kind in PEERS]

    def task_kinds(self) -> list[str]:
        return (["ours"] if self.ours else []) + self.peers()

    async def guarded(self, what: str, body: Callable[[], Awaitable[None]], *, attempts: int = 2) -> None:
        """Run one measurement; a failure is retried once, then recorded rather than ending the run.

        A retried failure stays visible in ``notes`` (a dropped connection under load, say).
        """
        for attempt in range(1, attempts + 1):
            self.log(f"{what} ..." if attempt == 1 else f"{what} (attempt {attempt}) ...")
            started = time.perf_counter()
            rows_before = len(self.rows)
            try:
                await body()
            except Exception as exc:  # one broken measurement must not hide the others
                del self.rows[rows_before:]
                self.log(f"{what} FAILED: {_leaf_message(exc)}")
                traceback.print_exc(file=sys.stderr)
                if attempt < attempts:
                    self.notes.append(f"{what}: attempt {attempt} failed ({_leaf_message(exc)}); retried")
                    continue
                self.errors.append({"what": what, "error": _leaf_message(exc)})
            else:
                self.log(f"{what} done in {time.perf_counter() - started:.1f}s")
            break
        if self.checkpoint is not None:
            self.checkpoint()


def _leaf_message(exc: BaseException) -> str:
    """The first leaf of an exception group, which says what actually went wrong."""
    while getattr(exc, "exceptions", None):  # BaseExceptionGroup (Python 3.11+, or the backport)
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    return f"{type(exc).__name__}: {exc}"


@asynccontextmanager
async def open_target(
    kind: str,
    transport: str,
    *,
    ttl_ms: int | None = None,
    concurrency: int | None = None,
    store: str | None = None,
    off: Sequence[str] = (),
) -> AsyncIterator[Callable[..., Any]]:
    """A server of ``kind`` (ours: on the task store ``store``) over ``transport``; yields ``connect()``.

    ``off``: the mechanisms turned off (:mod:`.mechanisms`), on the server and on every client
    ``connect()`` opens with our client. In memory the internal switches are process-wide, so
    they are set for the server's life and restored after.
    """
    if off:
        mechanisms.check(off, servers.mcp_major())
    if transport == "memory":
        with mechanisms.internal_switches(off, servers.mcp_major()):
            server = servers.build(kind, ttl_ms=ttl_ms, concurrency=concurrency, store=store, off=off)
            servers.quiet_logs()

            def connect_memory(**kwargs: Any) -> Any:
                return clients.connect("memory", kind=kind, server=server, off=off, **kwargs)

            yield connect_memory
        return
    with clients.server_process(
        kind, transport, ttl_ms=ttl_ms, concurrency=concurrency, store=store, off=off
    ) as process:

        def connect_process(**kwargs: Any) -> Any:
            return clients.connect(transport, kind=kind, process=process, off=off, **kwargs)

        yield connect_process


def rotated(items: Sequence[Any], round_index: int) -> list[Any]:
    shift = round_index % len(items)
    return list(items[shift:]) + list(items[:shift])


def dialects_for(kind: str, major: int) -> list[str | None]:
    """The dialects a kind is measured in from this environment (None: as negotiated)."""
    if kind == "ours" and major == 2:
        return ["2026-07-28", "2025-11-25"]
    return [None]


def opt_ins_for(dialect: str | None, major: int) -> dict[str, Any]:
    if dialect is None or (major == 1 and dialect == "2025-11-25"):
        return {}
    return {"dialect": dialect}
