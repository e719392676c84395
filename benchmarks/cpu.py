"""CPU time (not wall time) spent by the bench process and by a server process, per call.

Wall time per call on a shared 2-core machine moves with whatever else runs; the CPU a call costs
each process does not (much): it only counts the time the process itself ran. So two mechanisms can
be compared below the wall-clock noise.

* The bench process (the client side): ``time.process_time_ns()`` (``CLOCK_PROCESS_CPUTIME_ID``:
  user + system time of every thread, ns resolution).
* A server process: its CPU-time clock read from here (``clock_getcpuclockid(pid)`` then
  ``clock_gettime``: the same per-process clock, ns resolution, every thread including exited ones,
  nothing asked of the server); where that is not available, ``utime + stime`` of
  ``/proc/<pid>/stat`` (clock ticks: 10 ms resolution, so only for long blocks).

A server running in the bench process (the in-memory transport) has no CPU of its own: a block then
reports the one process's CPU, client and server together (``server_ns`` is ``None``).
"""

from __future__ import annotations

import ctypes
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["CpuClock", "CpuUsed", "cpu_clock"]


def _self_ns() -> int:
    return time.process_time_ns()


def _proc_stat_reader(pid: int) -> Callable[[], int] | None:
    path = f"/proc/{pid}/stat"
    if not os.path.exists(path):
        return None
    tick_ns = 1_000_000_000 // os.sysconf("SC_CLK_TCK")

    def read() -> int:
        with open(path, encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * tick_ns  # utime, stime (fields 14, 15)

    return read


def _cpu_clock_reader(pid: int) -> Callable[[], int] | None:
    """``pid``'s per-process CPU-time clock, if this platform lets us read it (Linux does)."""
    if sys.platform != "linux":
        return None
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        clock_id = ctypes.c_int()
        if libc.clock_getcpuclockid(pid, ctypes.byref(clock_id)) != 0:
            return None
        clock = clock_id.value
        time.clock_gettime_ns(clock)  # readable from this process?
    except (OSError, AttributeError):
        return None
    return lambda: time.clock_gettime_ns(clock)


@dataclass(frozen=True)
class CpuUsed:
    """CPU spent during one block, in ns: this (the bench) process, and the server's (or None)."""

    client_ns: int
    server_ns: int | None

    def per_call_us(self, calls: int) -> tuple[float, float | None]:
        server = None if self.server_ns is None else self.server_ns / calls / 1000
        return self.client_ns / calls / 1000, server


class CpuClock:
    """Reads the CPU time of this process and (when it runs apart) of one server process."""

    def __init__(self, server_pid: int | None) -> None:
        self.server_pid = server_pid
        self.server_source: str | None = None
        self._server: Callable[[], int] | None = None
        if server_pid is not None and server_pid != os.getpid():
            self._server = _cpu_clock_reader(server_pid)
            self.server_source = "clock_getcpuclockid"
            if self._server is None:
                self._server = _proc_stat_reader(server_pid)
                self.server_source = "/proc/<pid>/stat" if self._server is not None else None

    @property
    def split(self) -> bool:
        """Whether the server's CPU is read apart from the client's."""
        return self._server is not None

    def read(self) -> tuple[int, int | None]:
        return _self_ns(), (None if self._server is None else self._server())

    def since(self, before: tuple[int, int | None]) -> CpuUsed:
        client, server = self.read()
        server_used = None if server is None or before[1] is None else server - before[1]
        return CpuUsed(client - before[0], server_used)


def cpu_clock(server_pid: int | None) -> CpuClock:
    return CpuClock(server_pid)
