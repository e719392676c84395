"""The testing kit (``mcp_tasks_compat.testing``): helpers, fixtures, the plugin as downstream sees it."""
