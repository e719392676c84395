"""``probe``: what a server offers (protocol, task dialects, tool task support), as this install sees it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from .._adapters import get_adapter
from .._detect import sdk_info
from ..dialects import DIALECT_2025_11_25, DIALECT_2026_07_28, Dialect
from .common import EXIT_OK
from .connect import ServerLog, Target, connect
from .failures import describe_failure, run_reporting

__all__ = ["ProbeOptions", "render_probe", "run_probe"]


@dataclass(frozen=True)
class ProbeOptions:
    target: Target
    as_json: bool
    connect_timeout: float
    verbose: bool


def _task_support(tool: Mapping[str, Any]) -> str | None:
    execution: object = tool.get("execution")
    if isinstance(execution, dict):
        support: object = cast("dict[str, Any]", execution).get("taskSupport")
        if isinstance(support, str):
            return support
    return None


async def _probe(options: ProbeOptions, log: ServerLog) -> dict[str, Any]:
    connections: list[dict[str, Any]] = []
    tools: dict[str, str | None] = {}
    identity: dict[str, Any] = {"name": None, "version": None}
    protocol_version: str | None = None

    async def look(dialect: Dialect | None) -> bool:
        nonlocal protocol_version
        async with connect(
            options.target, dialect=dialect, log=log, connect_timeout=options.connect_timeout
        ) as connected:
            negotiated = connected.negotiated
            connections.append(
                {
                    "protocol_version": connected.protocol_version,
                    "handshake": "server/discover"
                    if get_adapter().app.is_modern(connected.protocol_version)
                    else "initialize",
                    "dialect": negotiated.dialect,
                    "reason": negotiated.reason,
                }
            )
            if protocol_version is None:
                protocol_version = connected.protocol_version
                identity.update(name=connected.server_name, version=connected.server_version)
            for tool in await get_adapter().app.list_tools(connected.session):
                name = str(tool.get("name"))
                support = _task_support(tool)
                if tools.get(name) is None:
                    tools[name] = support
            return get_adapter().app.is_modern(connected.protocol_version)

    modern = await look(dialect=None)
    if modern:
        # A 2.x client can also open a handshake-era connection: does the server speak 2025-11-25 too?
        try:
            await look(dialect=DIALECT_2025_11_25)
        except Exception as error:
            code, message = describe_failure(error)
            del code
            connections.append(
                {"protocol_version": None, "handshake": "initialize", "dialect": None, "reason": message}
            )
    dialects = sorted({c["dialect"] for c in connections if c["dialect"] is not None}, reverse=True)
    if DIALECT_2025_11_25 in dialects:
        # 2025-11-25 lists every tool's task support, and a tool without one is "forbidden"; only
        # 2026-07-28 alone leaves it undeclared (the server decides per call).
        tools = {name: support or "forbidden" for name, support in tools.items()}
    checked = list(sdk_info().client_dialects)
    return {
        "target": options.target.describe(),
        "protocol_version": protocol_version,
        "server": identity,
        "dialects": dialects,
        "checked_dialects": checked,
        "connections": connections,
        "tools": [{"name": name, "task_support": support} for name, support in tools.items()],
    }


def run_probe(options: ProbeOptions) -> int:
    """``probe``: what the server offers, as seen from this install's client."""
    log = ServerLog(verbose=options.verbose)
    found, failed = run_reporting(lambda: _probe(options, log), verbose=options.verbose, log=log)
    if failed is not None:
        return failed
    assert found is not None
    print(json.dumps(found, indent=2) if options.as_json else render_probe(found))
    return EXIT_OK


def render_probe(found: Mapping[str, Any]) -> str:
    """``probe``'s table for people: the server, its task dialects, each tool's task support."""
    server = found["server"]
    rows: list[tuple[str, str]] = [
        ("target", str(found["target"])),
        ("server", f"{server['name'] or '?'} {server['version'] or ''}".strip()),
        ("protocol", str(found["protocol_version"] or "?")),
        ("task dialects", ", ".join(found["dialects"]) or "none"),
    ]
    unchecked = [d for d in (DIALECT_2025_11_25, DIALECT_2026_07_28) if d not in found["checked_dialects"]]
    if unchecked:
        rows.append(("not checked", f"{', '.join(unchecked)} (this install's mcp client cannot speak it)"))
    for connection in found["connections"]:
        if connection["dialect"] is None and connection["reason"]:
            rows.append(("note", f"{connection['handshake']}: {connection['reason']}"))
    width = max(len(key) for key, _ in rows)
    lines = [f"{key:<{width}}  {value}" for key, value in rows]
    lines.append("tools")
    name_width = max((len(tool["name"]) for tool in found["tools"]), default=0)
    for tool in found["tools"]:
        support = tool["task_support"] or "not declared (the server decides per call)"
        lines.append(f"  {tool['name']:<{name_width}}  {support}")
    return "\n".join(lines)
