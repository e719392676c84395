__version__ = "1.0.0"
"""This release of mcp-tasks-compat; the same as the package metadata's version.
Example: ``print(mcp_tasks_compat.__version__)`` prints ``1.0.0``."""
