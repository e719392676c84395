"""A task store from a URL: what ``ServerTasks(store=...)`` and ``--store`` accept.

``memory:`` (one process), ``sqlite:///relative.db`` or ``sqlite:////abs/path.db`` (SQLAlchemy's
form: three slashes, then the path), ``redis://host:port/db`` or ``rediss://`` and
``postgresql://user:password@host:port/db`` or ``postgres://`` (several replicas; the Redis and
PostgreSQL clients are optional extras, so their modules are imported only when asked for).
"""

from __future__ import annotations

import importlib
from typing import Final, cast

from ...errors import TaskStoreError
from .contract import TaskStore
from .echo import redacted, shown_url
from .memory import InMemoryTaskStore
from .sqlite import SqliteTaskStore

__all__ = ["ACCEPTED_FORMS", "sqlite_path", "store_from_url"]

ACCEPTED_FORMS: Final = (
    "memory:",
    "sqlite:///relative/path.db",
    "sqlite:////absolute/path.db",
    "redis://host:port/db",
    "rediss://host:port/db",
    "postgresql://user:password@host:port/db",
    "postgres://user:password@host:port/db",
)

_SQLITE: Final = "sqlite:///"
_REDIS_MODULE: Final = "mcp_tasks_compat._engine.stores.redis"
_POSTGRES_MODULE: Final = "mcp_tasks_compat._engine.stores.postgres"


def sqlite_path(url: str) -> str | None:
    """The file a ``sqlite:///`` URL names (``None`` for another kind of URL); ``ValueError`` for a
    sqlite URL without a path, or with a query (``?mode=ro``) or a fragment (``#...``): SQLite
    would open (or create) a file of that longer name, not the one meant."""
    if not url.startswith(_SQLITE):
        return None
    path = url[len(_SQLITE) :]
    if not path:
        raise ValueError(f"{url!r}: a sqlite URL is sqlite:/// and a file path, with no query or fragment")
    marks = [index for index in (path.find("?"), path.find("#")) if index >= 0]
    if marks:
        found = path[min(marks) :]
        part = "query" if found[0] == "?" else "fragment"
        raise ValueError(
            f"{url!r}: a sqlite URL is sqlite:/// and a file path, with no query or fragment; this one"
            f" has the {part} {found!r}: drop it (a file whose name holds {found[0]!r} needs another name)"
        )
    return path


def store_from_url(url: str) -> TaskStore:
    """The (unopened) store ``url`` names; ``ValueError`` for a form that is not accepted."""
    if url == "memory:":
        return InMemoryTaskStore()
    path = sqlite_path(url)
    if path is not None:
        return SqliteTaskStore(path)
    if url.startswith(("redis://", "rediss://")):
        return _redis_store(url)
    if url.startswith(("postgresql://", "postgres://")):
        return _postgres_store(url)
    raise ValueError(f"not a task store URL: {redacted(url)!r}; accepted forms: {', '.join(ACCEPTED_FORMS)}")


def _redis_store(url: str) -> TaskStore:
    try:
        module = importlib.import_module(_REDIS_MODULE)
    except ModuleNotFoundError as exc:
        raise TaskStoreError(
            f"{shown_url(url)}: the Redis store needs the redis extra (missing module {exc.name!r}):"
            " pip install 'mcp-tasks-compat[redis]'"
        ) from None
    return cast("TaskStore", module.RedisTaskStore(url))


def _postgres_store(url: str) -> TaskStore:
    try:
        module = importlib.import_module(_POSTGRES_MODULE)
    except ModuleNotFoundError as exc:
        raise TaskStoreError(
            f"{shown_url(url)}: the PostgreSQL store needs the postgres extra (missing module {exc.name!r}):"
            " pip install 'mcp-tasks-compat[postgres]'"
        ) from None
    return cast("TaskStore", module.PostgresTaskStore(url))
