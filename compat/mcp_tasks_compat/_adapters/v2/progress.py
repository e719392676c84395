"""mcp 2.x servers: a ``notifications/progress`` for the request being served (a tool body's, or
a waiting plain call's heartbeat, ``_server/handoff.py``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from .runtime import current_request

__all__ = ["progress_sender", "send_progress"]


def _progress_token(ctx: Any) -> object:
    params: object = ctx.params
    if isinstance(params, Mapping):
        meta: object = cast("Mapping[str, object]", params).get("_meta")
        if isinstance(meta, Mapping):
            token = cast("Mapping[str, object]", meta).get("progressToken")
            if token is not None:
                return token
    meta = ctx.meta
    return cast("Mapping[str, object]", meta).get("progress_token") if isinstance(meta, Mapping) else None


async def send_progress(progress: float, total: float | None, message: str | None) -> bool:
    """A ``notifications/progress`` for the current request, if it sent a progress token."""
    ctx = current_request()
    if ctx is None or _progress_token(ctx) is None:
        return False
    await ctx.session.report_progress(progress, total, message)
    return True


def progress_sender(ctx: Any) -> Any:
    """:func:`send_progress` for a request that sent a progress token, else ``None``: a waiting
    plain call then starts no heartbeat (one per quick call, measured by the bench's section 10)."""
    return send_progress if _progress_token(ctx) is not None else None
