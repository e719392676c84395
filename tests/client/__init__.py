"""Tests of the public client API (mcp_tasks_compat.client) against real SDK sessions of either major."""
