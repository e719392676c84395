"""The mcp 2.x adapter (both dialects): ``client``, ``server`` and ``app`` facets as modules.

The registry imports each module on first use; the assignments below let pyright check that each
module conforms to its protocol in :mod:`..base`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .. import base
    from . import app, builder, client, server

    _client: base.ClientFacet = client
    _server: base.ServerFacet = server
    _app: base.AppFacet = app
    _builder: base.BuilderFacet = builder
