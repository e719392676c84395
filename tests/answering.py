"""An elicitation callback the deploy and interop tests share (a session's ``elicitation_callback``)."""

from __future__ import annotations

from typing import Any


class Answering:
    """An elicitation callback: answers every question with ``{"answer": "Ada"}``."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(self, context: Any, params: Any) -> Any:
        import mcp.types as types

        self.asked.append(params.message)
        return types.ElicitResult(action="accept", content={"answer": "Ada"})
