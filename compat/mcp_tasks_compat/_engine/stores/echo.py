"""How a store's refusal repeats what it was given: a path or a URL, made safe to print.

A refused ``--store`` is shown back to whoever typed it, in a terminal or a log. Raw, a control
character (an escape sequence, a line break) would act on that terminal or split the one line,
and a bidirectional override (U+202E) would show the path in another order than SQLite reads it.
:func:`printable` writes each such character as its Python escape instead (``\\x1b``, ``\\n``,
``\\u202e``), so the message shows exactly what was asked, on one line. :func:`redacted` leaves a
URL's password out. Standard library only: the Redis store's messages use them too, and the
refusal of a Redis URL when redis-py is not installed.
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import urlsplit, urlunsplit

__all__ = ["printable", "redacted", "shown_url"]

_USER_INFO: Final = re.compile(r"(//[^/@:]*):[^/@]*@")
"""``//user:password@`` in a URL that ``urlsplit`` cannot take apart (a bad port, say)."""


def printable(text: str) -> str:
    """``text`` with every character Python does not print (``str.isprintable``: control and
    format characters, line and paragraph separators, lone surrogates) as its escape; the rest,
    backslashes included, as it is."""
    if text.isprintable():
        return text
    return "".join(
        char if char.isprintable() else char.encode("unicode_escape").decode("ascii") for char in text
    )


def redacted(url: str) -> str:
    """The URL without its password, for messages."""
    try:
        parts = urlsplit(url)
        password, host, port = parts.password, parts.hostname or "", parts.port
    except ValueError:  # not a URL urlsplit reads (an out-of-range port, a bad IPv6 host)
        return _USER_INFO.sub(r"\1:***@", url)
    if password is None:
        return url
    user = parts.username or ""
    at_port = f":{port}" if port is not None else ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}{at_port}"))


def shown_url(url: str) -> str:
    """A store URL as a message repeats it: without its password, every character printable."""
    return printable(redacted(url))
