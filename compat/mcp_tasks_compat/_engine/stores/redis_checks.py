"""What the Redis store checks of a redis-server when it opens: that it is a primary (a replica or
a Sentinel is refused in one line naming where to point the store instead), and whether it keeps
anything on disk (one warning when it does not). A server that will not answer a check (an ACL
forbidding ``ROLE`` or ``CONFIG``, as managed services do) is taken as it is.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, cast

from ...errors import TaskStoreError
from .echo import printable

if TYPE_CHECKING:
    from redis import asyncio as aioredis

from redis.exceptions import ResponseError

__all__ = ["check_server"]

logger = logging.getLogger("mcp_tasks_compat.engine")


async def check_server(client: aioredis.Redis, describe: str) -> None:
    """Refuse a replica or a Sentinel; warn once of a server without persistence."""
    await _refuse_a_replica(client, describe)
    await _warn_without_persistence(client, describe)


async def _refuse_a_replica(client: aioredis.Redis, describe: str) -> None:
    """Refuse a replica (or a Sentinel) at open, in one line naming its primary: every task is a
    write, which a replica refuses (or, made writable, drops at its next sync), so otherwise each
    call would fail with the script's error. A server that will not say its ``ROLE`` (an ACL) is
    taken as it is: a write refused later says so (:meth:`RedisLink.store_error`)."""
    try:
        role = cast("list[object]", await client.execute_command("ROLE"))  # pyright: ignore[reportUnknownMemberType]
    except ResponseError:
        return
    kind = str(role[0]) if role else ""
    if kind in ("slave", "replica"):
        primary = printable(f"{role[1]}:{role[2]}") if len(role) > 2 else "its primary"
        raise TaskStoreError(
            f"the Redis task store {describe} is a replica of {primary}: a replica refuses the store's"
            " writes (or drops them at its next sync); point the store at that primary instead"
        )
    if kind == "sentinel":
        raise TaskStoreError(
            f"the Redis task store {describe} is a Redis Sentinel, which keeps no data: point the store"
            " at the primary it names (SENTINEL GET-MASTER-ADDR-BY-NAME)"
        )


async def _warn_without_persistence(client: aioredis.Redis, describe: str) -> None:
    """One warning at open when redis-server keeps nothing on disk (``appendonly no`` and no
    ``save`` snapshot): a restart or crash of it then loses every task, finished outcomes too. A
    server that will not say its ``CONFIG`` (an ACL, a renamed command: managed services) is taken
    as it is."""
    try:
        answer = cast(
            "dict[str, str]",
            await client.config_get("appendonly"),  # pyright: ignore[reportUnknownMemberType]
        )
        answer |= cast("dict[str, str]", await client.config_get("save"))  # pyright: ignore[reportUnknownMemberType]
    except ResponseError:
        return
    appendonly, save = answer.get("appendonly"), answer.get("save")
    if appendonly == "no" and save is not None and not save.strip():
        logger.warning(
            "the Redis task store %s keeps its data only in memory (appendonly no, save ''): a restart"
            " or crash of redis-server loses every task it holds (running and queued tasks, and finished"
            " results not yet fetched); turn on AOF (appendonly yes, appendfsync everysec) or RDB"
            " snapshots (save) in its redis.conf",
            describe,
        )
