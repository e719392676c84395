"""A scripted "model" for the plain hand-off: it reads only the TEXT of tool results, as a language
model in a host without tasks would, and calls what the text tells it to.

It knows nothing of this library: not the structured content, not the wording. It knows what a
host shows a model: the listed tools and their input schemas. From prose it takes a tool named in
backticks (the first one it can fill the arguments of), a task id (the longest id-like token), and,
when the text asks a question with a JSON schema, an answer built from that schema's fields (what
the "user" told it, by field name). Its run ends when a result names no tool it can call: that text
is the tool's result.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["TextModel", "Transcript"]

_NAMED = re.compile(r"`([A-Za-z_][\w.-]*)`")
_ID_LIKE = re.compile(r"[A-Za-z0-9_-]{20,}")
MAX_CALLS = 30
"""A bound on one run: a text that keeps naming tools is a failure, not a loop."""


@dataclass
class Transcript:
    """What the model did: each call (tool, arguments) and the text it read back."""

    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list[tuple[str, dict[str, Any]]])
    texts: list[str] = field(default_factory=list[str])

    @property
    def tools(self) -> list[str]:
        return [tool for tool, _ in self.calls]


@dataclass
class TextModel:
    """``schemas``: each listed tool's input schema; ``user``: the answers to questions, by field."""

    schemas: Mapping[str, Mapping[str, Any]]
    user: Mapping[str, Any] = field(default_factory=dict[str, Any])

    async def run(self, session: Any, tool: str, arguments: dict[str, Any]) -> tuple[str, Transcript]:
        """Call ``tool``, then whatever each result's text says, until a text names nothing to call."""
        transcript = Transcript()
        call: tuple[str, dict[str, Any]] | None = (tool, arguments)
        while call is not None:
            if len(transcript.calls) == MAX_CALLS:
                raise AssertionError(f"the model made {MAX_CALLS} calls without a result: {transcript}")
            transcript.calls.append(call)
            result = await session.call_tool(*call)
            text = "".join(getattr(block, "text", "") for block in result.content)
            transcript.texts.append(text)
            call = self.next_call(text)
        return transcript.texts[-1], transcript

    def next_call(self, text: str) -> tuple[str, dict[str, Any]] | None:
        """The first tool the text names whose required arguments the text (and the user) give."""
        for name in _NAMED.findall(text):
            schema = self.schemas.get(name)
            if schema is None:
                continue
            arguments = self._arguments(schema, text)
            if arguments is not None:
                return name, arguments
        return None

    def _arguments(self, schema: Mapping[str, Any], text: str) -> dict[str, Any] | None:
        properties: Mapping[str, Any] = schema.get("properties") or {}
        arguments: dict[str, Any] = {}
        for name in schema.get("required") or list(properties):
            kind = (properties.get(name) or {}).get("type")
            if kind == "string" and name.lower().endswith("id"):
                ids = _ID_LIKE.findall(text)
                if not ids:
                    return None
                arguments[name] = max(ids, key=len)
            elif kind in ("object", None):
                form = _form_in(text)
                if form is None:
                    return None
                fields = form.get("properties", {})
                arguments[name] = {key: self.user[key] for key in fields if key in self.user}
            else:
                return None
        return arguments


def _form_in(text: str) -> Mapping[str, Any] | None:
    """The last JSON object with ``properties`` written in the text (a question's schema), if any."""
    decoder = json.JSONDecoder()
    found: Mapping[str, Any] | None = None
    for start in (index for index, char in enumerate(text) if char == "{"):
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if isinstance(value, dict) and "properties" in value:
            found = value
    return found
