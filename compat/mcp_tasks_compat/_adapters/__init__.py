"""SDK adapters: the only modules that import ``mcp``. Imported lazily, after detection."""
