"""The tool both sides of the workers section run: sleep, then say when the run started and ended."""

from __future__ import annotations

import json
import os
import time

import anyio

__all__ = ["sleep_job"]


async def sleep_job(text: str, seconds: float = 1.0) -> str:
    """Sleep ``seconds``; return ``text`` and the run's start and end on the system-wide
    ``time.monotonic()`` clock (CLOCK_MONOTONIC: the client subtracts its own clock from them),
    and the pid of the process that ran it (the worker)."""
    started = time.monotonic()
    if seconds > 0:
        await anyio.sleep(seconds)
    return json.dumps({"text": text, "started": started, "ended": time.monotonic(), "pid": os.getpid()})
