"""Adapters for agent frameworks that offer no public hook for a task-running session.

Each module here is imported only by the code that uses it, and imports its framework only when
one of its names is first used: the frameworks are never dependencies of this library, and a
missing one is refused with an ``ImportError`` that says what to install. Frameworks that do have
a public hook need no module here: docs/integrations.md gives their recipes.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__: list[str] = []  # the helper below is for the modules here, not a public name


def require_framework(
    module: str, distribution: str, *, adapter: str, install: str | None = None, why: str = ""
) -> ModuleType:
    """Import ``module`` of the framework ``distribution``, or refuse loudly, naming the fix.

    ``install`` is what to ``pip install`` (default: ``distribution``); ``why`` (a sentence,
    optional) says why that and not the bare name.
    """
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise ImportError(
            f"{adapter} adapts {distribution}, which is not installed ({module} cannot be imported: "
            f"{error}); install it with `pip install {install or distribution}`"
            + (f" ({why})" if why else ""),
            name=module,
        ) from error
