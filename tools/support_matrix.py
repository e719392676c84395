"""Build ``docs/support-matrix.md`` from the code's own tables, so the page cannot drift from the code.

Run ``python -m tools.support_matrix`` from the repository root (writes the page) or ``... --check``
(fails when stale); tests/test_docs.py fails when the committed page is stale. A repository tool,
not part of the wheel.
Everything here is computed: the dialects and opt-ins per major come from :func:`_detect.evaluate`
fed with each major's seams, the lifecycle from :data:`core._lifecycle.TRANSITIONS`, the wire
examples from the codecs. The page does not depend on which ``mcp`` is installed. Imports no ``mcp``.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Final

from packaging.specifiers import SpecifierSet

from mcp_tasks_compat._detect import FEATURES, OPT_INS, SUPPORTED_SPEC, SdkInfo, evaluate
from mcp_tasks_compat.core import _codec_2025 as codec_2025
from mcp_tasks_compat.core import _codec_2026 as codec_2026
from mcp_tasks_compat.core._lifecycle import TRANSITIONS, TaskEvent, next_status
from mcp_tasks_compat.core._model import JsonRpcError, Task, TaskStatus
from mcp_tasks_compat.dialects import ALL_DIALECTS
from mcp_tasks_compat.errors import TaskStateError

__all__ = ["DEFAULT_OUTPUT", "REGENERATE", "main", "render"]

DEFAULT_OUTPUT: Final = Path("docs") / "support-matrix.md"
NOXFILE: Final = Path(__file__).resolve().parents[1] / "noxfile.py"
REGENERATE: Final = "python -m tools.support_matrix"
MAJORS: Final = (1, 2)


def _floor(major: int) -> str:
    """The first supported release of ``major``: the range's lower bound, or ``<major>.0.0``."""
    for spec in SpecifierSet(SUPPORTED_SPEC):
        if spec.operator == ">=" and spec.version.split(".")[0] == str(major):
            return spec.version
    return f"{major}.0.0"


def _features_of(major: int, *, private: bool = True) -> frozenset[str]:
    return frozenset(f.name for f in FEATURES if f.major == major and (private or not f.private))


def _info(major: int, *, private: bool = True) -> SdkInfo:
    return evaluate(_floor(major), _features_of(major, private=private))


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _code(text: str) -> str:
    return f"`{text}`"


def _json_block(value: Any) -> list[str]:
    return ["```json", json.dumps(value, indent=2), "```"]


