"""The adapter registry: the one place that maps the installed SDK major to its adapter.

Rules of this layer:

* Only the modules under ``_adapters/`` import ``mcp``; only this module compares SDK majors.
  Everything above it (``client.py``, ``server.py``, the command line, the testing kit) asks
  :func:`get_adapter` and receives facets typed by :mod:`.base`.
* Importing this package imports no ``mcp`` and no major's subpackage: ``v1``/``v2`` are imported
  on the first :func:`get_adapter` call, after detection chose one, and each facet only when it
  is first used (a client never loads the SDK's server modules).
* A major's subpackage imports the SDK-free layers below it (``core``, ``_engine``, ``_client``,
  ``dialects``, ``errors``, ``_detect``), never ``client.py``, ``server.py`` or ``testing.py``.

Like anyio's backend lookup: a static table, a cache, a typed answer.
"""

from __future__ import annotations

import importlib
from functools import cached_property
from typing import TYPE_CHECKING, Final, cast

from .._detect import sdk_info

if TYPE_CHECKING:
    from .base import AppFacet, BuilderFacet, ClientFacet, ServerFacet

__all__ = ["ADAPTERS", "SdkAdapter", "get_adapter"]

ADAPTERS: Final = {1: "v1", 2: "v2"}
"""SDK major -> the subpackage of this package that adapts it."""


class SdkAdapter:
    """One major's adapter: its client, server and app facets, each imported on first use."""

    def __init__(self, major: int) -> None:
        self.major = major
        self.package = f"{__name__}.{ADAPTERS[major]}"

    def __repr__(self) -> str:
        return f"SdkAdapter(major={self.major}, package={self.package!r})"

    @cached_property
    def client(self) -> ClientFacet:
        return cast("ClientFacet", importlib.import_module(f"{self.package}.client"))

    @cached_property
    def server(self) -> ServerFacet:
        return cast("ServerFacet", importlib.import_module(f"{self.package}.server"))

    @cached_property
    def builder(self) -> BuilderFacet:
        return cast("BuilderFacet", importlib.import_module(f"{self.package}.builder"))

    @cached_property
    def app(self) -> AppFacet:
        return cast("AppFacet", importlib.import_module(f"{self.package}.app"))


_loaded: dict[int, SdkAdapter] = {}


def get_adapter() -> SdkAdapter:
    """The adapter of the installed SDK (detection refuses an unsupported install first)."""
    major = sdk_info().major
    adapter = _loaded.get(major)
    if adapter is None:
        adapter = _loaded[major] = SdkAdapter(major)
    return adapter
