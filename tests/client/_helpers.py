"""Small readers that hide the field-name differences of the two SDKs' ``CallToolResult``."""

from __future__ import annotations

import itertools
from typing import Any


def text_of(result: Any) -> str:
    return "".join(block.text for block in result.content if getattr(block, "type", None) == "text")


def is_error(result: Any) -> bool:
    value = getattr(result, "is_error", None)
    if value is None:
        value = getattr(result, "isError", None)
    return bool(value)


def gaps(times: list[float]) -> list[float]:
    return [later - earlier for earlier, later in itertools.pairwise(times)]
