__version__ = "1.0.0"
"""This release of mcp-tasks-compat (``mcp_tasks_compat.__version__``); the same as the package
metadata's version."""