def _noxfile_constant(name: str) -> Any:
    """A literal of ``noxfile.py`` (read, not imported: nox need not be installed here)."""
    tree = ast.parse(NOXFILE.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise LookupError(f"noxfile.py has no {name}")


def _tested_section() -> list[str]:
    mcp_versions: list[str] = _noxfile_constant("MCP_VERSIONS")
    default_python: str = _noxfile_constant("DEFAULT_PYTHON")
    axis: dict[str, str] = _noxfile_constant("PYTHON_AXIS")
    on_axis = set(axis.values())
    others = [v for v in mcp_versions if v not in on_axis]
    rows = [[f"Python {default_python}", ", ".join(f"mcp {v}" for v in others), "`tests(mcp=...)`"]]
    rows += [[f"Python {python}", f"mcp {mcp}", f"`tests(mcp='{mcp}')`"] for python, mcp in axis.items()]
    lines = [
        "## Tested versions",
        "",
        "What the default `nox` run tests (from `noxfile.py`); pyproject's classifiers name the same",
        "Python versions. When a machine lacks the Python a row names, that SDK version runs on",
        f"Python {default_python} and the session warns that the leg was not run.",
        "",
    ]
    return lines + _table(["interpreter", "mcp releases", "nox session"], rows)


def _sdk_section() -> list[str]:
    infos = {major: _info(major) for major in MAJORS}
    bare = _info(2, private=False)
    lines = [
        "## What each SDK major can do",
        "",
        f"Supported: `mcp{SUPPORTED_SPEC}` (pre-releases of a supported major included). Columns are",
        "the first release of each major; later releases of a major with the same seams behave the same.",
        "",
    ]
    header = ["", *(f"mcp {infos[m].mcp_version} ({m}.x)" for m in MAJORS), "2.x without its private seams"]
    rows: list[list[str]] = []
    for dialect in ALL_DIALECTS:
        for side in ("client", "server"):
            row = [f"{_code(dialect)} as {side}"]
            for info in [*(infos[m] for m in MAJORS), bare]:
                dialects = info.client_dialects if side == "client" else info.server_dialects
                row.append(_yes(dialect in dialects))
            rows.append(row)
    lines += _table(header, rows)
    lines += [
        "",
        "The last column is what a future 2.x would give if it removed the private seams the",
        "2025-11-25 dialect relies on there: the library would refuse `dialect='2025-11-25'` loudly",
        "instead of guessing.",
    ]
    return lines


def _opt_in_section() -> list[str]:
    infos = {major: _info(major) for major in MAJORS}
    rows = [
        [
            _code(option.name),
            option.side,
            *(_yes(option.name in infos[m].opt_ins) for m in MAJORS),
            ", ".join(_code(need) for need in option.needs),
            option.supported_by,
            _code(option.fix),
        ]
        for option in OPT_INS
    ]
    return [
        "## Opt-ins",
        "",
        "Asking for an opt-in the installed SDK cannot honour raises `UnsupportedOptInError` at",
        "construction, before anything is sent, listing every refused opt-in at once",
        "(see [errors](errors.md#unsupported-opt-in)).",
        "",
        *_table(
            ["opt-in", "side", *(f"mcp {m}.x" for m in MAJORS), "needs seams", "supported by", "fix"], rows
        ),
    ]


def _seam_section() -> list[str]:
    rows = [
        [
            _code(feature.name),
            f"{feature.major}.x",
            _code(feature.module),
            _code(feature.attribute),
            "private" if feature.private else "public",
        ]
        for feature in FEATURES
    ]
    return [
        "## SDK seams probed at detection",
        "",
        "Detection imports each module and looks up the attribute; a public seam missing from its major",
        "refuses the install (`UnsupportedSdkError`), a private one only removes what depends on it.",
        "",
        *_table(["seam", "major", "module", "attribute", "kind"], rows),
    ]


def _cell(status: TaskStatus, event: TaskEvent) -> str:
    try:
        return _code(next_status(status, event).value)
    except TaskStateError as error:
        if status.is_terminal and event is TaskEvent.CANCEL:
            return f"error {error.jsonrpc_code}"
        return "error"


def _lifecycle_section() -> list[str]:
    rows = [[_code(status.value), *(_cell(status, event) for event in TaskEvent)] for status in TaskStatus]
    diagram = ["```mermaid", "stateDiagram-v2", "    [*] --> working"]
    for (source, event), target in TRANSITIONS.items():
        diagram.append(f"    {source.value} --> {target.value}: {event.value}")
    diagram += [f"    {status.value} --> [*]" for status in TaskStatus if status.is_terminal]
    diagram.append("```")
    return [
        "## Task lifecycle",
        "",
        "Rows are the current status, columns the event; a cell is the next status, or `error`",
        "(`TaskStateError`). Cancelling an ended task is the JSON-RPC error shown (2025-11-25 requires",
        "-32602); under 2026-07-28 the server acknowledges it and leaves the task as it was.",
        "",
        *_table(["status \\ event", *(_code(event.value) for event in TaskEvent)], rows),
        "",
        *diagram,
    ]


_SAMPLE_TIME: Final = datetime(2026, 7, 28, 9, 0, tzinfo=timezone.utc)
_SAMPLE: Final = Task(
    task_id="8f14e45f-ceea-467f-a0e6-c4f5d5c2b1a9",
    status=TaskStatus.WORKING,
    created_at=_SAMPLE_TIME,
    last_updated_at=_SAMPLE_TIME,
    ttl_ms=None,
    poll_interval_ms=500,
    status_message="compiling",
)


def _wire_section() -> list[str]:
    tool_error = {"content": [{"type": "text", "text": "no such target"}], "isError": True}
    completed = _SAMPLE.evolve(status=TaskStatus.COMPLETED, status_message=None, result={"content": []})
    failed = _SAMPLE.evolve(
        status=TaskStatus.FAILED, status_message="boom", error=JsonRpcError(-32603, "boom")
    )
    is_error_rows = [
        [
            "tool result with `isError: true`",
            _code(codec_2025.status_for_tool_result(tool_error).value),
            _code(codec_2026.status_for_tool_result(tool_error).value),
        ]
    ]
    return [
        "## The same task on the wire",
        "",
        "Produced by the codecs from one task (unlimited TTL: written as `null`, never dropped).",
        "",
        *_table(["", "2025-11-25", "2026-07-28"], is_error_rows),
        "",
        "Creating the task (answer to `tools/call`), 2025-11-25:",
        "",
        *_json_block(codec_2025.encode_create_task_result(_SAMPLE)),
        "",
        "2026-07-28:",
        "",
        *_json_block(codec_2026.encode_create_task_result(_SAMPLE)),
        "",
        "Reading it once completed: 2025-11-25 `tasks/get` answers the task alone and the tool result",
        "comes from `tasks/result`; 2026-07-28 `tasks/get` carries it inline:",
        "",
        *_json_block(codec_2026.encode_get_task_result(completed)),
        "",
        "A failed task under 2026-07-28 carries the JSON-RPC error inline:",
        "",
        *_json_block(codec_2026.encode_get_task_result(failed)),
    ]


def render() -> str:
    """The whole page, as committed."""
    lines = [
        "# Support matrix",
        "",
        "<!-- Generated from the code's own tables; do not edit by hand.",
        f"     Regenerate with: {REGENERATE} -->",
        "",
        "Generated by `python -m tools.support_matrix` from `_detect.FEATURES`, `_detect.OPT_INS`,",
        "`_detect.evaluate`, `core._lifecycle.TRANSITIONS` and the two codecs. A test fails when this page",
        "is stale. `python -m mcp_tasks_compat info` shows the same facts for the installed SDK.",
        "",
        *_tested_section(),
        "",
        *_sdk_section(),
        "",
        *_opt_in_section(),
        "",
        *_lifecycle_section(),
        "",
        *_wire_section(),
        "",
        *_seam_section(),
    ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=REGENERATE, description="Write (or check) docs/support-matrix.md.")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="default: %(default)s")
    parser.add_argument("--check", action="store_true", help="exit 1 if the file differs from the code")
    args = parser.parse_args(argv)
    output: Path = args.output
    page = render()
    if args.check:
        current = output.read_text(encoding="utf-8") if output.exists() else ""
        if current != page:
            print(f"{output} is stale; regenerate with: {REGENERATE}", file=sys.stderr)
            return 1
        return 0
    output.write_text(page, encoding="utf-8")
    print(f"wrote {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
