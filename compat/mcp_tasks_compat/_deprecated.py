"""Names kept one minor after 1.0 as aliases that warn, each naming its replacement.

A public module lists its old names in a table and answers them from its ``__getattr__``; the
warning points at the line that used the name (``stacklevel``), and CHANGELOG.md's "Upgrading to
1.0" lists the same table (``tests/test_public_api.py`` holds both to it).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["REMOVED_IN", "Alias", "answer"]

REMOVED_IN: Final = "1.1"
"""The release that removes every alias below."""


@dataclass(frozen=True)
class Alias:
    """An old public name: what to use instead, and how to get the old value."""

    replacement: str
    value: Callable[[], Any]


def answer(module: str, name: str, aliases: Mapping[str, Alias]) -> Any:
    """The value of the deprecated ``module.name``, after a ``DeprecationWarning`` naming the fix."""
    alias = aliases.get(name)
    if alias is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    warnings.warn(
        f"{module}.{name} is deprecated since 1.0 and is removed in {REMOVED_IN}: use "
        f"{alias.replacement} (CHANGELOG.md, 'Upgrading to 1.0')",
        DeprecationWarning,
        stacklevel=3,
    )
    return alias.value()
