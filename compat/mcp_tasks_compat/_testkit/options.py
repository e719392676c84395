"""A kit session's ``ClientSession`` keywords: the rule is the client openers' own
(:func:`mcp_tasks_compat._client_api.merged_session_options`), re-exported here for the kit."""

from __future__ import annotations

from .._client_api import COMPOSED_SESSION_OPTIONS, merged_session_options
from ..errors import SessionOptionsError

__all__ = ["COMPOSED_SESSION_OPTIONS", "SessionOptionsError", "merged_session_options"]
