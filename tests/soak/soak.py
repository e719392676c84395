"""Soak: N clients x M tasks per wave over streamable HTTP against one server process, several waves.

    python -m tests.soak.soak [--clients 10] [--tasks 100] [--waves 3]

Each wave mixes plain results, cancels, input requests (``ask``), tool failures and, on
2025-11-25, TTL expiry; every task's outcome is checked against what its kind must give (0 lost,
0 duplicated, 0 wrong), and the server's RSS is read after each wave (it must not keep growing
once the first wave has warmed it up). Prints one line per wave and exits non-zero on any
failure. Run by ``nox -s soak`` (not in the default run); docs/reliability.md has the figures.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from mcp_tasks_compat import TaskCancelledError, TaskExpiredError, TaskFailedError
from mcp_tasks_compat._adapters import get_adapter
from mcp_tasks_compat._client_api import session_kwargs
from mcp_tasks_compat._testkit.sessions import connect_http
from mcp_tasks_compat.client import call_tool, start_tool
from mcp_tasks_compat.core._model import TaskStatus
from mcp_tasks_compat.dialects import DIALECT_2025_11_25, Dialect
from mcp_tasks_compat.testing import EXAMPLE_TOOLSET, HttpServerProcess, build_task_server, dialects

__all__ = ["main"]

KINDS = ["echo"] * 6 + ["cancel", "ask", "fail", "expire"]
"""One task in ten of each special kind; ``expire`` is an echo on 2026-07-28 (the server sets TTLs)."""
CONCURRENCY_PER_CLIENT = 10
GROWTH_ALLOWED = 1.25
"""The last wave's RSS may exceed the second wave's by at most this factor (plus 8 MiB of slack)."""


def serve(port: int) -> None:
    """The soak's server: the example tools, no TTL floor (expiry within seconds), a short default TTL."""
    server = build_task_server(EXAMPLE_TOOLSET, ttl_floor_ms=0, default_ttl_ms=5_000)

    def listening(url: str) -> None:
        print(f"listening on {url}", file=sys.stderr, flush=True)

    anyio.run(
        lambda: get_adapter().app.serve_http(server, host="127.0.0.1", port=port, on_listening=listening)
    )


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


@dataclass
class Tally:
    outcomes: Counter[str] = field(default_factory=lambda: Counter[str]())
    seen: Counter[str] = field(default_factory=lambda: Counter[str]())
    problems: list[str] = field(default_factory=lambda: list[str]())

    def wrong(self, what: str) -> None:
        self.outcomes["wrong"] += 1
        if len(self.problems) < 20:
            self.problems.append(what)


def text_of(result: Any) -> str:
    return str(result.content[0].text) if result.content else ""


async def one_task(session: Any, dialect: Dialect, label: str, kind: str, tally: Tally) -> None:
    if kind == "expire" and dialect != DIALECT_2025_11_25:
        kind = "echo"
    try:
        if kind == "echo":
            result = await call_tool(
                session, "slow_echo", {"text": label, "seconds": 0.05, "steps": 2}, mode="task"
            )
            got = text_of(result)
            tally.seen[got] += 1
            if got != label:
                tally.wrong(f"{label}: echoed {got!r}")
                return
        elif kind == "cancel":
            run = await start_tool(session, "slow_echo", {"text": label, "seconds": 20.0, "steps": 40})
            final = await run.cancel(wait=10.0)
            if final is None or final.status is not TaskStatus.CANCELLED:
                tally.wrong(f"{label}: cancel ended {final}")
                return
        elif kind == "ask":
            result = await call_tool(session, "ask", {"question": label}, mode="task")
            got = text_of(result)
            tally.seen[got] += 1
            if got != f"answer to {label}":
                tally.wrong(f"{label}: answered {got!r}")
                return
        elif kind == "fail":
            try:
                result = await call_tool(session, "fail", {"message": label}, mode="task")
            except TaskFailedError as error:
                if label not in str(error):
                    tally.wrong(f"{label}: failed with {error}")
                    return
            else:
                # mcp 2.x MCPServer hides the exception's text ("Error executing tool fail")
                if getattr(result, "isError", getattr(result, "is_error", None)) is not True:
                    tally.wrong(f"{label}: fail gave {text_of(result)!r}")
                    return
        else:  # expire: the work outlives a 300 ms TTL
            try:
                await call_tool(session, "slow_echo", {"text": label, "seconds": 3.0}, mode="task", ttl=0.3)
            except (TaskExpiredError, TaskFailedError):
                pass
            else:
                tally.wrong(f"{label}: outlived its TTL and still answered")
                return
    except TaskCancelledError as error:
        tally.wrong(f"{label}: cancelled ({error})")
        return
    except Exception as error:
        tally.outcomes["lost"] += 1
        if len(tally.problems) < 20:
            tally.problems.append(f"{label} ({kind}): {type(error).__name__}: {error}"[:300])
        return
    tally.outcomes["ok"] += 1


