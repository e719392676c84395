"""Answering a tool's questions (elicitation): a fixed ``--answer``, the terminal, or a refusal."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, cast

import anyio

from .common import json_object
from .status import StatusLine

__all__ = ["DEMO_ANSWER", "NO_ANSWER_HINT", "Answers", "parse_answer", "stdin_is_a_terminal"]


DEMO_ANSWER: Final[Mapping[str, Any]] = {"answer": "Ada"}
"""What ``demo`` answers the ``ask`` tool with when stdin is not a terminal."""
NO_ANSWER_HINT: Final = (
    'pass --answer JSON (the form\'s content, e.g. \'{"answer": "Ada"}\'), or run on a terminal'
)


def _read_line(prompt: str) -> str | None:
    """One line from stdin after ``prompt`` on stderr; ``None`` at end of input."""
    sys.stderr.write(prompt)
    sys.stderr.flush()
    line = sys.stdin.readline()
    return None if line == "" else line.rstrip("\r\n")


def _field_value(text: str, kind: object) -> object:
    """A typed form value from what was typed (ValueError when it does not fit the field's type)."""
    if kind == "integer":
        return int(text)
    if kind == "number":
        return float(text)
    if kind == "boolean":
        lowered = text.strip().lower()
        if lowered in ("y", "yes", "true", "1"):
            return True
        if lowered in ("n", "no", "false", "0"):
            return False
        raise ValueError("answer yes or no")
    return text


@dataclass
class Answers:
    """How ``call`` and ``demo`` answer a tool's questions: a fixed answer, the terminal, or not at all.

    A question that gets no answer is refused (the SDK's session then answers the server with an
    error and the task is cancelled); ``refused`` keeps the questions, so the command can say why.
    """

    fixed: Mapping[str, Any] | None = None
    interactive: bool = False
    display: StatusLine | None = None
    announce: Callable[[str], None] | None = None
    asked: list[str] = field(default_factory=lambda: list[str]())
    refused: list[str] = field(default_factory=lambda: list[str]())
    _lock: anyio.Lock = field(default_factory=anyio.Lock)

    async def __call__(self, message: str, schema: Mapping[str, Any]) -> Mapping[str, Any] | str:
        self.asked.append(message)
        if self.fixed is not None:
            if self.announce is not None:
                self.announce(f"the tool asks {message!r}; answering {json.dumps(dict(self.fixed))}")
            return dict(self.fixed)
        if self.interactive:
            async with self._lock:  # one question at a time on the terminal
                return await self._prompt(message, schema)
        self.refused.append(message)
        return f"no answer to {message!r}: {NO_ANSWER_HINT}"

    async def _prompt(self, message: str, schema: Mapping[str, Any]) -> Mapping[str, Any] | str:
        if self.display is not None:
            self.display.hold()
        try:
            sys.stderr.write(f"the tool asks: {message}\n")
            properties: object = schema.get("properties")
            empty: Mapping[str, Any] = {}
            fields = cast("Mapping[str, Any]", properties) if isinstance(properties, Mapping) else empty
            required: object = schema.get("required")
            needed = set(cast("list[str]", required)) if isinstance(required, list) else set[str]()
            content: dict[str, Any] = {}
            for name, spec in fields.items():
                info = cast("Mapping[str, Any]", spec) if isinstance(spec, Mapping) else empty
                kind: object = info.get("type", "string")
                label = str(info.get("title") or name)
                while True:
                    text = await anyio.to_thread.run_sync(_read_line, f"  {label} ({kind}): ")
                    if text is None:
                        self.refused.append(message)
                        return f"no answer to {message!r}: the terminal's input ended"
                    if text == "" and name not in needed:
                        break
                    try:
                        content[name] = _field_value(text, kind)
                    except ValueError as error:
                        sys.stderr.write(f"  not a valid {kind}: {error}\n")
                        continue
                    break
            return content
        finally:
            if self.display is not None:
                self.display.release()


def parse_answer(text: str | None) -> dict[str, Any] | None:
    """``--answer JSON``: the elicitation result's content, a JSON object."""
    return json_object(text, "--answer", " (the form's content)")


def stdin_is_a_terminal() -> bool:
    isatty: Callable[[], bool] | None = getattr(sys.stdin, "isatty", None)
    return bool(isatty and isatty())
