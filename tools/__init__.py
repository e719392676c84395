"""Repository tools, run from the repository root (``python -m tools.support_matrix``); not in the wheel."""
