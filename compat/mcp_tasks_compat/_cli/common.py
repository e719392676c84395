"""What every command shares: exit codes, the one-line :class:`CliError`, command-line JSON, result text.

Imports nothing else of the command line, so every other module of :mod:`._cli` can import it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any, Final, cast

__all__ = [
    "CONNECTION_CLOSED",
    "EXIT_CANCELLED",
    "EXIT_OK",
    "EXIT_TOOL_ERROR",
    "EXIT_USAGE",
    "CliError",
    "content_blocks",
    "json_object",
    "one_line",
    "quiet_sdk_logs",
    "result_text",
]

EXIT_OK: Final = 0
EXIT_TOOL_ERROR: Final = 1
"""The tool answered an error result (``isError``), or its task failed."""
EXIT_USAGE: Final = 2
"""Bad command line, a refusal (ours or the server's), or a target that cannot be reached or died."""
EXIT_CANCELLED: Final = 3
"""The call was cancelled (``--cancel-after``, Ctrl-C, or by the server) or timed out."""

CONNECTION_CLOSED: Final = -32000
"""The JSON-RPC code both SDKs use for "Connection closed" under a pending request."""


class CliError(Exception):
    """A failure the command line reports as one line with a chosen exit code."""

    def __init__(self, message: str, exit_code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


def one_line(text: str) -> str:
    """Multi-line messages (refusals list every opt-in) folded into one line."""
    return " ".join(part.strip() for part in text.splitlines() if part.strip())


def json_object(text: str | None, name: str, shape: str) -> dict[str, Any] | None:
    """Parse a command-line JSON object; a one-line ``CliError`` names ``name`` otherwise."""
    if text is None:
        return None
    try:
        value: object = json.loads(text)
    except json.JSONDecodeError as exc:
        where = f"{exc.msg} at line {exc.lineno} column {exc.colno}"
        raise CliError(f"{name} is not valid JSON ({where})") from None
    if not isinstance(value, dict):
        raise CliError(f"{name} must be a JSON object{shape}, not {type(value).__name__}: {text!r}")
    return cast("dict[str, Any]", value)  # JSON object keys are always strings


def content_blocks(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The result's content blocks (wire JSON)."""
    content: object = result.get("content")
    if not isinstance(content, list):
        return []
    return [cast("dict[str, Any]", item) for item in cast("list[object]", content) if isinstance(item, dict)]


def result_text(result: Mapping[str, Any]) -> str:
    """The text blocks of a tool result (wire JSON), one per line."""
    return "\n".join(
        str(item.get("text", "")) for item in content_blocks(result) if item.get("type") == "text"
    )


def quiet_sdk_logs(verbose: bool) -> None:
    """The SDKs log transport failures (and, on mcp 1.23, every HTTP session's end) with tracebacks.

    The command line reports failures in one line instead; ``-v`` shows everything.
    """
    if verbose:
        logging.basicConfig(level=logging.DEBUG, format="%(levelname)s %(name)s: %(message)s")
        return
    for name in ("mcp", "httpx", "httpx2", "httpcore", "uvicorn.error"):
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)