async def answer(message: str, schema: Mapping[str, Any]) -> Mapping[str, Any]:
    del schema
    return {"answer": f"answer to {message}"}


async def one_client(url: str, dialect: Dialect, wave: int, client: int, tasks: int, tally: Tally) -> None:
    options = session_kwargs(dialect=dialect)
    options["elicitation_callback"] = get_adapter().app.elicitation_callback(answer)
    limiter = anyio.Semaphore(CONCURRENCY_PER_CLIENT)

    async def limited(index: int) -> None:
        async with limiter:
            label = f"w{wave}-c{client}-t{index}"
            await one_task(session, dialect, label, KINDS[index % len(KINDS)], tally)

    async with (
        connect_http(url, dialect=dialect, session_options=options) as session,
        anyio.create_task_group() as group,
    ):
        for index in range(tasks):
            group.start_soon(limited, index)


async def soak(clients: int, tasks: int, waves: int) -> int:
    spoken = dialects()
    command = [sys.executable, "-m", "tests.soak.soak", "serve"]
    server = HttpServerProcess(command)
    failures = 0
    with server as url:
        assert server.pid is not None
        rss: list[int] = []
        print(
            f"soak: {clients} clients x {tasks} tasks x {waves} waves over HTTP, dialects {', '.join(spoken)}"
        )
        for wave in range(1, waves + 1):
            tally = Tally()
            started = time.monotonic()
            async with anyio.create_task_group() as group:
                for client in range(clients):
                    group.start_soon(
                        one_client, url, spoken[client % len(spoken)], wave, client, tasks, tally
                    )
            elapsed = time.monotonic() - started
            duplicated = sum(count - 1 for count in tally.seen.values() if count > 1)
            rss.append(rss_kib(server.pid))
            done = sum(tally.outcomes.values())
            counts = tally.outcomes
            print(
                f"wave {wave}: {done} tasks in {elapsed:.1f} s ({done / elapsed:.0f}/s), ok {counts['ok']}, "
                f"lost {counts['lost']}, duplicated {duplicated}, wrong {counts['wrong']}, "
                f"server RSS {rss[-1] / 1024:.1f} MiB"
            )
            for problem in tally.problems:
                print(f"  {problem}")
            if tally.outcomes["lost"] or tally.outcomes["wrong"] or duplicated or done != clients * tasks:
                failures += 1
        if len(rss) >= 3 and rss[-1] > rss[1] * GROWTH_ALLOWED + 8 * 1024:
            print(f"server RSS kept growing: {[round(value / 1024, 1) for value in rss]} MiB")
            failures += 1
    print("soak: ok" if not failures else f"soak: {failures} failure(s)")
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.soak.soak")
    parser.add_argument("mode", nargs="?", choices=("run", "serve"), default="run")
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--waves", type=int, default=3)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    if args.mode == "serve":
        serve(args.port)
        return 0
    return anyio.run(soak, args.clients, args.tasks, args.waves)


if __name__ == "__main__":
    sys.exit(main())
