"""A kit session's ``ClientSession`` keywords: the caller's composed with ``session_kwargs()``, and
refused where they would silently drop part of the library's own."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, cast

from .._client_api import session_kwargs
from .._detect import sdk_info
from ..dialects import Dialect
from ..errors import SessionOptionsError

__all__ = ["COMPOSED_SESSION_OPTIONS", "SessionOptionsError", "merged_session_options"]


COMPOSED_SESSION_OPTIONS: Final = ("message_handler", "extensions", "result_claims", "notification_bindings")
"""The ``ClientSession`` keywords ``session_kwargs()`` composes with the caller's own (its parameters)."""


def _kind(value: object) -> object:
    """What identifies a session setting as the library's: its type, or its members' types and keys."""
    if isinstance(value, Mapping):
        return frozenset(cast("Mapping[object, object]", value))
    if isinstance(value, (list, tuple)):
        handlers: list[object] = [getattr(item, "handler", item) for item in cast("Sequence[object]", value)]
        return frozenset(type(handler) for handler in handlers)
    return type(value)


def _is_librarys(value: object, own: object) -> bool:
    """``value`` holds the library's own setting ``own`` (it was spread from ``session_kwargs()``)."""
    kind, own_kind = _kind(value), _kind(own)
    if isinstance(own_kind, frozenset) and isinstance(kind, frozenset):
        return own_kind <= kind
    return kind == own_kind


def merged_session_options(
    session_options: Mapping[str, Any] | None, *, dialect: Dialect | None, bare: bool = False
) -> dict[str, Any]:
    """The ``ClientSession`` keywords of a kit session: the caller's added to ``session_kwargs()``.

    The keywords ``session_kwargs()`` composes (:data:`COMPOSED_SESSION_OPTIONS`) are composed
    through it, every other one is added; options already built on ``session_kwargs()`` are taken
    as they are. Options that spread ``session_kwargs()`` but replace or drop part of it are refused
    with :class:`SessionOptionsError` (the session would lose task support without a word).
    ``bare=True``: the caller's options only, without the library's task plumbing.
    """
    given = dict(session_options or {})
    if bare:
        return given
    own = session_kwargs(dialect=dialect)
    spread = sorted(key for key in own if key in given and _is_librarys(given[key], own[key]))
    if spread:
        lost = sorted(key for key in own if key not in spread)
        if lost:
            replaced = [key for key in lost if key in given]
            raise SessionOptionsError(
                f"session_options holds session_kwargs()'s {spread} but "
                + (f"replaces its {replaced}" if replaced else f"leaves out its {lost}")
                + f": the session would lose task support without a word (installed: mcp "
                f"{sdk_info().mcp_version}, whose session_kwargs() sets {sorted(own)}). fix: give only "
                "your own options (they are added to the library's, and "
                f"{', '.join(COMPOSED_SESSION_OPTIONS)} are composed with its own), or pass them to "
                "session_kwargs(...) and give its whole result; bare=True for a session without "
                "the library's plumbing"
            )
        return given  # built on session_kwargs() already
    composed = {key: given.pop(key) for key in COMPOSED_SESSION_OPTIONS if key in given}
    return {**session_kwargs(dialect=dialect, **composed), **given}
